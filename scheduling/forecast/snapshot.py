"""A queue snapshot (SEMANTICS.md section 11): the pool at one instant T0, its running jobs and its
pending (RUNNABLE) jobs, in the planner's JSON form, and the reader that checks it.

Every error names the record (``running[2]``, ``pending[0]``, with the job id when it is known) and
the field, so that a person can fix the file; nothing is guessed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES, MAX_PRIORITY, Policy
from scheduling.traces.fields import (
    is_absent,
    parse_optional_int,
    parse_optional_seconds,
    parse_optional_text,
    parse_text,
    parse_time,
)

RUNNING = "RUNNING"
RUNNABLE = "RUNNABLE"
MAX_SNAPSHOT_JOBS = 50_000  # running and pending together: far above a real queue, bounded for the service
RUNNING_KEYS = frozenset({
    "job_id", "share", "instance_type", "instance_count", "priority", "started_at", "max_runtime_seconds",
    "checkpoint_interval", "remaining_seconds", "submit_time", "user", "name",
})  # fmt: skip
PENDING_KEYS = frozenset({
    "job_id", "share", "instance_type", "instance_count", "priority", "submit_time", "max_runtime_seconds",
    "checkpoint_interval", "duration", "user", "name",
})  # fmt: skip

FIELD_ORDER = (
    "job_id", "share", "instance_type", "instance_count", "priority", "started_at", "submit_time",
    "max_runtime_seconds", "checkpoint_interval", "remaining_seconds", "duration", "user", "name",
)  # fmt: skip


@dataclass(frozen=True)
class SnapshotJob:
    """One job of a snapshot. Running: ``started_at`` (its current run's start) and optionally
    ``remaining_seconds``; pending: ``submit_time`` and optionally ``duration``. A running job's
    ``submit_time`` (an extension: live systems know it) keeps its place in the queue when it is
    preempted; absent, it is taken as ``started_at`` **(choice)**."""

    job_id: str
    share: str
    instance_type: str | None  # None: the pool's one type
    instance_count: int = 1
    priority: int = 0
    started_at: float | None = None
    submit_time: float | None = None
    max_runtime_seconds: float | None = None
    checkpoint_interval: float | None = None
    remaining_seconds: float | None = None
    duration: float | None = None
    user: str | None = None
    name: str | None = None

    @property
    def running(self) -> bool:
        return self.started_at is not None

    @property
    def queued_since(self) -> float:
        """Its submit time (a running job's, when not given, is its start)."""
        if self.submit_time is not None:
            return self.submit_time
        assert self.started_at is not None
        return self.started_at

    def to_json(self) -> dict[str, Any]:
        keys = RUNNING_KEYS if self.running else PENDING_KEYS
        out: dict[str, Any] = {}
        for key in FIELD_ORDER:
            value = getattr(self, key)
            if key in keys and value is not None:
                out[key] = value
        return out


@dataclass(frozen=True)
class Snapshot:
    """The pool at ``time`` (T0). ``queue_order``: job ids at the front of the queue in the live
    system's order (AWS Batch ``get-job-queue-snapshot``), when known: it gives those jobs'
    ``position``; the replay still orders the queue by section 4's rules."""

    time: float
    running: list[SnapshotJob]
    pending: list[SnapshotJob]
    queue_order: list[str] = field(default_factory=list)
    epoch_times: bool = False  # times were ISO-8601 timestamps (Unix seconds)

    @property
    def jobs(self) -> list[SnapshotJob]:
        return self.running + self.pending

    def __len__(self) -> int:
        return len(self.running) + len(self.pending)


def snapshot_to_json(snapshot: Snapshot) -> dict[str, Any]:
    """The planner's snapshot JSON; ``read_snapshot`` of it gives the same Snapshot back."""
    out: dict[str, Any] = {
        "time": snapshot.time,
        "running": [job.to_json() for job in snapshot.running],
        "pending": [job.to_json() for job in snapshot.pending],
    }
    if snapshot.queue_order:
        out["queue_order"] = list(snapshot.queue_order)
    if snapshot.epoch_times:
        out["epoch_times"] = True
    return out


def parse_planner_snapshot(value: Any) -> Snapshot:
    if not isinstance(value, dict):
        raise InputError("must be a JSON object {time, running, pending}", field="snapshot")
    unknown = sorted(set(value) - {"time", "running", "pending", "queue_order", "epoch_times"})
    if unknown:
        raise InputError(f"unknown key {unknown[0]!r}", field="snapshot")
    if "time" not in value:
        raise InputError("is missing: the snapshot's instant T0", field="time")
    time, epoch = parse_time(value["time"], None, "time")
    epoch = epoch or bool(value.get("epoch_times", False))
    running = [_job(raw, i, "running", time) for i, raw in enumerate(_list(value, "running"))]
    pending = [_job(raw, i, "pending", time) for i, raw in enumerate(_list(value, "pending"))]
    order = value.get("queue_order", [])
    if not isinstance(order, list) or not all(isinstance(x, str) for x in order):
        raise InputError("must be a list of job ids", field="queue_order")
    snapshot = Snapshot(time, running, pending, list(order), epoch)
    check_snapshot(snapshot)
    return snapshot


def _list(value: dict, key: str) -> list:
    raw = value.get(key, [])
    if not isinstance(raw, list):
        raise InputError("must be a list of jobs", field=key)
    return raw


def _job(raw: Any, index: int, section: str, t0: float) -> SnapshotJob:
    where = f"{section}[{index}]"
    if not isinstance(raw, dict):
        raise InputError("must be a JSON object", field=where)
    if isinstance(raw.get("job_id"), (str, int)) and not isinstance(raw.get("job_id"), bool):
        where = f"{where} (job {str(raw['job_id'])!r})"
    keys = RUNNING_KEYS if section == "running" else PENDING_KEYS
    unknown = sorted(set(raw) - keys)
    if unknown:
        raise InputError(f"unknown key for a {section} job", field=f"{where}.{unknown[0]}")

    def get(key: str) -> Any:
        return raw.get(key)

    def at(key: str) -> str:
        return f"{where}.{key}"

    for key in ("job_id", "share"):
        if is_absent(get(key)):
            raise InputError("is missing", field=at(key))
    started_at = submit_time = None
    if section == "running":
        if is_absent(get("started_at")):
            raise InputError("is missing: a running job's current run start", field=at("started_at"))
        started_at = parse_time(get("started_at"), None, at("started_at"))[0]
        if started_at > t0:
            raise InputError(f"{started_at:g} is after the snapshot's time {t0:g}", field=at("started_at"))
        if not is_absent(get("submit_time")):
            submit_time = parse_time(get("submit_time"), None, at("submit_time"))[0]
            if submit_time > started_at:
                raise InputError(
                    f"{submit_time:g} is after started_at {started_at:g}", field=at("submit_time")
                )
    else:
        if is_absent(get("submit_time")):
            raise InputError("is missing: a pending job's submit time", field=at("submit_time"))
        submit_time = parse_time(get("submit_time"), None, at("submit_time"))[0]
        if submit_time > t0:
            raise InputError(f"{submit_time:g} is after the snapshot's time {t0:g}", field=at("submit_time"))
    count = parse_optional_int(
        get("instance_count"), None, at("instance_count"), minimum=1, maximum=MAX_INSTANCES
    )
    priority = parse_optional_int(get("priority"), None, at("priority"), minimum=0, maximum=MAX_PRIORITY)
    return SnapshotJob(
        job_id=parse_text(get("job_id"), None, at("job_id")),
        share=parse_text(get("share"), None, at("share")),
        instance_type=parse_optional_text(get("instance_type"), None, at("instance_type")),
        instance_count=1 if count is None else count,
        priority=0 if priority is None else priority,
        started_at=started_at,
        submit_time=submit_time,
        max_runtime_seconds=parse_optional_seconds(
            get("max_runtime_seconds"), None, at("max_runtime_seconds"), allow_zero=False
        ),
        checkpoint_interval=parse_optional_seconds(
            get("checkpoint_interval"), None, at("checkpoint_interval"), allow_zero=False
        ),
        remaining_seconds=parse_optional_seconds(get("remaining_seconds"), None, at("remaining_seconds")),
        duration=parse_optional_seconds(get("duration"), None, at("duration"), allow_zero=False),
        user=parse_optional_text(get("user"), None, at("user")),
        name=parse_optional_text(get("name"), None, at("name")),
    )


def snapshot_time(value: Mapping[str, Any], latest: float, missing: str) -> float:
    """T0 of a scheduler's snapshot: its ``time`` key when the file carries one (the planner's
    addition: the schedulers' own outputs have none), else ``latest``, the latest time the file
    records **(choice: the snapshot was taken no earlier)**; ``missing`` when there is neither."""
    if "time" in value:
        return parse_time(value["time"], None, "time")[0]
    if latest > -math.inf:
        return latest
    raise InputError(missing, field="time")


def check_snapshot(snapshot: Snapshot) -> None:
    """Whole-snapshot rules: unique job ids, a bounded size, a finite instant."""
    if not math.isfinite(snapshot.time):
        raise InputError("is not a finite time", field="time")
    if len(snapshot) > MAX_SNAPSHOT_JOBS:
        raise InputError(f"has {len(snapshot):,} jobs: the limit is {MAX_SNAPSHOT_JOBS:,}", field="snapshot")
    seen: dict[str, str] = {}
    for section, jobs in (("running", snapshot.running), ("pending", snapshot.pending)):
        for i, job in enumerate(jobs):
            where = f"{section}[{i}]"
            if job.job_id in seen:
                raise InputError(
                    f"duplicate job_id {job.job_id!r} (also {seen[job.job_id]})", field=f"{where}.job_id"
                )
            seen[job.job_id] = where


def default_type(policy: Policy, share_name: str) -> str | None:
    """The type of a job that names none: the pool's one type, else the first type (in the policy's
    order) its share has quota of, None when there is no such type."""
    type_names = list(policy.instance_types)
    if len(type_names) == 1:
        return type_names[0]
    share = policy.share(share_name)
    return next((t for t in type_names if share.quota(t) > 0), None)


def bind_snapshot(snapshot: Snapshot, policy: Policy) -> Snapshot:
    """Check that the snapshot's shares and types are the policy's, and name the type of a job that
    left it out: the pool's one type, else the first type (in the policy's order) its share has
    quota of **(choice: a Kueue workload not admitted has no flavor yet, and Kueue tries its
    ClusterQueue's flavors in order)**."""
    type_names = list(policy.instance_types)
    share_names = {s.name for s in policy.shares}
    running: list[SnapshotJob] = []
    pending: list[SnapshotJob] = []
    sections = (("running", snapshot.running, running), ("pending", snapshot.pending, pending))
    for section, jobs, out in sections:
        for i, job in enumerate(jobs):
            where = f"{section}[{i}] (job {job.job_id!r})"
            if job.share not in share_names:
                raise InputError(f"unknown share {job.share!r}: not in the policy", field=f"{where}.share")
            if job.instance_type is None:
                chosen = default_type(policy, job.share)
                if chosen is None:
                    raise InputError(
                        "is missing: the pool has several instance types and its share has quota of none",
                        field=f"{where}.instance_type",
                    )
                job = replace(job, instance_type=chosen)
            elif job.instance_type not in type_names:
                raise InputError(
                    f"unknown instance type {job.instance_type!r}: not in the policy",
                    field=f"{where}.instance_type",
                )
            out.append(job)
    return replace(snapshot, running=running, pending=pending)
