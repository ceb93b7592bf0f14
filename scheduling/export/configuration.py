"""One entry point for a scheduler's configuration files, whatever produced them: ``aws-batch`` (the
planner's own export bundle or its documents, or live ``aws batch describe-*`` outputs) and ``kueue``
(the planner's export, or live ``kubectl get ... -o yaml`` objects with an optional Kueue
Configuration). Used by ``python -m scheduling import-policy``, the API and the pages alike."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from scheduling.errors import InputError
from scheduling.export.aws_batch import from_aws_batch
from scheduling.export.aws_batch_describe import (
    from_aws_batch_describe,
    is_describe_output,
    read_json_documents,
)
from scheduling.export.kueue_cluster import from_kueue_cluster, load_yaml_documents

FORMATS = {
    "aws-batch": "AWS Batch: describe-service-environments, describe-scheduling-policies, list-quota-shares "
    "and describe-job-queues outputs, or the planner's export bundle",
    "kueue": "Kueue: kubectl get clusterqueues,cohorts,resourceflavors,workloadpriorityclasses -o yaml "
    "(v1beta1 or v1beta2), optionally with the Kueue Configuration; or the planner's export",
}


def read_configuration_files(
    format: str, files: Iterable[tuple[str, bytes | str]], *, job_queue: str | None = None
) -> dict[str, Any]:
    """The policy dict of the configuration ``files`` (``(name, content)``) in ``format``; raises
    InputError naming the file, the object and the field."""
    files = list(files)
    if not files:
        raise InputError("give at least one configuration file", field="file")
    if format == "aws-batch":
        documents = read_json_documents(files)
        values = [document for _, document in documents]
        if is_describe_output(values):
            return from_aws_batch_describe(documents, job_queue=job_queue)
        if len(values) == 1:
            return from_aws_batch(values[0])
        return from_aws_batch(dict(documents))
    if format == "kueue":
        return from_kueue_cluster(load_yaml_documents(files))
    raise InputError(f"{format!r} is not one of {', '.join(FORMATS)}", field="format")
