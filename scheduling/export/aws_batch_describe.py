"""A live AWS Batch configuration into a policy: the JSON that ``aws batch describe-service-environments``,
``describe-scheduling-policies``, ``list-quota-shares`` (or ``describe-quota-share``, one share at a time)
and ``describe-job-queues`` print, given together in any order (one file each, or one file of them
concatenated). The describe outputs are turned into the documents ``from_aws_batch`` reads, so both
imports share one reading of each knob; what the planner does not model is named in the description.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduling.errors import InputError
from scheduling.export.aws_batch import SERVICE_TYPE, TAG_GPUS, from_aws_batch
from scheduling.nesting import check_json_nesting
from scheduling.traces.fields import TraceSource
from scheduling.traces.json_records import iter_json_records

# What each describe call prints: its list key.
LIST_KEYS = {
    "serviceEnvironments": "describe-service-environments",
    "schedulingPolicies": "describe-scheduling-policies",
    "quotaShares": "list-quota-shares",
    "jobQueues": "describe-job-queues",
}
# Outputs of other calls, refused with their name.
OTHER_OUTPUTS = {
    "computeEnvironments": "describe-compute-environments (compute environments are not quota-managed: "
    "quota shares live on a SAGEMAKER_TRAINING service environment)",
    "jobDefinitions": "describe-job-definitions",
    "jobs": "describe-jobs",
    "jobSummaryList": "list-jobs or list-service-jobs (a job history: upload it as a trace)",
    "jobId": "describe-service-job (a job history: upload it as a trace)",
}


# GPUs per instance of SageMaker training instance types (AWS "Amazon SageMaker pricing" and instance
# pages), used when the service environment has no planner:gpus:<type> tag. A type not listed is taken
# as 1 GPU per instance, and the description says to check it.
KNOWN_GPUS = {
    "ml.p3.2xlarge": 1, "ml.p3.8xlarge": 4, "ml.p3.16xlarge": 8, "ml.p3dn.24xlarge": 8,
    "ml.p4d.24xlarge": 8, "ml.p4de.24xlarge": 8, "ml.p5.48xlarge": 8, "ml.p5e.48xlarge": 8,
    "ml.p5en.48xlarge": 8, "ml.p6-b200.48xlarge": 8,
    "ml.g4dn.xlarge": 1, "ml.g4dn.2xlarge": 1, "ml.g4dn.4xlarge": 1, "ml.g4dn.8xlarge": 1,
    "ml.g4dn.16xlarge": 1, "ml.g4dn.12xlarge": 4,
    "ml.g5.xlarge": 1, "ml.g5.2xlarge": 1, "ml.g5.4xlarge": 1, "ml.g5.8xlarge": 1, "ml.g5.16xlarge": 1,
    "ml.g5.12xlarge": 4, "ml.g5.24xlarge": 4, "ml.g5.48xlarge": 8,
    "ml.g6.xlarge": 1, "ml.g6.2xlarge": 1, "ml.g6.4xlarge": 1, "ml.g6.8xlarge": 1, "ml.g6.16xlarge": 1,
    "ml.g6.12xlarge": 4, "ml.g6.24xlarge": 4, "ml.g6.48xlarge": 8,
    "ml.g6e.xlarge": 1, "ml.g6e.2xlarge": 1, "ml.g6e.12xlarge": 4, "ml.g6e.48xlarge": 8,
}  # fmt: skip


def is_describe_output(documents: Iterable[Any]) -> bool:
    """Whether ``documents`` are describe outputs (rather than the planner's own export bundle); the
    outputs of other aws batch calls count, so that they are refused by name."""
    keys = set(LIST_KEYS) | set(OTHER_OUTPUTS)
    return any(isinstance(d, Mapping) and (set(d) & keys) for d in documents)


def read_json_documents(files: Iterable[tuple[str, bytes | str]]) -> list[tuple[str, Any]]:
    """Every JSON document of the given files ``(name, content)``, concatenated or one per file, each
    labelled ``name`` or ``name #2`` for messages."""
    out = []
    for name, content in files:
        data = content.encode() if isinstance(content, str) else content
        check_json_nesting(data, field=name)  # before the parser, which recurses per level
        source = TraceSource(io.BytesIO(data), name=name)
        try:
            records = list(iter_json_records(source))
        except InputError as error:
            raise InputError(error.reason, field=name) from None
        for record in records:
            out.append((name if record.number == 1 else f"{name} #{record.number}", record.value))
    if not out:
        raise InputError("no JSON documents", field="file")
    return out


def from_aws_batch_describe(
    documents: Iterable[tuple[str, Any]], *, job_queue: str | None = None
) -> dict[str, Any]:
    """The policy dict of live describe outputs ``(label, JSON object)``. With several SAGEMAKER_TRAINING
    job queues, ``job_queue`` says which one (its quota shares and its service environment are read).
    Raises InputError naming the document and the field."""
    outputs = _DescribeOutputs.sort(documents)
    queue_label, queue = _job_queue(outputs.queues, job_queue)
    environment_label, environment = _service_environment(outputs.environments, queue_label, queue)
    notes: list[str] = []
    # the documents of the planner's own export bundle, which from_aws_batch reads
    bundle: dict[str, Any] = {environment_label: _environment_document(environment)}
    if environment.get("state", "ENABLED") != "ENABLED":
        notes.append(f"The service environment {environment.get('serviceEnvironmentName')} is DISABLED.")
    policy = _scheduling_policy(outputs.policies, queue_label, queue)
    if policy is not None:
        policy_label, policy_document = policy
        bundle[policy_label] = {
            k: policy_document[k]
            for k in ("name", "quotaSharePolicy", "fairsharePolicy", "tags")
            if k in policy_document
        }
    queue_name = None
    limit: dict[str, Any] = {}
    if queue is not None:
        queue_name = queue.get("jobQueueName")
        bundle[queue_label] = {
            "jobQueueName": queue_name,
            "jobQueueType": queue.get("jobQueueType", SERVICE_TYPE),
        }
        limit, limit_notes = runnable_time_limit(queue_label, queue)
        notes.extend(limit_notes)
    mine = _shares_of(outputs.shares, queue)
    if not mine:
        raise InputError(
            "no quota share of this job queue: add the output of aws batch list-quota-shares --job-queue ...",
            field="quotaShares",
        )
    for label, share in mine:
        bundle[label] = _share_document(share, queue_name)
        if share.get("state", "ENABLED") != "ENABLED":
            notes.append(
                f"Quota share {share.get('quotaShareName')} is DISABLED in AWS: imported as configured."
            )
    data = from_aws_batch(bundle)
    data.update(limit)
    _known_gpus(data, bundle[environment_label]["tags"])
    data["description"] = " ".join([data.get("description", ""), *notes]).strip()
    return data


@dataclass
class _DescribeOutputs:
    """The objects of the describe outputs by kind, each labelled ``file.listKey[i]`` for messages."""

    environments: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    policies: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    shares: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)
    queues: list[tuple[str, Mapping[str, Any]]] = field(default_factory=list)

    @classmethod
    def sort(cls, documents: Iterable[tuple[str, Any]]) -> _DescribeOutputs:
        outputs = cls()
        for label, document in documents:
            if not isinstance(document, Mapping):
                raise InputError(
                    "must be a JSON object (the output of an aws batch describe call)", field=label
                )
            if "quotaShareName" in document:  # describe-quota-share prints one share, unwrapped
                outputs.shares.append((label, document))
                continue
            if not outputs._take_lists(label, document):
                _refuse_output(label, document)
        return outputs

    def _take_lists(self, label: str, document: Mapping[str, Any]) -> bool:
        """Add the objects of every describe list the document holds; whether it held one."""
        found = False
        for key, target in (
            ("serviceEnvironments", self.environments),
            ("schedulingPolicies", self.policies),
            ("quotaShares", self.shares),
            ("jobQueues", self.queues),
        ):
            if key in document:
                items = document[key]
                if not isinstance(items, list):
                    raise InputError("must be a list", field=f"{label}.{key}")
                for i, item in enumerate(items):
                    if not isinstance(item, Mapping):
                        raise InputError("must be an object", field=f"{label}.{key}[{i}]")
                    target.append((f"{label}.{key}[{i}]", item))
                found = True
        return found


def _refuse_output(label: str, document: Mapping[str, Any]) -> None:
    """A document that is no describe output: named by the call that printed it, when known."""
    other = next((key for key in OTHER_OUTPUTS if key in document), None)
    if other is not None:
        raise InputError(f"this is the output of aws batch {OTHER_OUTPUTS[other]}", field=f"{label}.{other}")
    raise InputError(
        "not an AWS Batch describe output "
        "(serviceEnvironments, schedulingPolicies, quotaShares or jobQueues)",
        field=label,
    )


def _environment_document(environment: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "serviceEnvironmentName": environment.get("serviceEnvironmentName"),
        "serviceEnvironmentType": environment.get("serviceEnvironmentType", SERVICE_TYPE),
        "capacityLimits": environment.get("capacityLimits"),
        "tags": environment.get("tags") or {},
    }


def _share_document(share: Mapping[str, Any], queue_name: str | None) -> dict[str, Any]:
    """A quota share as the create-quota-share input the export writes, on ``queue_name``."""
    document = {
        "quotaShareName": share.get("quotaShareName"),
        "capacityLimits": share.get("capacityLimits"),
        "resourceSharingConfiguration": share.get("resourceSharingConfiguration"),
        "preemptionConfiguration": share.get("preemptionConfiguration"),
        "tags": share.get("tags") or {},
    }
    if queue_name is not None:
        document["jobQueue"] = queue_name
    return document


def _known_gpus(data: dict[str, Any], tags: Mapping[str, Any]) -> None:
    """GPUs per instance from KNOWN_GPUS for the types the service environment's tags leave out (a live
    environment carries no planner tags); the import's "taken as 1 GPU" note is replaced by the figure."""
    for type_name, spec in data["instance_types"].items():
        if TAG_GPUS + type_name in tags or type_name not in KNOWN_GPUS:
            continue
        spec["gpus"] = KNOWN_GPUS[type_name]
        data["description"] = data["description"].replace(
            f" {type_name}: no {TAG_GPUS}{type_name} tag, taken as 1 GPU per instance: check it.",
            f" {type_name}: {KNOWN_GPUS[type_name]} GPUs per instance (the instance type's).",
        )


def _job_queue(
    queues: list[tuple[str, Mapping[str, Any]]], wanted: str | None
) -> tuple[str, Mapping[str, Any] | None]:
    """The SAGEMAKER_TRAINING job queue the import is about; None when no queue was given."""
    for label, queue in queues:
        if wanted is None or queue.get("jobQueueName") == wanted:
            queue_type = queue.get("jobQueueType", SERVICE_TYPE)
            if queue_type != SERVICE_TYPE and (wanted is not None or len(queues) == 1):
                raise InputError(
                    f"job queue {queue.get('jobQueueName')!r} is of type {queue_type!r}: quota shares exist "
                    f"only on {SERVICE_TYPE} queues (a queue of ECS, EKS or Fargate jobs has no quota "
                    "management)",
                    field=f"{label}.jobQueueType",
                )
    candidates = [
        (label, queue)
        for label, queue in queues
        if queue.get("jobQueueType", SERVICE_TYPE) == SERVICE_TYPE
        and (wanted is None or queue.get("jobQueueName") == wanted)
    ]
    if wanted is not None and not candidates:
        raise InputError(
            f"no job queue named {wanted!r} in the describe-job-queues output", field="job_queue"
        )
    if len(candidates) > 1:
        names = ", ".join(str(q.get("jobQueueName")) for _, q in candidates)
        raise InputError(
            f"several {SERVICE_TYPE} job queues ({names}): say which one to import", field="job_queue"
        )
    if not candidates:
        if queues:
            label, queue = queues[0]
            raise InputError(
                f"job queue {queue.get('jobQueueName')!r} is of type {queue.get('jobQueueType')!r}: "
                f"quota shares exist only on {SERVICE_TYPE} queues",
                field=f"{label}.jobQueueType",
            )
        return "create-job-queue.json", None
    return candidates[0]


def _service_environment(
    environments: list[tuple[str, Mapping[str, Any]]], queue_label: str, queue: Mapping[str, Any] | None
) -> tuple[str, Mapping[str, Any]]:
    if not environments:
        raise InputError(
            "add the output of aws batch describe-service-environments", field="serviceEnvironments"
        )
    if queue is not None and len(environments) > 1:
        order = queue.get("serviceEnvironmentOrder") or []
        wanted = {entry.get("serviceEnvironment") for entry in order if isinstance(entry, Mapping)}
        chosen = [
            (label, env)
            for label, env in environments
            if env.get("serviceEnvironmentArn") in wanted or env.get("serviceEnvironmentName") in wanted
        ]
        if len(chosen) == 1:
            return chosen[0]
        raise InputError(
            f"{len(environments)} service environments, and the job queue's serviceEnvironmentOrder names "
            f"{len(chosen)} of them: a policy is one service environment",
            field=f"{queue_label}.serviceEnvironmentOrder",
        )
    if len(environments) > 1:
        raise InputError(
            f"{len(environments)} service environments: give the job queue too", field="jobQueues"
        )
    return environments[0]


def _scheduling_policy(
    policies: list[tuple[str, Mapping[str, Any]]], queue_label: str, queue: Mapping[str, Any] | None
) -> tuple[str, Mapping[str, Any]] | None:
    if not policies:
        return None
    if queue is not None and queue.get("schedulingPolicyArn"):
        for label, policy in policies:
            if policy.get("arn") == queue["schedulingPolicyArn"]:
                return label, policy
        raise InputError(
            f"the job queue's scheduling policy {queue['schedulingPolicyArn']} is not in the "
            "describe-scheduling-policies output",
            field=f"{queue_label}.schedulingPolicyArn",
        )
    if len(policies) > 1:
        raise InputError(f"{len(policies)} scheduling policies: give the job queue too", field="jobQueues")
    return policies[0]


def _shares_of(
    shares: list[tuple[str, Mapping[str, Any]]], queue: Mapping[str, Any] | None
) -> list[tuple[str, Mapping[str, Any]]]:
    """The quota shares of ``queue`` (all of them when no queue was given)."""
    if queue is None:
        return shares
    arn, name = queue.get("jobQueueArn"), queue.get("jobQueueName")
    mine = []
    for label, share in shares:
        owner = share.get("jobQueueArn") or share.get("jobQueue")
        if owner is None or owner in (arn, name):
            mine.append((label, share))
    return mine


def runnable_time_limit(label: str, queue: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """SEMANTICS.md section 10: the job queue's ``jobStateTimeLimitActions`` (act on a job RUNNABLE
    for maxTimeSeconds with a given reason) as ``runnable_timeout_seconds``.

    Returns (policy keys, notes). AWS keys each action by the job's RUNNABLE reason; the replay has
    one limit for every job whatever its reason (section 10's choice), so the shortest limit is
    taken and the notes say which actions were folded into it."""
    actions = queue.get("jobStateTimeLimitActions") or []
    if not isinstance(actions, list):
        raise InputError("must be a list", field=f"{label}.jobStateTimeLimitActions")
    limits: list[float] = []
    described: list[str] = []
    for i, action in enumerate(actions):
        where = f"{label}.jobStateTimeLimitActions[{i}]"
        if not isinstance(action, Mapping):
            raise InputError("must be an object", field=where)
        state = action.get("state", "RUNNABLE")
        if state != "RUNNABLE":
            raise InputError(f"state {state!r}: AWS Batch only acts on RUNNABLE jobs", field=f"{where}.state")
        seconds = action.get("maxTimeSeconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds < 1e9:
            raise InputError(f"{seconds!r} is not a number of seconds", field=f"{where}.maxTimeSeconds")
        limits.append(float(seconds))
        verb = action.get("action", "CANCEL")
        described.append(f"{verb} after {seconds:g} s with reason {action.get('reason')}")
    if not limits:
        return {}, []
    shortest = min(limits)
    notes = [
        f"jobStateTimeLimitActions ({'; '.join(described)}) read as runnable_timeout_seconds {shortest:g}: "
        "the replay cancels every job RUNNABLE that long, whatever its reason (SEMANTICS.md section 10)"
    ]
    return {"runnable_timeout_seconds": int(shortest) if shortest.is_integer() else shortest}, notes
