"""A policy as the AWS Batch quota-management CLI inputs, and those inputs read back into a policy.

``to_aws_batch`` writes one JSON document per ``aws batch`` call (service environment, scheduling policy,
job queue, one quota share per share) and a shell script that runs them; each knob AWS Batch lacks is
named in the bundle's notes. ``from_aws_batch`` reads such documents back into a policy dict.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from scheduling.capacity_plans import changes_in_words
from scheduling.errors import InputError
from scheduling.export.escape import comment_text, shell_word, unique_name
from scheduling.model import (
    InSharePreemption,
    Policy,
    Queueing,
    Reclaim,
    Share,
    Strategy,
    borrow_limit_from_percent,
)

# File names of the documents, in the order the script runs them.
SERVICE_ENVIRONMENT = "create-service-environment.json"
SCHEDULING_POLICY = "create-scheduling-policy.json"
JOB_QUEUE = "create-job-queue.json"
QUOTA_SHARE_PREFIX = "create-quota-share-"

SERVICE_TYPE = "SAGEMAKER_TRAINING"
MAX_CAPACITY_LIMITS = 5  # per quota share (AWS Batch user guide, "Quota shares")
MAX_QUOTA_SHARES = 20  # per job queue (same page)
MAX_TAGS = 50  # per AWS resource

# Planner facts AWS Batch does not use, kept as tags so that an import restores them.
TAG_GPUS = "planner:gpus:"  # + instance type
TAG_HOURLY_PRICE = "planner:hourly_price:"  # + instance type
TAG_STARTUP = "planner:startup_seconds"
TAG_SHARE = "planner:share"  # the share's planner name when AWS needed another one
TAG_POLICY = "planner:policy"  # the same for the policy

# jobStateTimeLimitActions: the RUNNABLE reasons AWS Batch can act on for SageMaker training queues
# (user guide, "Automatic remediation with jobStateTimeLimitActions"); the planner's limit applies
# whatever the reason, so the export writes one action per reason. TERMINATE is the only action
# such queues accept (CANCEL is for ECS, EKS and Fargate queues).
RUNNABLE_LIMIT_REASONS = (
    "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
    "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
    "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED",
)
RUNNABLE_LIMIT_ACTION = "TERMINATE"
RUNNABLE_LIMIT_ACTIONS_READ = ("TERMINATE", "CANCEL")

AWS_NAMES = "AWS names take up to 128 letters, digits, - and _"
_AWS_NAME = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
_IN_SHARE = {"ENABLED": InSharePreemption.LOWER_PRIORITY, "DISABLED": InSharePreemption.NEVER}


@dataclass(frozen=True)
class ExportBundle:
    """The CLI inputs (file name -> JSON object), the script that runs them, and what was lost."""

    documents: dict[str, dict[str, Any]]
    script: str
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        return {"documents": self.documents, "script": self.script, "notes": list(self.notes)}


PRICES_LEFT_OUT = (
    "hourly prices are left out of this export (the reader's role does not read $ figures): "
    "an import takes 0 for a new instance type and keeps the planner's price of a known one"
)


def to_aws_batch(policy: Policy | Mapping[str, Any], *, prices: bool = True) -> ExportBundle:
    """The AWS Batch documents of ``policy`` (a Policy or its section 7 JSON); ``prices=False`` leaves
    the hourly prices out (tags and notes)."""
    policy = policy if isinstance(policy, Policy) else Policy.from_dict(policy)
    notes: list[str] = [] if prices else [PRICES_LEFT_OUT]
    base = _aws_name(policy.name)
    scheduling_policy: dict[str, Any] = {
        "name": base,
        "quotaSharePolicy": {"idleResourceAssignmentStrategy": "FIFO"},
    }
    if base != policy.name:
        notes.append(f"policy name {policy.name!r} is written {base!r}: {AWS_NAMES}")
        scheduling_policy["tags"] = {TAG_POLICY: policy.name}
    documents: dict[str, dict[str, Any]] = {
        SERVICE_ENVIRONMENT: _service_environment(policy, base, notes, prices),
        SCHEDULING_POLICY: scheduling_policy,
        JOB_QUEUE: {
            "jobQueueName": base,
            "jobQueueType": SERVICE_TYPE,
            "state": "ENABLED",
            "priority": 1,
            "serviceEnvironmentOrder": [{"order": 1, "serviceEnvironment": base}],
        },
    }
    limit = _runnable_limit_actions(policy, notes)
    if limit:
        documents[JOB_QUEUE]["jobStateTimeLimitActions"] = limit
    notes += _not_in_aws_notes(policy)
    if policy.queueing is Queueing.STRICT_FIFO:
        notes.append(
            "queueing strict_fifo has no AWS Batch setting: a quota share's jobs are queued the AWS way "
            "(the scheduling policy only offers idleResourceAssignmentStrategy FIFO)"
        )
    if len(policy.shares) > MAX_QUOTA_SHARES:
        notes.append(
            f"{len(policy.shares)} shares: AWS Batch attaches at most {MAX_QUOTA_SHARES} quota shares "
            "to a job queue"
        )
    used: set[str] = set()
    used_files: set[str] = set()
    share_files = []
    for share in policy.shares:
        name = _unique(_aws_name(share.name), used)
        file_name = f"{QUOTA_SHARE_PREFIX}{_unique_ignoring_case(name, used_files)}.json"
        documents[file_name] = _quota_share(policy, share, name, base, notes)
        share_files.append(file_name)
    return ExportBundle(documents=documents, script=_script(policy, base, share_files), notes=tuple(notes))


def _runnable_limit_actions(policy: Policy, notes: list[str]) -> list[dict[str, Any]]:
    """Section 10's limit as the job queue's jobStateTimeLimitActions, one per RUNNABLE reason."""
    timeout = policy.runnable_timeout_seconds
    if timeout is None:
        return []
    seconds = math.ceil(timeout)
    if seconds != timeout:
        notes.append(
            f"runnable_timeout_seconds {timeout:g} is written as maxTimeSeconds {seconds} (whole seconds)"
        )
    notes.append(
        f"runnable_timeout_seconds {timeout:g} is the job queue's jobStateTimeLimitActions: state RUNNABLE, "
        f"action {RUNNABLE_LIMIT_ACTION} (the only action for SageMaker training queues), one per reason "
        f"({', '.join(RUNNABLE_LIMIT_REASONS)}). AWS acts on the job at the head of the queue with that "
        "reason; the planner's replay cancels every job RUNNABLE that long, whatever the reason"
    )
    return [
        {"reason": reason, "state": "RUNNABLE", "maxTimeSeconds": seconds, "action": RUNNABLE_LIMIT_ACTION}
        for reason in RUNNABLE_LIMIT_REASONS
    ]


def _not_in_aws_notes(policy: Policy) -> list[str]:
    """Sections 8 and 9 have no AWS Batch setting: said, never dropped silently."""
    notes = []
    if policy.fair_sharing is not None:
        strategies = ", ".join(s.value for s in policy.fair_sharing.preemption_strategies)
        notes.append(
            f"fair_sharing ({strategies}) is not exported: AWS Batch quota management has no fair sharing "
            "between quota shares (fair-share scheduling policies, fairsharePolicy, serve other job queues); "
            "quota shares lend and reclaim by their resourceSharingConfiguration only"
        )
    weighted = [f"{s.name} {s.fair_weight:g}" for s in policy.shares if s.fair_weight != 1]
    if weighted:
        notes.append(f"fair_weight of shares ({', '.join(weighted)}) has no AWS Batch setting: not exported")
    if policy.cohorts:
        notes.append(_cohorts_note(policy))
    if policy.changes:
        when = changes_in_words(
            policy.changes, lambda share: "the pool" if share is None else f"quota share {share}"
        )
        notes.append(
            f"AWS Batch has no dated capacity or quotas: the calendar's {len(policy.changes)} changes are "
            f"not exported ({when}); the documents hold the capacity and quotas before the first change. "
            "Apply each change at its time with update-service-environment (capacityLimits) or "
            "update-quota-share (capacityLimits); reserved capacity for a while is a SageMaker training plan"
        )
    return notes


def _cohorts_note(policy: Policy) -> str:
    """Section 13's tree flattened: AWS quota shares are one level under the service environment."""
    cohorts = ", ".join(
        f"{c.name} (in {c.parent})" if c.parent is not None else c.name for c in policy.cohorts
    )
    own = {t: sum(c.capacity.get(t, 0) for c in policy.cohorts) for t in policy.capacity}
    own_text = ", ".join(f"{n} x {t}" for t, n in own.items() if n)
    held = ""
    if own_text:
        held = f"; their own quotas ({own_text}) become unassigned capacity of the service environment"
    return (
        f"cohorts ({cohorts}) are not exported: AWS Batch quota shares have no tree, so the shares are "
        f"written as one level, each lending and borrowing by its own strategy across the whole job "
        f"queue{held}, and the cohorts' borrowing and lending limits and fair weights are dropped; "
        "an import reads back the policy without cohorts"
    )


def _service_environment(policy: Policy, base: str, notes: list[str], prices: bool) -> dict[str, Any]:
    limits = []
    for type_name, count in policy.capacity.items():
        if not type_name.startswith("ml."):
            notes.append(
                f"instance type {type_name!r} is not a SageMaker instance type (ml.*): "
                "rename it in every document before running the script"
            )
        if count <= 0:
            notes.append(f"the pool has no {type_name}: left out of the capacity limits")
            continue
        limits.append({"maxCapacity": count, "capacityUnit": type_name})
    tags = {}
    for instance_type in policy.instance_types.values():
        tags[TAG_GPUS + instance_type.name] = _number_text(instance_type.gpus)
        if not prices:
            continue
        tags[TAG_HOURLY_PRICE + instance_type.name] = _number_text(instance_type.hourly_price)
        if instance_type.hourly_price:
            notes.append(
                f"hourly_price of {instance_type.name} ({instance_type.hourly_price:g} $/instance-hour) "
                f"is no AWS Batch setting: kept as tag {TAG_HOURLY_PRICE}{instance_type.name}"
            )
    tags[TAG_STARTUP] = _number_text(policy.startup_seconds)
    if policy.startup_seconds:
        notes.append(
            f"startup_seconds {policy.startup_seconds:g} describes SageMaker's start-up, it is no AWS Batch "
            f"setting: kept as tag {TAG_STARTUP}"
        )
    if len(tags) > MAX_TAGS:
        notes.append(f"{len(tags)} planner tags on the service environment: AWS accepts at most {MAX_TAGS}")
    return {
        "serviceEnvironmentName": base,
        "serviceEnvironmentType": SERVICE_TYPE,
        "state": "ENABLED",
        "capacityLimits": limits,
        "tags": tags,
    }


def _quota_share(policy: Policy, share: Share, name: str, job_queue: str, notes: list[str]) -> dict[str, Any]:
    limits = [{"maxCapacity": count, "capacityUnit": t} for t, count in share.capacity.items() if count > 0]
    if not limits:
        notes.append(
            f"share {share.name} has no quota: AWS Batch needs at least one capacity limit of 1 or more, "
            "so create-quota-share will refuse it"
        )
    if len(limits) > MAX_CAPACITY_LIMITS:
        notes.append(
            f"share {share.name} has {len(limits)} capacity limits: AWS takes at most {MAX_CAPACITY_LIMITS}"
        )
    sharing: dict[str, Any] = {"strategy": share.strategy.value}
    if share.strategy is Strategy.LEND_AND_BORROW:
        percent = _borrow_limit(policy, share, notes)
        if percent is not None:
            sharing["borrowLimit"] = percent
    if share.lending_limit is not None:
        notes.append(
            f"lending_limit of share {share.name} has no AWS Batch equivalent: AWS lends all idle quota "
            "of LEND and LEND_AND_BORROW shares"
        )
    if share.reclaim is not Reclaim.ANY:
        notes.append(
            f"reclaim {share.reclaim.value} of share {share.name} has no AWS Batch equivalent: AWS always "
            "reclaims lent quota by cross-share preemption (reclaim any)"
        )
    if share.in_share_preemption is InSharePreemption.LOWER_OR_NEWER_EQUAL_PRIORITY:
        notes.append(
            f"in_share_preemption lower_or_newer_equal_priority of share {share.name} has no AWS Batch "
            "equivalent: written as ENABLED, which preempts only lower-priority jobs"
        )
    in_share = "DISABLED" if share.in_share_preemption is InSharePreemption.NEVER else "ENABLED"
    document: dict[str, Any] = {
        "quotaShareName": name,
        "jobQueue": job_queue,
        "capacityLimits": limits,
        "resourceSharingConfiguration": sharing,
        "preemptionConfiguration": {"inSharePreemption": in_share},
        "state": "ENABLED",
    }
    if name != share.name:
        notes.append(f"share {share.name!r} is written {name!r}: {AWS_NAMES}")
        document["tags"] = {TAG_SHARE: share.name}
    return document


def _borrow_limit(policy: Policy, share: Share, notes: list[str]) -> int | None:
    """AWS borrowLimit (a whole percent of the share's quota, -1 unlimited); None leaves the AWS default
    (-1), which is how a share without any limit comes back on import."""
    if share.borrowing_limit is None:
        percent = share.borrow_limit_percent
        if percent is None:
            return None
        if percent < 0:
            return -1
        if percent != int(percent):
            notes.append(
                f"borrow_limit_percent {percent:g} of share {share.name} is written {int(percent)}: "
                "AWS borrowLimit takes whole percents"
            )
        return int(percent)
    limits = {t: share.borrow_limit(t) for t in policy.capacity}
    wanted = ", ".join(f"{count:g} x {t}" for t, count in limits.items() if math.isfinite(count))
    exact = _exact_percent(share, limits)
    if exact is not None:
        notes.append(
            f"borrowing_limit of share {share.name} ({wanted}) has no AWS Batch equivalent: written as "
            f"borrowLimit {exact}% of its quota, which allows the same"
        )
        return exact
    percent = _largest_percent_within(share, limits)
    allowed = ", ".join(f"{borrow_limit_from_percent(share.quota(t), percent):g} x {t}" for t in limits)
    notes.append(
        f"borrowing_limit of share {share.name} ({wanted}) has no AWS Batch equivalent and no percent gives "
        f"it exactly: written as borrowLimit {percent}%, which allows {allowed}"
    )
    return percent


def _percent_bound(share: Share, limits: Mapping[str, float]) -> int:
    """A percent above which no borrowLimit can still meet the finite limits."""
    bounds = [100 * (count + 1) // share.quota(t) + 1 for t, count in limits.items()
              if math.isfinite(count) and share.quota(t) > 0]  # fmt: skip
    return max(bounds, default=0)


def _exact_percent(share: Share, limits: Mapping[str, float]) -> int | None:
    if all(math.isinf(count) for count in limits.values()):
        return -1
    for percent in range(_percent_bound(share, limits) + 1):
        if all(borrow_limit_from_percent(share.quota(t), percent) == count for t, count in limits.items()):
            return percent
    return None


def _largest_percent_within(share: Share, limits: Mapping[str, float]) -> int:
    best = 0
    for percent in range(_percent_bound(share, limits) + 1):
        if all(borrow_limit_from_percent(share.quota(t), percent) <= count for t, count in limits.items()):
            best = percent
    return best


def _input(file_name: str) -> str:
    return shell_word(f"file://{file_name}")


def _script(policy: Policy, base: str, share_files: list[str]) -> str:
    base = shell_word(base)
    # Every value that reaches the script is one shell word, and the comment holds the name escaped
    # (scheduling.export.escape).
    lines = [
        "#!/bin/sh",
        f"# AWS Batch quota management for policy {comment_text(policy.name)}, written by the planner.",
        "# Run it where the JSON files are, with the AWS CLI v2 and AWS Batch permissions.",
        "# Command-line options override the values read from --cli-input-json.",
        "set -eu",
        "",
        # Statuses CREATING / VALID / INVALID as in the AWS Batch user guide; the ``status`` field of the
        # describe outputs and the ``arn`` of create-scheduling-policy's output are as the API reference
        # names them for job queues; for service environments it is assumed to be the same.
        "wait_valid() {  # $1 describe command, $2 its name option, $3 the name, $4 the list in its output",
        "  while :; do",
        '    status=$(aws batch "$1" "$2" "$3" --query "$4[0].status" --output text)',
        '    case "$status" in',
        "      VALID) return 0 ;;",
        '      INVALID) echo "$3 is INVALID" >&2; exit 1 ;;',
        "    esac",
        "    sleep 5",
        "  done",
        "}",
        "",
        f"aws batch create-service-environment --cli-input-json {_input(SERVICE_ENVIRONMENT)}",
        f"wait_valid describe-service-environments --service-environments {base} serviceEnvironments",
        "POLICY_ARN=$(aws batch create-scheduling-policy "
        f"--cli-input-json {_input(SCHEDULING_POLICY)} --query arn --output text)",
        f"aws batch create-job-queue --cli-input-json {_input(JOB_QUEUE)}"
        ' --scheduling-policy-arn "$POLICY_ARN"',
        f"wait_valid describe-job-queues --job-queues {base} jobQueues",
    ]
    lines += [f"aws batch create-quota-share --cli-input-json {_input(name)}" for name in share_files]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------
# Import


def from_aws_batch(documents: Mapping[str, Any] | Iterable[Any]) -> dict[str, Any]:
    """The policy dict of AWS Batch quota-management documents: a mapping of file name -> JSON object
    (an exported bundle's ``documents``, or the whole bundle) or a list of JSON objects.

    Each object is recognised by its fields (``serviceEnvironmentName``, ``quotaSharePolicy``,
    ``jobQueueName``, ``quotaShareName``). Raises InputError naming the document and the field.
    """
    labelled = _labelled_documents(documents)
    environments, policies, queues, shares = [], [], [], []
    for label, document in labelled:
        if "serviceEnvironmentName" in document:
            environments.append((label, document))
        elif "quotaShareName" in document:
            shares.append((label, document))
        elif "jobQueueName" in document:
            queues.append((label, document))
        elif "quotaSharePolicy" in document or "fairsharePolicy" in document:
            policies.append((label, document))
        else:
            raise InputError(
                "not an AWS Batch quota-management document (no serviceEnvironmentName, quotaSharePolicy, "
                "jobQueueName or quotaShareName)",
                field=label,
            )
    if len(environments) != 1:
        raise InputError(
            f"expected one service environment, found {len(environments)}", field=SERVICE_ENVIRONMENT
        )
    if not shares:
        raise InputError("no quota share (create-quota-share) document", field=QUOTA_SHARE_PREFIX + "*.json")
    if len(policies) > 1:
        raise InputError(f"expected one scheduling policy, found {len(policies)}", field=policies[1][0])
    if len(queues) > 1:
        raise InputError(f"expected one job queue, found {len(queues)}", field=queues[1][0])

    env_label, environment = environments[0]
    capacity = _read_capacity_limits(environment, env_label)
    instance_types, startup = _read_planner_tags(environment, env_label, capacity)
    name = str(environment["serviceEnvironmentName"])
    if policies:
        name = _read_scheduling_policy(*policies[0])
    queue_name = None
    if queues:
        queue_label, queue = queues[0]
        queue_name = _string(queue, "jobQueueName", queue_label)
        queue_type = queue.get("jobQueueType", SERVICE_TYPE)
        if queue_type != SERVICE_TYPE:
            raise InputError(f"{queue_type!r} is not {SERVICE_TYPE}", field=f"{queue_label}.jobQueueType")
        timeout, limit_notes = _read_runnable_limit(queue, queue_label)
    else:
        timeout, limit_notes = None, []
    env_name = environment["serviceEnvironmentName"]
    data = {
        "name": name,
        "instance_types": instance_types,
        "capacity": capacity,
        "queueing": Queueing.BEST_EFFORT_FIFO.value,
        "startup_seconds": startup,
        "shares": [_read_quota_share(label, doc, capacity, queue_name) for label, doc in shares],
        "description": f"Imported from AWS Batch service environment {env_name}."
        + "".join(
            f" {type_name}: no {TAG_GPUS}{type_name} tag, taken as 1 GPU per instance: check it."
            for type_name in capacity
            if TAG_GPUS + type_name not in (environment.get("tags") or {})
        )
        + "".join(f" {note}" for note in limit_notes),
    }
    if timeout is not None:
        data["runnable_timeout_seconds"] = timeout
    try:
        Policy.from_dict(data)
    except InputError as error:
        raise InputError(f"the imported policy: {error.reason}", field=error.field) from None
    return data


def _read_runnable_limit(queue: Mapping[str, Any], label: str) -> tuple[float | None, list[str]]:
    """The job queue's jobStateTimeLimitActions as runnable_timeout_seconds (the shortest limit:
    the planner has one, for every reason), with notes on what it reads differently."""
    actions = queue.get("jobStateTimeLimitActions")
    if actions is None:
        return None, []
    where = f"{label}.jobStateTimeLimitActions"
    if not isinstance(actions, list):
        raise InputError("must be a list of {reason, state, maxTimeSeconds, action}", field=where)
    limits, reasons = [], []
    for i, action in enumerate(actions):
        at = f"{where}[{i}]"
        if not isinstance(action, Mapping):
            raise InputError("must be an object with reason, state, maxTimeSeconds and action", field=at)
        if action.get("state") != "RUNNABLE":
            raise InputError(
                f"{action.get('state')!r} is not RUNNABLE, the only state AWS acts on", field=f"{at}.state"
            )
        if action.get("action") not in RUNNABLE_LIMIT_ACTIONS_READ:
            raise InputError(
                f"{action.get('action')!r} is not {' or '.join(RUNNABLE_LIMIT_ACTIONS_READ)}",
                field=f"{at}.action",
            )
        seconds = action.get("maxTimeSeconds")
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
            raise InputError(f"{seconds!r} is not a positive number of seconds", field=f"{at}.maxTimeSeconds")
        limits.append(seconds)
        reasons.append(str(action.get("reason", "")))
    if not limits:
        return None, []
    notes = []
    missing = [reason for reason in RUNNABLE_LIMIT_REASONS if reason not in reasons]
    if len(set(limits)) > 1 or missing:
        notes.append(
            f"jobStateTimeLimitActions read as one limit of {min(limits):g} s for every RUNNABLE job (the "
            "planner has one limit, whatever the reason"
            + (f"; the queue had none for {', '.join(missing)}" if missing else "")
            + (f"; its limits were {', '.join(f'{x:g}' for x in limits)} s" if len(set(limits)) > 1 else "")
            + ")."
        )
    return min(limits), notes


def _labelled_documents(documents: Any) -> list[tuple[str, Mapping[str, Any]]]:
    if isinstance(documents, Mapping) and isinstance(documents.get("documents"), (Mapping, list)):
        documents = documents["documents"]  # a whole exported bundle
    if isinstance(documents, Mapping):
        items = [(str(label), document) for label, document in documents.items()]
    elif isinstance(documents, (list, tuple)):
        items = [(f"document {i + 1}", document) for i, document in enumerate(documents)]
    else:
        raise InputError("expected a JSON object of file name -> document, or a list of documents")
    if not items:
        raise InputError("no documents")
    for label, document in items:
        if not isinstance(document, Mapping):
            raise InputError("must be a JSON object", field=label)
    return items


def _read_capacity_limits(document: Mapping[str, Any], label: str) -> dict[str, int]:
    if document.get("serviceEnvironmentType", SERVICE_TYPE) != SERVICE_TYPE:
        raise InputError(
            f"{document.get('serviceEnvironmentType')!r} is not {SERVICE_TYPE}",
            field=f"{label}.serviceEnvironmentType",
        )
    capacity = _capacity_limits(document, label)
    if not capacity:
        raise InputError("the service environment has no capacity limits", field=f"{label}.capacityLimits")
    return capacity


def _capacity_limits(document: Mapping[str, Any], label: str) -> dict[str, int]:
    limits = document.get("capacityLimits")
    if not isinstance(limits, list):
        raise InputError("must be a list of {maxCapacity, capacityUnit}", field=f"{label}.capacityLimits")
    counts: dict[str, int] = {}
    for i, limit in enumerate(limits):
        where = f"{label}.capacityLimits[{i}]"
        if not isinstance(limit, Mapping):
            raise InputError("must be an object {maxCapacity, capacityUnit}", field=where)
        unit = limit.get("capacityUnit")
        if not isinstance(unit, str) or not unit:
            raise InputError("needs a capacityUnit (an instance type)", field=f"{where}.capacityUnit")
        if unit == "NUM_INSTANCES":
            raise InputError(
                "NUM_INSTANCES counts all instance types together: quota management needs one capacity "
                "limit per instance type",
                field=f"{where}.capacityUnit",
            )
        if unit in counts:
            raise InputError(f"{unit} is listed twice", field=f"{where}.capacityUnit")
        count = limit.get("maxCapacity")
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise InputError(f"{count!r} is not a whole number of instances", field=f"{where}.maxCapacity")
        if count:
            counts[unit] = count
    return counts


def _read_planner_tags(
    document: Mapping[str, Any], label: str, capacity: Mapping[str, int]
) -> tuple[dict[str, dict[str, float]], float]:
    tags = document.get("tags") or {}
    if not isinstance(tags, Mapping):
        raise InputError("must be an object of key -> value", field=f"{label}.tags")
    types: dict[str, dict[str, float]] = {t: {"gpus": 1, "hourly_price": 0} for t in capacity}
    startup: float = 0
    for key, value in tags.items():
        where = f"{label}.tags.{key}"
        if key.startswith(TAG_GPUS):
            spec = types.setdefault(key[len(TAG_GPUS) :], {"gpus": 1, "hourly_price": 0})
            spec["gpus"] = _tag_number(value, where)
        elif key.startswith(TAG_HOURLY_PRICE):
            spec = types.setdefault(key[len(TAG_HOURLY_PRICE) :], {"gpus": 1, "hourly_price": 0})
            spec["hourly_price"] = _tag_number(value, where)
        elif key == TAG_STARTUP:
            startup = _tag_number(value, where)
    return types, startup


def _read_scheduling_policy(label: str, document: Mapping[str, Any]) -> str:
    if "quotaSharePolicy" not in document:
        raise InputError(
            "a fair-share scheduling policy has no quota shares: quota management needs quotaSharePolicy",
            field=f"{label}.fairsharePolicy",
        )
    quota_policy = document["quotaSharePolicy"]
    if not isinstance(quota_policy, Mapping):
        raise InputError("must be an object", field=f"{label}.quotaSharePolicy")
    strategy = quota_policy.get("idleResourceAssignmentStrategy", "FIFO")
    if strategy != "FIFO":
        raise InputError(
            f"{strategy!r} is not FIFO (the only value AWS Batch documents)",
            field=f"{label}.quotaSharePolicy.idleResourceAssignmentStrategy",
        )
    tags = document.get("tags") or {}
    if isinstance(tags, Mapping) and isinstance(tags.get(TAG_POLICY), str) and tags[TAG_POLICY].strip():
        return tags[TAG_POLICY]
    return _string(document, "name", label)


def _read_quota_share(
    label: str, document: Mapping[str, Any], pool: Mapping[str, int], queue_name: str | None
) -> dict[str, Any]:
    name = _string(document, "quotaShareName", label)
    if queue_name is not None and document.get("jobQueue", queue_name) != queue_name:
        raise InputError(
            f"{document.get('jobQueue')!r} is not the job queue {queue_name!r} of these documents",
            field=f"{label}.jobQueue",
        )
    capacity = _capacity_limits(document, label)
    for i, type_name in enumerate(capacity):
        if type_name not in pool:
            raise InputError(
                f"{type_name} is not in the service environment's capacity limits",
                field=f"{label}.capacityLimits[{i}].capacityUnit",
            )
    sharing = document.get("resourceSharingConfiguration")
    if not isinstance(sharing, Mapping):
        raise InputError(
            "must be an object {strategy, borrowLimit}", field=f"{label}.resourceSharingConfiguration"
        )
    strategy = sharing.get("strategy")
    # A list or object here is refused like any other wrong value (it cannot be looked up in a set).
    if not isinstance(strategy, str) or strategy not in {s.value for s in Strategy}:
        raise InputError(
            f"{strategy!r} is not one of RESERVE, LEND, LEND_AND_BORROW",
            field=f"{label}.resourceSharingConfiguration.strategy",
        )
    share: dict[str, Any] = {"name": name, "capacity": capacity, "strategy": strategy}
    if "borrowLimit" in sharing:
        limit = sharing["borrowLimit"]
        where = f"{label}.resourceSharingConfiguration.borrowLimit"
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < -1:
            raise InputError(f"{limit!r} is not a whole percent (-1 = unlimited)", field=where)
        if strategy != Strategy.LEND_AND_BORROW.value and limit != -1:
            raise InputError(f"borrowLimit only applies to LEND_AND_BORROW, not {strategy}", field=where)
        if strategy == Strategy.LEND_AND_BORROW.value:
            share["borrow_limit_percent"] = limit
    preemption = document.get("preemptionConfiguration")
    in_share = preemption.get("inSharePreemption") if isinstance(preemption, Mapping) else None
    if not isinstance(in_share, str) or in_share not in _IN_SHARE:
        raise InputError(
            "needs inSharePreemption ENABLED or DISABLED",
            field=f"{label}.preemptionConfiguration.inSharePreemption",
        )
    share["in_share_preemption"] = _IN_SHARE[in_share].value
    share["reclaim"] = Reclaim.ANY.value  # AWS always reclaims lent quota by cross-share preemption
    tags = document.get("tags") or {}
    if isinstance(tags, Mapping) and isinstance(tags.get(TAG_SHARE), str) and tags[TAG_SHARE].strip():
        share["name"] = tags[TAG_SHARE]
    return share


# ---------------------------------------------------------------------------------------
# Small shared pieces


def _aws_name(text: str) -> str:
    """A name AWS Batch accepts: up to 128 letters, digits, hyphens and underscores."""
    if _AWS_NAME.fullmatch(text):  # not match: "$" would let a trailing line feed through
        return text
    cleaned = re.sub(r"[^A-Za-z0-9_-]+", "-", text).strip("-")[:128]
    return cleaned or "planner"


def _unique(name: str, used: set[str]) -> str:
    return unique_name(name, used, 128)  # AWS Batch names: at most 128 characters


def _unique_ignoring_case(name: str, used: set[str]) -> str:
    """``name`` for a file: unique once case is ignored, as on macOS's and Windows' file systems
    (shares ``a`` and ``A`` would write one file over the other there). ``used`` holds casefolds."""
    candidate, n = name, 2
    while candidate.casefold() in used:
        suffix = f"-{n}"
        candidate, n = name[: 128 - len(suffix)] + suffix, n + 1
    used.add(candidate.casefold())
    return candidate


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _tag_number(value: Any, where: str) -> float:
    try:
        number = float(str(value).strip())
    except ValueError:
        raise InputError(f"{value!r} is not a number", field=where) from None
    if not math.isfinite(number) or number < 0:
        raise InputError(f"{value!r} must be a finite number, at least 0", field=where)
    return int(number) if number.is_integer() else number


def _string(document: Mapping[str, Any], key: str, label: str) -> str:
    value = document.get(key)
    if not isinstance(value, str) or not value.strip():
        raise InputError("needs a name", field=f"{label}.{key}")
    return value
