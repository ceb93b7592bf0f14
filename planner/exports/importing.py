"""Store a policy read from AWS Batch documents or Kueue YAML: on an existing pool whose capacity it
matches, or on a new pool with the imported capacity, through ``Policy.create_from_dict`` (the path the
demo loader and the quota-table import use)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.capacity.models import InstanceType, Policy, Pool
from scheduling.errors import InputError
from scheduling.export import from_aws_batch
from scheduling.export.aws_batch_describe import from_aws_batch_describe, is_describe_output
from scheduling.export.configuration import FORMATS, read_configuration_files

__all__ = ["FORMATS", "read_configuration", "read_configuration_files", "store_imported_policy"]


def read_configuration(kind: str, source: Any, *, job_queue: str | None = None) -> dict[str, Any]:
    """The policy dict of an AWS Batch bundle or describe outputs (a JSON object or list) or of Kueue
    YAML text (the planner's export or live objects, v1beta1 or v1beta2, a Configuration among them)."""
    if kind == "aws-batch":
        documents = source if isinstance(source, list) else [source]
        if is_describe_output(documents):
            return from_aws_batch_describe(
                [(f"bundle[{i}]", d) for i, d in enumerate(documents)], job_queue=job_queue
            )
        return from_aws_batch(source)
    return read_configuration_files(kind, [("yaml", source)])


@transaction.atomic
def store_imported_policy(data: Mapping[str, Any], *, pool_name: str, name: str | None = None) -> Policy:
    """A new policy from an imported policy dict, on pool ``pool_name`` (created when missing).

    Raises InputError (field ``name``, ``pool`` or ``instance_types``) when it cannot be stored as it is.
    """
    data = dict(data)
    name = name or data["name"]
    if Policy.objects.filter(name=name).exists():
        raise InputError(
            f"a policy named {name!r} already exists: give the import another name", field="name"
        )
    notes = _check_instance_types(data)
    if notes:
        data["description"] = " ".join([str(data.get("description", "")), *notes]).strip()
    pool = Pool.objects.filter(name=pool_name).first()
    if pool is None:
        for type_name, spec in data["instance_types"].items():
            InstanceType.objects.get_or_create(
                name=type_name, defaults={"gpus": spec["gpus"], "hourly_price": spec["hourly_price"]}
            )
        pool = Pool.objects.create(name=pool_name, description=f"Created by the import of {name}.")
        pool.set_capacity(data["capacity"])
    else:
        have = {t: n for t, n in pool.capacity_dict().items() if n}
        want = {t: n for t, n in data["capacity"].items() if n}
        if have != want:
            raise InputError(
                f"pool {pool_name} has {_counts(have)} but the imported configuration has {_counts(want)}: "
                "import into a new pool, or change the pool first",
                field="pool",
            )
    try:
        return Policy.create_from_dict(data, pool=pool, name=name)
    except ValidationError as error:
        raise InputError(" ".join(error.messages), field="policy") from None


def _check_instance_types(data: Mapping[str, Any]) -> list[str]:
    """An instance type the planner knows keeps its GPUs (an import saying otherwise is refused) and
    its price (the import's price is named in the returned notes)."""
    notes = []
    known = {t.name: t for t in InstanceType.objects.filter(name__in=list(data["instance_types"]))}
    for type_name, spec in data["instance_types"].items():
        existing = known.get(type_name)
        if existing is not None and float(existing.gpus) != float(spec["gpus"]):
            raise InputError(
                f"{type_name} has {existing.gpus:g} GPUs per instance in the planner, "
                f"{spec['gpus']:g} in the imported configuration",
                field=f"instance_types.{type_name}.gpus",
            )
        if existing is not None and float(existing.hourly_price) != float(spec["hourly_price"]):
            notes.append(
                f"{type_name} keeps the planner's hourly price {existing.hourly_price:g} $ "
                f"(the import said {spec['hourly_price']:g} $)."
            )
    return notes


def _counts(capacity: Mapping[str, int]) -> str:
    return ", ".join(f"{n} x {t}" for t, n in sorted(capacity.items())) or "no capacity"
