"""A cut of a replay at one instant: the pool's queue snapshot (SEMANTICS.md section 11's planner
JSON) and the week of the trace before it, for "the demo pool now". Pure: numpy and the engine's
types, no Django. Durations are left out on purpose: the forecast draws them from the history, as
it would for a live pool, instead of being handed what the replay knows will happen."""

from __future__ import annotations

import math

import numpy as np

from scheduling.result import EventKind, ReplayResult
from scheduling.trace import NO_TYPE, PriorityUpdates, Trace

WEEK = 7 * 86_400.0


def busiest_instant(trace: Trace, result: ReplayResult, after: float) -> float:
    """The submit time, at least ``after``, at which the most jobs are waiting (submitted, not yet
    started: counted from first starts, the ITP replay preempts nobody); the earliest of ties."""
    submit = np.sort(trace.submit_time)
    first = result.outcomes.first_start
    starts = np.sort(np.where(np.isnan(first), np.inf, first))
    times = np.unique(trace.submit_time[trace.submit_time >= after])
    if times.size == 0:
        raise ValueError(f"no job is submitted after {after:,.0f} s")
    waiting = np.searchsorted(submit, times, "right") - np.searchsorted(starts, times, "right")
    return float(times[int(np.argmax(waiting))])


def _job(trace: Trace, i: int, ids: list[str]) -> dict:
    job: dict = {
        "job_id": ids[i],
        "share": trace.share_names[trace.share[i]],
        "instance_count": int(trace.instance_count[i]),
        "priority": int(trace.priority[i]),
    }
    if trace.instance_type[i] != NO_TYPE:
        job["instance_type"] = trace.type_names[trace.instance_type[i]]
    if not math.isnan(trace.checkpoint_interval[i]):
        job["checkpoint_interval"] = float(trace.checkpoint_interval[i])
    if trace.user is not None and trace.user[i]:
        job["user"] = trace.user[i]
    return job


def snapshot_at(trace: Trace, result: ReplayResult, t0: float) -> dict:
    """The queue at ``t0`` as the replay (``record_events=True``) left it: a job whose last event at
    or before ``t0`` is a start is running since then; a job submitted by ``t0`` that has not
    started, or was preempted, is pending; finished, failed, cancelled or unschedulable jobs are gone."""
    if result.events is None:
        raise ValueError("the replay must record its events")
    last: dict[int, tuple[EventKind, float]] = {}
    for time, job, kind, _cause, _by in result.events:
        if time > t0:
            break
        last[job] = (kind, time)
    ids = trace.job_id.to_list()
    running, pending = [], []
    for i in np.flatnonzero(trace.submit_time <= t0).tolist():
        kind, time = last.get(i, (None, 0.0))
        if kind == EventKind.START:
            # submit_time too: a preempted job keeps its place in the queue (live systems know it)
            running.append(
                {**_job(trace, i, ids), "started_at": float(time), "submit_time": float(trace.submit_time[i])}
            )
        elif kind in (None, EventKind.PREEMPT):
            pending.append({**_job(trace, i, ids), "submit_time": float(trace.submit_time[i])})
    return {"time": float(t0), "running": running, "pending": pending}


def rows(trace: Trace, keep: np.ndarray) -> Trace:
    """The jobs of ``trace`` where ``keep`` (a boolean mask) is true, with their priority updates."""
    where = np.flatnonzero(keep)
    ids = trace.job_id.take(where)
    kept = set(ids)
    updates = [k for k, job in enumerate(trace.updates.job_id) if job in kept]
    return Trace(
        job_id=ids,
        submit_time=trace.submit_time[where],
        share=trace.share[where],
        share_names=list(trace.share_names),
        priority=trace.priority[where],
        instance_type=trace.instance_type[where],
        type_names=list(trace.type_names),
        instance_count=trace.instance_count[where],
        duration=trace.duration[where],
        checkpoint_interval=trace.checkpoint_interval[where],
        preemption_retries=trace.preemption_retries[where],
        user=[trace.user[i] for i in where] if trace.user is not None else None,
        name=[trace.name[i] for i in where] if trace.name is not None else None,
        updates=PriorityUpdates(
            trace.updates.time[updates],
            [trace.updates.job_id[k] for k in updates],
            trace.updates.priority[updates],
        ),
        epoch_times=trace.epoch_times,
    )


def week_before(trace: Trace, t0: float) -> Trace:
    """The jobs submitted in the seven days before ``t0``: the history a forecast at ``t0`` may know."""
    return rows(trace, (trace.submit_time >= t0 - WEEK) & (trace.submit_time < t0))
