"""Importer for AWS Batch service-job histories (quota management for SageMaker Training): what
``aws batch describe-service-job`` prints (one object per job: concatenated, a JSON array or JSON
lines), ``aws batch list-service-jobs`` pages (``{"jobSummaryList": [...], "nextToken": ...}``: no
priority) and EventBridge "Batch Service Job State Change" events (JSON lines, folded per job; a
priority that changes between events becomes a priority update). Timestamps are epoch milliseconds.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from scheduling.errors import InputError
from scheduling.model import MAX_PRIORITY
from scheduling.trace import Trace
from scheduling.traces.fields import check_time_range, epoch_seconds, open_source
from scheduling.traces.json_fields import JsonFields
from scheduling.traces.json_records import JsonRecord, first_keys, iter_json_records
from scheduling.traces.mapping import SKIP_ZERO_DURATION, TraceImport, TraceMapping, split_mapping

FORMAT = "aws-batch-jobs"
SERVICE_JOB_TYPE = "SAGEMAKER_TRAINING"
EVENT_DETAIL_TYPE = "Batch Service Job State Change"
LIST_KEYS = ("jobSummaryList",)

# The share comes from the quota share; a job submitted without one has its shareIdentifier (choice:
# both name the same quota share in a quota-managed queue, quotaShareName is the newer field).
DEFAULT_MAPPING = TraceMapping(share_column="quotaShareName", name_column="jobName")
SHARE_FALLBACK = "shareIdentifier"
# Fields a mapping may name as the share, user or name (``tags.<key>`` names a tag).
SOURCE_COLUMNS = ("quotaShareName", "shareIdentifier", "jobQueue", "jobName", "jobId")
# Settings this importer reads from the mapping besides TraceMapping's own.
EXTRA_SETTINGS = ("default_priority",)

# Statuses (AWS Batch user guide, "Service job status").
NOT_STARTED = {"SUBMITTED", "PENDING", "RUNNABLE", "SCHEDULED"}
IN_FLIGHT = {"STARTING", "RUNNING"}
ENDED = {"SUCCEEDED", "FAILED"}
STATUSES = NOT_STARTED | IN_FLIGHT | ENDED
# Of two events of a job at the same instant, the one further along wins.
_STATUS_RANK = {
    "SUBMITTED": 0,
    "PENDING": 1,
    "RUNNABLE": 2,
    "SCHEDULED": 3,
    "STARTING": 4,
    "RUNNING": 5,
    "SUCCEEDED": 6,
    "FAILED": 6,
}

# Jobs left out (choice), counted in stats["skipped"]:
SKIP_PENDING = "pending_at_export"  # not started when exported: its work is unknown
SKIP_RUNNING = "running_at_export"  # still running: its work is not known yet
SKIP_NEVER_STARTED = "ended_without_starting"  # failed or cancelled while queued


@dataclass
class _Job:
    """One service job as read (a describe record, a list summary, or events folded)."""

    job_id: str
    number: int  # the record it was first read from
    where: str
    record: Mapping[str, Any]
    from_summary: bool = False
    events: list[tuple[float, int, Any]] = field(default_factory=list)  # (time ms, rank, priority)


def source_columns(source: Any, **options: Any) -> list[str]:
    """The fields a mapping may use: the record's own, and ``tags.<key>`` of the first records."""
    with open_source(source) as opened:
        tags = first_keys(opened, LIST_KEYS, "tags", lambda record: _job_object(record).get("tags") or {})
    return [*SOURCE_COLUMNS, *tags]


def read(
    source: Any,
    *,
    mapping: TraceMapping | Mapping[str, Any] | None = None,
    max_rows: int | None = None,
    stats: dict | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
    default_priority: int | None = None,
) -> Trace | None:
    """A trace of the jobs that started and ended. Job ids repeated across describe records or
    list pages are an error; events of one job are folded into it.

    - share = ``quotaShareName`` (else ``shareIdentifier``), or the mapping's ``share_column``;
    - instance type and count from ``capacityUsage`` (an instance type as ``capacityUnit``), else from
      ``serviceRequestPayload``'s ``ResourceConfig.InstanceType`` / ``InstanceCount``;
    - submit = ``createdAt``; recorded start = the earliest ``startedAt`` of any attempt (preempted ones
      included); duration = the last attempt's ``stoppedAt - startedAt`` (the attempt that succeeded,
      or the one that failed): preempted attempts' run time is work lost, not counted;
    - priority = ``schedulingPriority``; list-service-jobs summaries carry none and get
      ``default_priority`` (mapping setting or argument, 0 when unset: the summary says so);
    - preemption_retries = ``preemptionConfiguration.preemptionRetriesBeforeTermination``;
    - recorded preemptions = ``preemptionSummary.preemptedAttemptCount``.
    """
    chosen, extras = _split_mapping(mapping)
    if default_priority is None:
        default_priority = extras.get("default_priority", 0)
    run = TraceImport(FORMAT, chosen, max_rows=max_rows, stats=stats, field_names=_field_names(chosen))
    jobs: dict[str, _Job] = {}
    kinds: set[str] = set()
    with open_source(source) as opened:
        for record in iter_json_records(opened, list_keys=LIST_KEYS):
            if source_rows is not None and record.number > source_rows:
                break
            _fold(record, jobs, kinds, run)
            run.source_rows = record.number
            if max_rows is not None and len(jobs) > max_rows:  # refused while reading, not after
                raise InputError(f"more than {max_rows} jobs: the limit is {max_rows}", row=record.number)
    summaries = 0
    for job in jobs.values():
        summaries += job.from_summary
        _add_job(run, chosen, job, default_priority)
    if summaries:
        run.note("list_summaries_without_priority", summaries)
    trace = run.finish(epoch_times=True, allow_empty=allow_empty)
    run.stats["kinds"] = sorted(kinds)
    if summaries:
        run.stats["default_priority"] = default_priority
    return trace


# -- the mapping ---------------------------------------------------------------------------------


def _split_mapping(mapping: TraceMapping | Mapping[str, Any] | None) -> tuple[TraceMapping, dict[str, Any]]:
    """TraceMapping's settings, and this importer's own (``default_priority``)."""
    return split_mapping(mapping, DEFAULT_MAPPING, {"default_priority": _default_priority})


def _default_priority(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PRIORITY:
        raise InputError(
            f"{value!r} is not a whole number in 0..{MAX_PRIORITY}", field="mapping.default_priority"
        )
    return value


def _field_names(mapping: TraceMapping) -> dict[str, str]:
    names = {
        "job_id": "jobId",
        "submit_time": "createdAt",
        "recorded_start": "startedAt",
        "duration": "stoppedAt",
        "priority": "schedulingPriority",
        "instance_type": "capacityUsage",
        "instance_count": "capacityUsage",
        "preemption_retries": "preemptionConfiguration.preemptionRetriesBeforeTermination",
        "recorded_preemptions": "preemptionSummary.preemptedAttemptCount",
    }
    names.update(mapping.field_columns("share", "name", "user"))
    return names


# -- records ---------------------------------------------------------------------------------------


def _job_object(record: JsonRecord) -> Mapping[str, Any]:
    """The job fields of a record (an event's ``detail``), or an InputError saying what it is."""
    value = record.value
    if not isinstance(value, Mapping):
        raise InputError(
            "is not a JSON object (a service job, a list page or an event)",
            row=record.number,
            field=record.where,
        )
    if "detail-type" in value:
        kind = value.get("detail-type")
        if kind != EVENT_DETAIL_TYPE:
            raise InputError(
                f"an EventBridge event of type {kind!r}, not {EVENT_DETAIL_TYPE!r}: only service jobs are "
                "imported (ECS, EKS and Fargate jobs send 'Batch Job State Change')",
                row=record.number,
                field="detail-type",
            )
        detail = value.get("detail")
        if not isinstance(detail, Mapping):
            raise InputError("the event has no detail object", row=record.number, field="detail")
        return detail
    return value


def _refuse_other_kinds(record: JsonRecord, value: Mapping[str, Any]) -> None:
    """Describe outputs of other AWS Batch calls, named so the person knows what they uploaded."""
    others = {
        "computeEnvironments": "describe-compute-environments",
        "jobQueues": "describe-job-queues",
        "serviceEnvironments": "describe-service-environments",
        "schedulingPolicies": "describe-scheduling-policies",
        "quotaShares": "list-quota-shares",
        "jobDefinitions": "describe-job-definitions",
        "jobs": "describe-jobs (ECS/EKS jobs)",
        "jobSummaryList": "list-jobs",
    }
    for key, call in others.items():
        if key in value and "jobId" not in value:
            raise InputError(
                f"this is the output of aws batch {call}, not a service-job history (describe-service-job, "
                "list-service-jobs pages or Batch Service Job State Change events)",
                row=record.number,
                field=key,
            )
    if "jobId" not in value:
        raise InputError("is not a service job: it has no jobId", row=record.number, field="jobId")
    if (
        "container" in value
        or "eksProperties" in value
        or "ecsProperties" in value
        or "jobDefinition" in value
    ):
        raise InputError(
            f"job {value.get('jobId')!r} is an ECS/EKS job (describe-jobs), not a service job",
            row=record.number,
            field="jobDefinition",
        )
    job_type = value.get("serviceJobType", SERVICE_JOB_TYPE)
    if job_type != SERVICE_JOB_TYPE:
        raise InputError(
            f"job {value.get('jobId')!r} is of type {job_type!r}: only {SERVICE_JOB_TYPE} service jobs are "
            "quota-managed",
            row=record.number,
            field="serviceJobType",
        )


def _fold(record: JsonRecord, jobs: dict[str, _Job], kinds: set[str], run: TraceImport) -> None:
    value = _job_object(record)
    is_event = value is not record.value
    _refuse_other_kinds(record, value)
    job_id = value["jobId"]
    if not isinstance(job_id, str) or not job_id.strip():
        raise InputError(f"{job_id!r} is not a job id", row=record.number, field="jobId")
    kind = (
        "event" if is_event else "list-service-jobs" if record.container == "jobSummaryList" else "describe"
    )
    kinds.add(kind)
    known = jobs.get(job_id)
    if not is_event:
        if known is not None:
            raise InputError(
                f"job {job_id} is listed twice: in record {known.number} ({known.where}) and here",
                row=record.number,
                field="jobId",
            )
        jobs[job_id] = _Job(
            job_id, record.number, record.where, value, from_summary=kind == "list-service-jobs"
        )
        return
    when = _event_time(record)
    status = value.get("status")
    rank = _STATUS_RANK.get(status, -1) if isinstance(status, str) else -1
    if known is None:
        known = jobs[job_id] = _Job(job_id, record.number, record.where, value)
    elif not known.events:
        raise InputError(
            f"job {job_id} is both a describe record (record {known.number}) and an event",
            row=record.number,
            field="jobId",
        )
    latest = max(known.events) if known.events else None
    known.events.append((when, rank, value.get("schedulingPriority")))
    if latest is None or (when, rank) >= latest[:2]:
        known.record = value
    run.note("events_folded")


def _event_time(record: JsonRecord) -> float:
    """An event's ``time`` (ISO-8601, as EventBridge writes it) in epoch milliseconds."""
    text = record.value.get("time")
    if not isinstance(text, str):
        raise InputError("the event has no time", row=record.number, field="time")
    try:
        stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{text!r} is not an ISO-8601 time", row=record.number, field="time") from None
    if stamp.tzinfo is None:
        raise InputError(f"{text!r} has no time zone", row=record.number, field="time")
    return check_time_range(epoch_seconds(stamp), repr(text), record.number, "time") * 1000


# -- one job -> one planner job -------------------------------------------------------------------


class _Fields(JsonFields):
    """Reads a job's fields, each error naming the job, its record and the field."""

    def __init__(self, job: _Job):
        self.job = job
        self.record = job.record

    def fail(self, message: str, field: str) -> InputError:
        return InputError(f"job {self.job.job_id}: {message}", row=self.job.number, field=field)

    def text(self, path: str) -> str | None:
        """A field by name, or ``tags.<key>``; None when absent."""
        if path.startswith("tags."):
            tags = self.record.get("tags") or {}
            value = tags.get(path[5:]) if isinstance(tags, Mapping) else None
        else:
            value = self.record.get(path)
        if value is None:
            return None
        if not isinstance(value, str):
            raise self.fail(f"{value!r} is not text", path)
        return value


def _attempts(fields: _Fields) -> list[tuple[float | None, float | None, str]]:
    """(startedAt, stoppedAt, where) of every attempt known, checked for order: attempts[] and the
    preemption summary's recent preempted attempts (the same attempt may be in both)."""
    record = fields.record
    found: dict[tuple[Any, Any], tuple[float | None, float | None, str]] = {}
    lists = [("attempts", record.get("attempts"))]
    summary = record.get("preemptionSummary")
    if isinstance(summary, Mapping):
        lists.append(("preemptionSummary.recentPreemptedAttempts", summary.get("recentPreemptedAttempts")))
    for name, attempts in lists:
        if attempts is None:
            continue
        if not isinstance(attempts, list):
            raise fields.fail("must be a list of attempts", name)
        for i, attempt in enumerate(attempts):
            where = f"{name}[{i}]"
            if not isinstance(attempt, Mapping):
                raise fields.fail("must be an object {startedAt, stoppedAt, statusReason}", where)
            started = fields.millis(attempt.get("startedAt"), f"{where}.startedAt")
            stopped = fields.millis(attempt.get("stoppedAt"), f"{where}.stoppedAt")
            if started is not None and stopped is not None and stopped < started:
                raise fields.fail(
                    f"stoppedAt {attempt['stoppedAt']} is before startedAt {attempt['startedAt']}",
                    f"{where}.stoppedAt",
                )
            if stopped is not None and started is None:
                raise fields.fail("the attempt stopped but has no startedAt", f"{where}.startedAt")
            found.setdefault((attempt.get("startedAt"), attempt.get("stoppedAt")), (started, stopped, where))
    return sorted(found.values(), key=lambda a: (a[0] is None, a[0] or 0.0))


def _capacity(fields: _Fields) -> tuple[str | None, int]:
    """(instance type, instance count): from capacityUsage, else the request payload."""
    record = fields.record
    payload_type, payload_count = _payload(fields)
    usage = record.get("capacityUsage")
    if usage is not None:
        if not isinstance(usage, list):
            raise fields.fail("must be a list of {capacityUnit, quantity}", "capacityUsage")
        types: dict[str, int] = {}
        for i, entry in enumerate(usage):
            where = f"capacityUsage[{i}]"
            if not isinstance(entry, Mapping):
                raise fields.fail("must be an object {capacityUnit, quantity}", where)
            unit = entry.get("capacityUnit")
            if not isinstance(unit, str) or not unit:
                raise fields.fail("is missing", f"{where}.capacityUnit")
            quantity = entry.get("quantity")
            if isinstance(quantity, bool) or not isinstance(quantity, (int, float)) or quantity < 0:
                raise fields.fail(f"{quantity!r} is not a number of instances", f"{where}.quantity")
            if not float(quantity).is_integer():
                raise fields.fail(f"{quantity!r} is not a whole number of instances", f"{where}.quantity")
            # NUM_INSTANCES counts instances of the payload's type (choice: the service's own unit).
            name = payload_type if unit == "NUM_INSTANCES" else unit
            if name is None:
                raise fields.fail(
                    "capacityUnit NUM_INSTANCES, but serviceRequestPayload names no "
                    "ResourceConfig.InstanceType",
                    f"{where}.capacityUnit",
                )
            if quantity:
                types[name] = types.get(name, 0) + int(quantity)
        if len(types) > 1:
            raise fields.fail(
                f"uses several instance types ({', '.join(sorted(types))}): a planner job holds one",
                "capacityUsage",
            )
        if types:
            name, count = next(iter(types.items()))
            return name, count
    if payload_count is None:
        raise fields.fail(
            "names no capacity: neither capacityUsage nor serviceRequestPayload.ResourceConfig",
            "capacityUsage",
        )
    return payload_type, payload_count


def _payload(fields: _Fields) -> tuple[str | None, int | None]:
    """ResourceConfig.InstanceType and InstanceCount of the SageMaker CreateTrainingJob request."""
    text = fields.record.get("serviceRequestPayload")
    if text is None:
        return None, None
    if not isinstance(text, str):
        raise fields.fail("must be the request as a JSON string", "serviceRequestPayload")
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise fields.fail(f"is not JSON: {str(error)[:80]}", "serviceRequestPayload") from None
    config = payload.get("ResourceConfig") if isinstance(payload, Mapping) else None
    if config is None:
        return None, None
    if not isinstance(config, Mapping):
        raise fields.fail("must be an object", "serviceRequestPayload.ResourceConfig")
    kind = config.get("InstanceType")
    if kind is not None and (not isinstance(kind, str) or not kind):
        raise fields.fail(
            f"{kind!r} is not an instance type", "serviceRequestPayload.ResourceConfig.InstanceType"
        )
    count = config.get("InstanceCount")
    if count is not None:
        count = fields.whole(count, "serviceRequestPayload.ResourceConfig.InstanceCount", minimum=1)
    return kind, count


def _add_job(run: TraceImport, mapping: TraceMapping, job: _Job, default_priority: int) -> None:
    fields = _Fields(job)
    record = fields.record
    status = record.get("status")
    if not isinstance(status, str) or status not in STATUSES:
        raise fields.fail(f"{status!r} is not a service job status ({', '.join(sorted(STATUSES))})", "status")
    submit = fields.millis(record.get("createdAt"), "createdAt", required=True)
    attempts = _attempts(fields)
    started = fields.millis(record.get("startedAt"), "startedAt")
    stopped = fields.millis(record.get("stoppedAt"), "stoppedAt")
    if started is not None and stopped is not None and stopped < started:
        raise fields.fail(
            f"stoppedAt {record['stoppedAt']} is before startedAt {record['startedAt']}", "stoppedAt"
        )
    first_start = min(
        [a[0] for a in attempts if a[0] is not None] + ([started] if started is not None else []),
        default=None,
    )
    if first_start is not None and first_start < submit:
        raise fields.fail(
            f"starts at {first_start * 1000:.0f}, before its createdAt {record['createdAt']}",
            "startedAt"
            if started == first_start
            else next(a[2] for a in attempts if a[0] == first_start) + ".startedAt",
        )
    _check_scheduled(fields, submit)
    share = _share(fields, mapping)
    kind, count = _capacity(fields)
    if status in NOT_STARTED:
        run.skip(SKIP_PENDING)
        return
    if status in IN_FLIGHT:
        run.skip(SKIP_RUNNING)
        return
    if first_start is None:
        run.skip(SKIP_NEVER_STARTED)
        return
    # The attempt that ended the job: the last one started (the top-level startedAt/stoppedAt are
    # the latest attempt's when attempts[] is left out).
    last = attempts[-1] if attempts else (started, stopped, "")
    last_start, last_stop = last[0], last[1] if last[1] is not None else stopped
    if last_start is None:
        last_start = started
    if last_stop is None:
        raise fields.fail(f"the job is {status} but has no stoppedAt", "stoppedAt")
    duration = last_stop - last_start
    if duration <= 0:
        run.skip(SKIP_ZERO_DURATION)
        return
    if status == "FAILED":
        run.note("failed_jobs")
    priority = _priority(fields, job, default_priority, run)
    retries = None
    config = record.get("preemptionConfiguration")
    if isinstance(config, Mapping) and config.get("preemptionRetriesBeforeTermination") is not None:
        retries = fields.whole(
            config["preemptionRetriesBeforeTermination"],
            "preemptionConfiguration.preemptionRetriesBeforeTermination",
        )
    # a list-service-jobs summary has no preemption summary: its preemptions are unknown, not 0
    preemptions = None if job.from_summary else _recorded_preemptions(fields, attempts, run)
    instance_type = mapping.instance_types.get(kind, kind) if kind else mapping.default_instance_type
    run.add(
        job.number,
        job_id=job.job_id,
        submit_time=submit,
        share=share,
        duration=duration,
        priority=priority,
        instance_type=instance_type,
        instance_count=count,
        preemption_retries=retries,
        user=fields.text(mapping.user_column) if mapping.user_column else None,
        name=fields.text(mapping.name_column) if mapping.name_column else None,
        recorded_start=first_start,
        recorded_preemptions=preemptions,
    )
    _priority_updates(run, job)


def _check_scheduled(fields: _Fields, submit: float) -> None:
    scheduled = fields.millis(fields.record.get("scheduledAt"), "scheduledAt")
    if scheduled is None:
        return
    if scheduled < submit:
        raise fields.fail(
            f"scheduledAt {fields.record['scheduledAt']} is before createdAt {fields.record['createdAt']}",
            "scheduledAt",
        )


def _share(fields: _Fields, mapping: TraceMapping) -> str:
    column = mapping.share_column
    value = fields.text(column) if column else None
    if value is None and column == DEFAULT_MAPPING.share_column:
        value = fields.text(SHARE_FALLBACK)
    if (value is None or not value.strip()) and mapping.share_default is None:
        where = column or "quotaShareName"
        raise fields.fail(
            f"has no {where}"
            + (f" (nor {SHARE_FALLBACK})" if column == DEFAULT_MAPPING.share_column else "")
            + ": every job needs a share (or set mapping.share_default)",
            where,
        )
    return mapping.share_of(value, fields.job.number, column or "")


def _priority(fields: _Fields, job: _Job, default_priority: int, run: TraceImport) -> int:
    """The priority the job was submitted with: its first event's when events were folded, else the
    describe output's (the current one: a describe record does not keep earlier values)."""
    if job.from_summary:
        return default_priority
    value = fields.record.get("schedulingPriority")
    if job.events:
        first = min(job.events, key=lambda e: (e[0], e[1]))
        value = first[2] if first[2] is not None else value
    if value is None:
        run.note("jobs_without_priority")
        return 0
    priority = fields.whole(value, "schedulingPriority")
    if priority > MAX_PRIORITY:
        raise fields.fail(f"{priority} is outside 0..{MAX_PRIORITY}", "schedulingPriority")
    return priority


def _priority_updates(run: TraceImport, job: _Job) -> None:
    """UpdateServiceJob calls seen between a job's events: a new schedulingPriority at the event."""
    previous = None
    for when, _, value in sorted(job.events, key=lambda e: (e[0], e[1])):
        if value is None:
            continue
        if previous is not None and value != previous:
            run.builder.add_priority_update(
                job.number, time=when / 1000.0, job_id=job.job_id, priority=value, field_prefix="detail."
            )
            run.note("priority_changes")
        previous = value


def _recorded_preemptions(fields: _Fields, attempts: list, run: TraceImport) -> int:
    """preemptionSummary.preemptedAttemptCount (the total), else the recent attempts listed. AWS keeps
    only a window of recent preempted attempts: a count above it is noted."""
    summary = fields.record.get("preemptionSummary")
    if not isinstance(summary, Mapping):
        return 0
    recent = summary.get("recentPreemptedAttempts") or []
    count = summary.get("preemptedAttemptCount")
    if count is None:
        return len(recent) if isinstance(recent, list) else 0
    total = fields.whole(count, "preemptionSummary.preemptedAttemptCount")
    if isinstance(recent, list) and total > len(recent):
        run.note("preempted_attempts_beyond_recent_window")
    return total


__all__ = ["DEFAULT_MAPPING", "FORMAT", "read", "source_columns"]
