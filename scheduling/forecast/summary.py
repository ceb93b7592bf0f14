"""FORECAST.json (SEMANTICS.md section 11): the samples' quantiles per snapshot job, with its
place in the queue and why it waits at T0, and the two baselines it is judged by."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scheduling.binding import job_id_order
from scheduling.errors import InputError
from scheduling.forecast.arrivals import no_arrivals
from scheduling.forecast.durations import NO_DURATION, requested_time
from scheduling.forecast.inputs import ForecastInputs
from scheduling.forecast.samples import Prepared, SampleStarts, run_samples
from scheduling.model import Queueing, WaitReason
from scheduling.outcomes import REASONS, State
from scheduling.replay.engine import replay
from scheduling.replay.rules import instances, wait_reason
from scheduling.trace import Trace

QUANTILES = (("p10", 0.10), ("p50", 0.50), ("p90", 0.90))
WITHIN = (("1h", 3_600.0), ("24h", 86_400.0))
CANCELLED_AT_T0 = "runnable_timeout"  # section 10's limit ran out before T0


def forecast(inputs: ForecastInputs) -> dict[str, Any]:
    return merge_samples(inputs, [run_samples(inputs, 0, inputs.samples)])


def merge_samples(inputs: ForecastInputs, parts: list[SampleStarts]) -> dict[str, Any]:
    """The chunks of samples (in any order, together 0..samples-1) as FORECAST.json."""
    parts = sorted(parts, key=lambda p: p.first)
    expected = 0
    for part in parts:
        if part.first != expected:
            raise ValueError(f"the chunks do not cover the samples: sample {expected} is missing")
        expected += part.count
    if expected != inputs.samples:
        raise ValueError(f"the chunks hold {expected} samples, not {inputs.samples}")
    prepared = Prepared(inputs)
    for part in parts:
        if part.job_ids != prepared.job_ids:
            raise ValueError("a chunk was made from another snapshot")
    n = prepared.n
    start = np.concatenate([p.start for p in parts]) if parts else np.zeros((0, n))
    end = np.concatenate([p.end for p in parts]) if parts else np.zeros((0, n))
    positions = queue_positions(prepared)
    reasons = reasons_at_t0(prepared)
    requested = requested_time_starts(prepared)
    share_wait = share_median_wait_starts(prepared)
    t0 = prepared.t0
    jobs = []
    for k, job in enumerate(prepared.snapshot.jobs):
        jobs.append({
            "job_id": job.job_id,
            "share": job.share,
            "user": job.user,
            "instance_type": job.instance_type,
            "instance_count": job.instance_count,
            "priority": job.priority,
            "state": "RUNNING" if job.running else "RUNNABLE",
            "position": positions.get(k),
            "reason": NO_DURATION if prepared.no_duration[k] else reasons[k],
            "start": quantiles(start[:, k]),
            "end": quantiles(end[:, k]),
            "p_start_within": {
                label: (None if prepared.no_duration[k] else _fraction(start[:, k], t0 + seconds))
                for label, seconds in WITHIN
            },
            "baselines": {
                "requested_time": _number(requested[k]), "share_median_wait": _number(share_wait[k]),
            },
        })  # fmt: skip
    return {
        "time": t0,
        "samples": inputs.samples,
        "seed": inputs.seed,
        "arrivals": inputs.arrivals,
        "horizon_days": inputs.horizon_days,
        "duration_window_days": inputs.duration_window_days,
        "jobs": jobs,
    }


def quantiles(values: np.ndarray) -> dict[str, float | None]:
    """p10/p50/p90 of a job's sampled times, a sample where it did not happen before the horizon
    counting as later than all: the empirical quantile (the ceil(q K)-th smallest of K), null
    when fewer than that share of the samples saw it."""
    k = len(values)
    ordered = np.sort(np.where(np.isnan(values), math.inf, values))
    out: dict[str, float | None] = {}
    for name, q in QUANTILES:
        if k == 0:
            out[name] = None
            continue
        value = float(ordered[max(0, math.ceil(q * k - 1e-9) - 1)])
        out[name] = value if math.isfinite(value) else None
    return out


def _fraction(starts: np.ndarray, by: float) -> float:
    return float(np.mean(starts <= by)) if len(starts) else 0.0


def _number(value: float) -> float | None:
    return None if value != value else float(value)


def queue_positions(prepared: Prepared) -> dict[int, int]:
    """Per pending job (its index in the snapshot's jobs), its 1-based place in its share's queue
    at T0: the live order given (``queue_order``) first, then priority (higher first), submit time,
    job_id."""
    jobs = prepared.snapshot.jobs
    ranks = job_id_order(prepared.job_ids)
    live = {job_id: i for i, job_id in enumerate(prepared.snapshot.queue_order)}
    by_share: dict[str, list[int]] = {}
    for k, job in enumerate(jobs):
        if not job.running:
            by_share.setdefault(job.share, []).append(k)
    out: dict[int, int] = {}
    for members in by_share.values():
        members.sort(key=lambda k: (
            live.get(jobs[k].job_id, len(live)), -jobs[k].priority, jobs[k].queued_since, int(ranks[k])
        ))  # fmt: skip
        for place, k in enumerate(members, start=1):
            out[k] = place
    return out


def reasons_at_t0(prepared: Prepared) -> list[str | None]:
    """Why each job waits once T0's pass is over (None when it runs): section 6's reason for one that
    can never run, else the first limit it runs into (WaitReason, lower case; behind_queue_head
    under strict_fifo behind its share's first job). The pass at T0 does not depend on durations
    or arrivals, so one replay stopped at T0 tells for all samples."""
    durations = np.where(prepared.no_duration, prepared.hold, 1.0)  # (only finishes at T0 matter)
    for k, rule in enumerate(prepared.rules):
        if rule.pool is None and not math.isnan(rule.fixed) and rule.fixed == 0.0:
            durations[k] = 0.0  # ends at T0: it frees its instances for T0's pass
    _, _, states, reason_codes = prepared.replay(durations, no_arrivals(), np.zeros(0), prepared.t0)
    policy = prepared.policy
    n_types = len(prepared.type_names)
    usage = np.zeros((len(policy.shares), n_types), dtype=np.int64)
    running = states == int(State.RUNNING)
    np.add.at(usage, (prepared.share[running], prepared.type[running]), prepared.count[running])
    used = usage.sum(axis=0)
    strict = policy.queueing is Queueing.STRICT_FIFO
    positions = queue_positions(prepared)
    first_waiting: dict[int, int] = {}
    if strict:
        waiting = [k for k in positions if states[k] == int(State.RUNNABLE)]
        for k in sorted(waiting, key=lambda k: positions[k]):
            first_waiting.setdefault(int(prepared.share[k]), k)
    out: list[str | None] = []
    for k in range(prepared.n):
        state = int(states[k])
        if state == int(State.UNSCHEDULABLE):
            out.append(REASONS[int(reason_codes[k])])
        elif state == int(State.CANCELLED):
            out.append(CANCELLED_AT_T0)
        elif state != int(State.RUNNABLE):
            out.append(None)
        elif strict and first_waiting.get(int(prepared.share[k])) != k:
            out.append(WaitReason.BEHIND_QUEUE_HEAD.name.lower())
        else:
            s, t = int(prepared.share[k]), int(prepared.type[k])
            share = policy.shares[s]
            type_name = prepared.type_names[t]
            code = wait_reason(
                int(prepared.count[k]), int(usage[s, t]), share.quota(type_name),
                float(instances(share.borrow_limit(type_name))), share.strategy.borrows, int(used[t]),
                int(policy.capacity.get(type_name, 0)),
            )  # fmt: skip
            out.append(WaitReason(code).name.lower())
    return out


def requested_time_starts(prepared: Prepared) -> np.ndarray:
    """The requested_time baseline: one replay, no arrivals, every job running its
    max_runtime_seconds, else its class's p90 duration in the history (what ``squeue --start``
    does); a running job's start is its started_at."""
    startup = prepared.policy.startup_seconds
    durations = np.array(
        [requested_time(job, prepared.t0, startup, prepared.history) for job in prepared.snapshot.jobs]
    )
    unknown = np.isnan(durations)
    durations[unknown] = prepared.hold
    start, _, _, _ = prepared.replay(durations, no_arrivals(), np.zeros(0), prepared.until)
    running = ~np.isnan(prepared.started_at)
    start[running] = prepared.started_at[running]
    start[unknown & ~running] = math.nan
    return start


def share_median_wait_starts(prepared: Prepared) -> np.ndarray:
    """The share_median_wait baseline: T0 + the median wait of the job's share in the history
    (else of the whole history) minus the time it has already waited, at least T0; a running job's
    start is its started_at. Waits are the history's recorded starts where it has them, else those
    of one replay of the history under the policy."""
    t0 = prepared.t0
    out = np.full(prepared.n, math.nan)
    medians = history_median_waits(prepared.inputs.history, prepared.inputs.policy)
    for k, job in enumerate(prepared.snapshot.jobs):
        if job.running:
            out[k] = job.started_at
            continue
        median = medians.get(job.share, medians.get("", math.nan))
        if median == median:
            out[k] = max(t0, job.queued_since + median)
    return out


def history_median_waits(history: Trace | None, policy: Any) -> dict[str, float]:
    """Median wait per share name ("" for the whole history)."""
    if history is None or not len(history):
        return {}
    submit = np.asarray(history.submit_time, dtype=np.float64)
    recorded = history.recorded_start
    if recorded is not None and np.isfinite(recorded).any():
        wait = np.asarray(recorded, dtype=np.float64) - submit
    else:
        try:
            result = replay(policy, history)
        except InputError:  # a history the policy cannot replay: no baseline rather than no forecast
            return {}
        wait = result.outcomes.first_start - submit
    ok = np.isfinite(wait)
    out: dict[str, float] = {}
    if ok.any():
        out[""] = float(np.median(wait[ok]))
    for code, name in enumerate(history.share_names):
        mine = ok & (history.share == code)
        if mine.any():
            out[name] = float(np.median(wait[mine]))
    return out
