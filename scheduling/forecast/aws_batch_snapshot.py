"""A snapshot from AWS Batch (quota management for SageMaker Training), SEMANTICS.md section 11:

    {"list_service_jobs": [page, ...],        # aws batch list-service-jobs --job-status S, per status
     "describe_service_job": [job, ...],      # aws batch describe-service-job, per listed job
     "job_queue_snapshot": {...},             # optional: aws batch get-job-queue-snapshot
     "time": "2026-..."}                      # optional: when the pages were taken

- the jobs listed RUNNING, STARTING, SCHEDULED and RUNNABLE (other statuses are not in the queue);
  RUNNING, STARTING and SCHEDULED hold their instances (capacity is taken when a job is SCHEDULED):
  running since ``startedAt``, else ``scheduledAt`` **(choice)**; RUNNABLE: pending since ``createdAt``;
- every listed job needs its describe-service-job output: ``schedulingPriority`` (0 when absent, AWS's
  default), share = ``quotaShareName``, else ``shareIdentifier``; instance type and count from
  ``capacityUsage``, else the payload's ``ResourceConfig``; ``max_runtime_seconds`` = the payload's
  ``StoppingCondition.MaxRuntimeInSeconds``;
- the queue snapshot's ``frontOfQueue.jobs`` give the live order at the front (positions);
- T0 = ``time`` when given, else the latest time recorded (``lastUpdatedAt``, ``createdAt``,
  ``scheduledAt``, ``startedAt``) **(choice: the snapshot was taken no earlier)**.

Timestamps are epoch milliseconds. Errors name the record (page and entry, the job id) and the field.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from scheduling.errors import InputError
from scheduling.forecast.snapshot import Snapshot, SnapshotJob, check_snapshot, snapshot_time
from scheduling.model import MAX_PRIORITY
from scheduling.traces.json_fields import JsonFields

HOLDING = ("RUNNING", "STARTING", "SCHEDULED")
QUEUED = ("RUNNABLE",)
OTHER_STATUSES = ("SUBMITTED", "PENDING", "SUCCEEDED", "FAILED")
CONFIG = "serviceRequestPayload.ResourceConfig"


class _Record(JsonFields):
    def __init__(self, where: str, value: Any):
        self.where = where
        self.value = value

    def fail(self, message: str, field: str) -> InputError:
        return InputError(message, field=f"{self.where}.{field}")

    def field_millis(self, field: str, *, required: bool = False) -> float | None:
        return self.millis(self.value.get(field), field, required=required)

    def text(self, field: str) -> str | None:
        value = self.value.get(field)
        if value is None:
            return None
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{value!r} is not text", field)
        return value.strip()

    def whole(self, value: Any, field: str, minimum: int, maximum: int | None = None) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise self.fail(f"{value!r} is not a whole number", field)
        if value < minimum or (maximum is not None and value > maximum):
            bound = f"{minimum}..{maximum}" if maximum is not None else f"at least {minimum}"
            raise self.fail(f"{value!r} is outside {bound}", field)
        return int(value)


def read_aws_batch_snapshot(value: Any) -> Snapshot:
    if not isinstance(value, Mapping):
        raise InputError("must be an object {list_service_jobs, describe_service_job}", field="snapshot")
    unknown = sorted(set(value) - {"list_service_jobs", "describe_service_job", "job_queue_snapshot", "time"})
    if unknown:
        raise InputError(
            "is not a key of an AWS Batch snapshot (list_service_jobs, describe_service_job, "
            "job_queue_snapshot, time)", field=unknown[0],
        )  # fmt: skip
    listed = _listed(value.get("list_service_jobs"))
    described = _described(value.get("describe_service_job"))
    latest = -math.inf
    order: list[str] = []
    queue = value.get("job_queue_snapshot")
    if queue is not None:
        order, updated = _front_of_queue(queue)
        latest = max(latest, updated)
    jobs = []
    for job_id, (summary, status) in listed.items():
        if job_id not in described:
            raise summary.fail(
                f"job {job_id!r} is listed {status} but has no describe-service-job output (its priority and "
                "request are there)", "jobId")  # fmt: skip
        record = described[job_id]
        described_status = record.text("status")
        if described_status is not None and described_status != status:
            # the two calls were made moments apart: the later state (describe) is the truer one
            status = described_status
        if status not in HOLDING + QUEUED:
            continue
        for field in ("createdAt", "scheduledAt", "startedAt"):
            t = record.field_millis(field)
            if t is not None:
                latest = max(latest, t)
        jobs.append((record, status))
    t0 = snapshot_time(value, latest, "no time: no job and no time key")
    running: list[SnapshotJob] = []
    pending: list[SnapshotJob] = []
    for record, status in jobs:
        job = _job(record, status, t0)
        (running if job.running else pending).append(job)
    snapshot = Snapshot(t0, running, pending, order, True)
    check_snapshot(snapshot)
    return snapshot


def _listed(pages: Any) -> dict[str, tuple[_Record, str]]:
    if not isinstance(pages, list) or not pages:
        raise InputError("must be a list of list-service-jobs pages", field="list_service_jobs")
    out: dict[str, tuple[_Record, str]] = {}
    for p, page in enumerate(pages):
        if not isinstance(page, Mapping) or not isinstance(page.get("jobSummaryList"), list):
            raise InputError("is not a list-service-jobs page {jobSummaryList: [...]}",
                             field=f"list_service_jobs[{p}]")  # fmt: skip
        for j, summary in enumerate(page["jobSummaryList"]):
            where = f"list_service_jobs[{p}].jobSummaryList[{j}]"
            if not isinstance(summary, Mapping):
                raise InputError("must be a job summary object", field=where)
            record, job_id = _job_record(where, summary)
            status = record.text("status")
            if status not in HOLDING + QUEUED + OTHER_STATUSES:
                raise record.fail(f"{status!r} is not a service job status", "status")
            if job_id in out:
                raise record.fail(f"job {job_id!r} is listed twice (also {out[job_id][0].where})", "jobId")
            out[job_id] = (record, status)
    return out


def _described(jobs: Any) -> dict[str, _Record]:
    if jobs is None:
        jobs = []
    if not isinstance(jobs, list):
        raise InputError("must be a list of describe-service-job outputs", field="describe_service_job")
    out: dict[str, _Record] = {}
    for i, job in enumerate(jobs):
        where = f"describe_service_job[{i}]"
        if not isinstance(job, Mapping):
            raise InputError("must be a describe-service-job object", field=where)
        record, job_id = _job_record(where, job)
        if job_id in out:
            raise record.fail(f"job {job_id!r} is described twice", "jobId")
        out[job_id] = record
    return out


def _job_record(where: str, value: Mapping[str, Any]) -> tuple[_Record, str]:
    """A job's record, named in messages by its place and its jobId (which it must have)."""
    record = _Record(where, value)
    job_id = record.text("jobId")
    if job_id is None:
        raise record.fail("is missing", "jobId")
    record.where = f"{where} (job {job_id!r})"
    return record, job_id


def _front_of_queue(value: Any) -> tuple[list[str], float]:
    record = _Record("job_queue_snapshot", value)
    if not isinstance(value, Mapping):
        raise InputError("must be the get-job-queue-snapshot output", field="job_queue_snapshot")
    front = value.get("frontOfQueue")
    if not isinstance(front, Mapping) or not isinstance(front.get("jobs", []), list):
        raise record.fail("must be an object {jobs: [...], lastUpdatedAt}", "frontOfQueue")
    front_record = _Record("job_queue_snapshot.frontOfQueue", front)
    updated = front_record.field_millis("lastUpdatedAt")
    order = []
    for i, entry in enumerate(front.get("jobs", [])):
        item = _Record(f"job_queue_snapshot.frontOfQueue.jobs[{i}]", entry)
        if not isinstance(entry, Mapping):
            raise InputError("must be an object {jobArn, earliestTimeAtPosition}", field=item.where)
        arn = item.text("jobArn")
        if arn is None:
            raise item.fail("is missing", "jobArn")
        order.append(arn.rsplit("/", 1)[-1])
    return order, -math.inf if updated is None else updated


def _job(record: _Record, status: str, t0: float) -> SnapshotJob:
    value = record.value
    job_id = record.text("jobId")
    assert job_id is not None
    share = record.text("quotaShareName") or record.text("shareIdentifier")
    if share is None:
        raise record.fail("is missing: a quota-managed job has a share", "shareIdentifier")
    created = record.field_millis("createdAt", required=True)
    assert created is not None
    priority = value.get("schedulingPriority")
    priority = 0 if priority is None else record.whole(priority, "schedulingPriority", 0, MAX_PRIORITY)
    payload = _payload(record)
    instance_type, count = _capacity(record, payload)
    stopping = payload.get("StoppingCondition")
    limit = None
    if stopping is not None:
        if not isinstance(stopping, Mapping):
            raise record.fail("must be an object", "serviceRequestPayload.StoppingCondition")
        if stopping.get("MaxRuntimeInSeconds") is not None:
            where = "serviceRequestPayload.StoppingCondition.MaxRuntimeInSeconds"
            limit = float(record.whole(stopping["MaxRuntimeInSeconds"], where, 1))
    started = None
    if status in HOLDING:
        started = record.field_millis("startedAt") or record.field_millis("scheduledAt")
        if started is None:
            raise record.fail(f"is missing: a {status} job holds capacity since it", "startedAt")
        if started > t0:
            raise record.fail("is after the snapshot's time", "startedAt")
    tags = value.get("tags")
    user = tags.get("user") if isinstance(tags, Mapping) and isinstance(tags.get("user"), str) else None
    return SnapshotJob(
        job_id=job_id,
        share=share,
        instance_type=instance_type,
        instance_count=count,
        priority=priority,
        started_at=started,
        submit_time=min(created, started if started is not None else t0),
        max_runtime_seconds=limit,
        user=user,
        name=record.text("jobName"),
    )


def _payload(record: _Record) -> Mapping[str, Any]:
    text = record.value.get("serviceRequestPayload")
    if text is None:
        return {}
    if not isinstance(text, str):
        raise record.fail("must be the request as a JSON string", "serviceRequestPayload")
    try:
        payload = json.loads(text)
    except (ValueError, RecursionError) as error:
        raise record.fail(f"is not JSON: {str(error)[:80]}", "serviceRequestPayload") from None
    if not isinstance(payload, Mapping):
        raise record.fail("must be a JSON object", "serviceRequestPayload")
    return payload


def _capacity(record: _Record, payload: Mapping[str, Any]) -> tuple[str, int]:
    config = payload.get("ResourceConfig")
    kind = count = None
    if config is not None:
        if not isinstance(config, Mapping):
            raise record.fail("must be an object", "serviceRequestPayload.ResourceConfig")
        kind = config.get("InstanceType")
        if kind is not None and (not isinstance(kind, str) or not kind):
            raise record.fail(f"{kind!r} is not an instance type", f"{CONFIG}.InstanceType")
        if config.get("InstanceCount") is not None:
            count = record.whole(config["InstanceCount"], f"{CONFIG}.InstanceCount", 1)
    usage = record.value.get("capacityUsage")
    if usage:
        if not isinstance(usage, list):
            raise record.fail("must be a list of {capacityUnit, quantity}", "capacityUsage")
        types: dict[str, int] = {}
        for i, entry in enumerate(usage):
            where = f"capacityUsage[{i}]"
            if not isinstance(entry, Mapping) or not isinstance(entry.get("capacityUnit"), str):
                raise record.fail("must be an object {capacityUnit, quantity}", where)
            quantity = record.whole(entry.get("quantity"), f"{where}.quantity", 0)
            unit = entry["capacityUnit"]
            name = kind if unit == "NUM_INSTANCES" else unit
            if name is None:
                raise record.fail("NUM_INSTANCES, no InstanceType in the payload", f"{where}.capacityUnit")
            if quantity:
                types[name] = types.get(name, 0) + quantity
        if len(types) > 1:
            raise record.fail(f"uses several instance types ({', '.join(sorted(types))})", "capacityUsage")
        if types:
            return next(iter(types.items()))
    if kind is None or count is None:
        raise record.fail("names no capacity: neither capacityUsage nor ResourceConfig InstanceType and "
                          "InstanceCount", "serviceRequestPayload.ResourceConfig")  # fmt: skip
    return kind, count
