"""Commons games: the ways teams can game a lend/borrow pool, measured on a trace and a replay.

Priority inflation (more and more jobs at top priority), job splitting (bursts of small jobs where
one large job would do) and RESERVE hoarding (reserved quota idle while others wait). Every result
is a JSON-able dict whose size does not grow with the number of jobs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduling.errors import InputError
from scheduling.trace import Trace

WEEK = 7 * 86400.0
MAX_PERIODS = 260  # priority-mix columns; a longer trace gets periods of several weeks
HIGH_PERCENTILE = 90.0
T_GROWING = 2.0  # |t| of the least-squares slope above which a trend counts as real
MIN_TREND_PERIODS = 4
TREND_METHOD = (
    "least-squares slope of the weekly fraction against the week number, over the weeks the share "
    f"submitted jobs; growing when the slope is positive and its t-statistic (slope / standard error) "
    f"is at least {T_GROWING:g} over at least {MIN_TREND_PERIODS} weeks (about p < 0.05, one-sided)"
)


# -- priority inflation ------------------------------------------------------------------------


def slope_trend(y: np.ndarray) -> dict[str, Any]:
    """Least-squares slope of ``y`` against 0, 1, 2, ... with its t-statistic.

    ``t`` is None when it is undefined (fewer than 3 points, or a perfect fit: the slope is then
    exact); ``growing`` needs a positive slope, ``MIN_TREND_PERIODS`` points and ``t >= T_GROWING``
    (or an exact positive slope)."""
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if n < 2:
        return {"slope": 0.0, "t": None, "points": n, "growing": False}
    x = np.arange(n, dtype=np.float64)
    dx = x - x.mean()
    sxx = float(dx @ dx)
    slope = float(dx @ (y - y.mean())) / sxx
    t = None
    if n >= 3:
        residuals = y - y.mean() - slope * dx
        variance = float(residuals @ residuals) / (n - 2)
        if variance > 1e-24:
            t = slope / math.sqrt(variance / sxx)
    exact = t is None and n >= 3
    growing = n >= MIN_TREND_PERIODS and slope > 1e-12 and (exact or (t is not None and t >= T_GROWING))
    return {"slope": slope, "t": t, "points": n, "growing": bool(growing)}


def priority_inflation(trace: Trace, *, period_seconds: float = WEEK) -> dict[str, Any]:
    """Per share and week: jobs submitted, jobs at the trace's top priority (the highest value
    present) and jobs at or above the trace's 90th-percentile priority; the fractions, and whether
    each fraction grows (``slope_trend`` over the weeks the share submitted jobs)."""
    if period_seconds <= 0:
        raise InputError(f"period_seconds: {period_seconds} is not positive", field="period_seconds")
    n = len(trace)
    result: dict[str, Any] = {
        "jobs": n,
        "top_priority": None,
        "high_priority": None,
        "high_percentile": HIGH_PERCENTILE,
        "period_seconds": period_seconds,
        "periods": [],
        "epoch_times": trace.epoch_times,
        "method": TREND_METHOD,
        "shares": {},
    }
    if n == 0:
        return result
    submit = np.asarray(trace.submit_time, dtype=np.float64)
    priority = np.asarray(trace.priority, dtype=np.int64)
    share = np.asarray(trace.share, dtype=np.int64)
    start = float(submit.min())
    span = float(submit.max()) - start
    weeks_per_period = max(1, math.ceil((math.floor(span / period_seconds) + 1) / MAX_PERIODS))
    width = period_seconds * weeks_per_period
    column = np.minimum((submit - start) // width, MAX_PERIODS - 1).astype(np.int64)
    columns = int(column.max()) + 1
    top = int(priority.max())
    high = int(np.percentile(priority, HIGH_PERCENTILE, method="lower"))
    result.update(
        top_priority=top,
        high_priority=high,
        period_seconds=width,
        periods=[start + width * k for k in range(columns)],
    )
    shares = len(trace.share_names)
    cell = share * columns + column
    size = shares * columns
    jobs = np.bincount(cell, minlength=size).reshape(shares, columns)
    at_top = np.bincount(cell[priority == top], minlength=size).reshape(shares, columns)
    at_high = np.bincount(cell[priority >= high], minlength=size).reshape(shares, columns)
    for code, name in enumerate(trace.share_names):
        submitted = jobs[code]
        if not submitted.any():
            continue
        active = submitted > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            top_fraction = np.where(active, at_top[code] / np.maximum(submitted, 1), np.nan)
            high_fraction = np.where(active, at_high[code] / np.maximum(submitted, 1), np.nan)
        result["shares"][name] = {
            "jobs": submitted.tolist(),
            "top": at_top[code].tolist(),
            "high": at_high[code].tolist(),
            "top_fraction": [None if math.isnan(v) else float(v) for v in top_fraction],
            "high_fraction": [None if math.isnan(v) else float(v) for v in high_fraction],
            "total": {
                "jobs": int(submitted.sum()),
                "top": int(at_top[code].sum()),
                "high": int(at_high[code].sum()),
            },
            "trend": {
                "top": slope_trend(top_fraction[active]),
                "high": slope_trend(high_fraction[active]),
            },
        }
    return result


# -- job splitting -----------------------------------------------------------------------------


def job_splitting(
    trace: Trace,
    *,
    window_seconds: float = 60.0,
    min_jobs: int = 8,
    max_instances: int = 2,
    gpus_per_type: Mapping[str, int] | None = None,
    top: int = 20,
) -> dict[str, Any]:
    """Bursts: ``min_jobs`` or more jobs of at most ``max_instances`` instances each, submitted by
    one user (one share when the trace has no users) to one share and instance type within
    ``window_seconds`` of the burst's first job, whose instances together would fit one job as large
    as the largest job of that instance type in the trace.

    Windows are taken greedily: a burst starts at a user's first small job, holds every small job
    of the same user, share and type submitted within the window, and the next window starts at the
    first small job after it. GPU-hours are instance-hours times ``gpus_per_type`` (1 when absent).
    Returns the parameters, per share and per user totals (the ``top`` users with most jobs in
    bursts) and the burst count per share and week."""
    _check_splitting(window_seconds, min_jobs, max_instances)
    result: dict[str, Any] = {
        "window_seconds": window_seconds,
        "min_jobs": min_jobs,
        "max_instances": max_instances,
        "by": "user" if trace.user is not None else "share",
        "bursts": 0,
        "jobs_in_bursts": 0,
        "gpu_hours_in_bursts": 0.0,
        "shares": {},
        "users": [],
        "users_with_bursts": 0,
        "period_seconds": WEEK,
        "periods": [],
        "epoch_times": trace.epoch_times,
    }
    if len(trace) == 0:
        return result
    jobs = _SplitJobs(trace, gpus_per_type)
    order = jobs.small_by_key_and_time(max_instances)
    windows = _greedy_windows(jobs, order, window_seconds, min_jobs)
    kept = jobs.fitting_one_job(windows, order)
    bursts = _Bursts(jobs, kept, order)
    user_bursts = np.bincount(bursts.user, minlength=len(jobs.user_names))
    columns = min(MAX_PERIODS, math.floor((float(jobs.submit.max()) - jobs.start) / WEEK) + 1)
    result.update(
        bursts=len(kept),
        jobs_in_bursts=int(bursts.in_burst.sum()),
        gpu_hours_in_bursts=float(jobs.gpu_hours[bursts.in_burst].sum()),
        users_with_bursts=int((user_bursts > 0).sum()),
        periods=[jobs.start + WEEK * c for c in range(columns)],
    )
    result["shares"].update(_share_totals(trace, jobs, bursts, columns))
    result["users"] = _top_users(trace, jobs, bursts, user_bursts, top)
    return result


def _check_splitting(window_seconds: float, min_jobs: int, max_instances: int) -> None:
    if window_seconds <= 0:
        raise InputError(f"window_seconds: {window_seconds} is not positive", field="window_seconds")
    if min_jobs < 2:
        raise InputError(f"min_jobs: {min_jobs} is below 2", field="min_jobs")
    if max_instances < 1:
        raise InputError(f"max_instances: {max_instances} is below 1", field="max_instances")


# (first, end) positions of a window of jobs into the order of small jobs, and the key of its jobs
Window = tuple[int, int, int]


class _SplitJobs:
    """The trace's columns job splitting reads, each job's submitter (its user, else its share) and
    its key: one per (submitter, share, instance type), the group a burst is taken in."""

    def __init__(self, trace: Trace, gpus_per_type: Mapping[str, int] | None):
        self.submit = np.asarray(trace.submit_time, dtype=np.float64)
        self.count = np.asarray(trace.instance_count, dtype=np.int64)
        self.share = np.asarray(trace.share, dtype=np.int64)
        itype = np.asarray(trace.instance_type, dtype=np.int64)
        gpus_of_type = np.ones(len(trace.type_names) + 1, dtype=np.float64)  # last slot: NO_TYPE (-1)
        for code, type_name in enumerate(trace.type_names):
            gpus_of_type[code] = float((gpus_per_type or {}).get(type_name, 1))
        duration = np.asarray(trace.duration, dtype=np.float64)
        self.gpu_hours = self.count * duration / 3600.0 * gpus_of_type[itype]
        if trace.user is not None:
            names, user = np.unique(np.asarray(trace.user, dtype=str), return_inverse=True)
            self.user_names = names.tolist()
        else:
            self.user_names, user = list(trace.share_names), self.share
        self.user = np.asarray(user, dtype=np.int64).reshape(-1)
        self.shares = len(trace.share_names)
        self.types = len(trace.type_names) + 1
        self.key = (self.user * self.shares + self.share) * self.types + (itype + 1)
        # the largest job of each instance type: a burst must fit in one job that large
        self.largest = np.zeros(self.types, dtype=np.int64)
        np.maximum.at(self.largest, itype + 1, self.count)
        self.start = float(self.submit.min())

    def small_by_key_and_time(self, max_instances: int) -> np.ndarray:
        """The jobs of at most ``max_instances`` instances, by key, then by submit time."""
        small = np.flatnonzero(self.count <= max_instances)
        return small[np.lexsort((self.submit[small], self.key[small]))]

    def fitting_one_job(self, windows: list[Window], order: np.ndarray) -> list[Window]:
        """The windows whose instances together fit one job as large as the largest of their type."""
        instances_of = np.concatenate(([0], np.cumsum(self.count[order]))) if len(order) else np.zeros(1)
        kept = []
        for first, end, burst_key in windows:
            type_slot = burst_key % self.types
            if instances_of[end] - instances_of[first] <= self.largest[type_slot]:
                kept.append((first, end, burst_key))
        return kept


def _greedy_windows(
    jobs: _SplitJobs, order: np.ndarray, window_seconds: float, min_jobs: int
) -> list[Window]:
    """(first, end) positions into ``order`` and the key of each window of ``min_jobs`` or more
    jobs: a window starts at a key's first job and holds its jobs submitted within
    ``window_seconds``; the next starts at the first job after it."""
    windows: list[Window] = []
    if len(order) < min_jobs:
        return windows
    k = jobs.key[order]
    t = jobs.submit[order] - jobs.start
    # Keys as ranks, then one increasing value per (key, time) for a single searchsorted.
    rank = np.concatenate(([0], np.cumsum(k[1:] != k[:-1])))
    stride = float(t.max()) + 2 * window_seconds + 1
    combined = rank * stride + t
    ends = np.searchsorted(combined, combined + window_seconds, side="right").tolist()
    position, total = 0, len(order)
    while position < total:
        end = ends[position]
        if end - position >= min_jobs:
            windows.append((position, end, int(k[position])))
        position = end
    return windows


class _Bursts:
    """The bursts kept: which jobs are in one, and each burst's submitter, share and start."""

    def __init__(self, jobs: _SplitJobs, kept: list[Window], order: np.ndarray):
        self.in_burst = np.zeros(len(jobs.submit), dtype=bool)
        self.user = np.array([b[2] // jobs.types // jobs.shares for b in kept], dtype=np.int64)
        self.share = np.array([(b[2] // jobs.types) % jobs.shares for b in kept], dtype=np.int64)
        self.time = np.array([jobs.submit[order[b[0]]] for b in kept], dtype=np.float64)
        for first, end, _ in kept:
            self.in_burst[order[first:end]] = True


def _share_totals(trace: Trace, jobs: _SplitJobs, bursts: _Bursts, columns: int) -> dict[str, Any]:
    """Per share that submitted jobs: its jobs and GPU-hours, those in bursts, bursts per week."""
    shares, share, in_burst, hours = jobs.shares, jobs.share, bursts.in_burst, jobs.gpu_hours
    share_jobs = np.bincount(share, minlength=shares)
    share_hours = np.bincount(share, weights=hours, minlength=shares)
    share_burst_jobs = np.bincount(share[in_burst], minlength=shares)
    share_burst_hours = np.bincount(share[in_burst], weights=hours[in_burst], minlength=shares)
    share_bursts = np.bincount(bursts.share, minlength=shares)
    week = np.minimum((bursts.time - jobs.start) // WEEK, columns - 1).astype(np.int64)
    per_week = np.bincount(bursts.share * columns + week, minlength=shares * columns).reshape(shares, columns)
    totals = {}
    for code, name in enumerate(trace.share_names):
        if share_jobs[code] == 0:
            continue
        totals[name] = {
            "jobs": int(share_jobs[code]),
            "gpu_hours": float(share_hours[code]),
            "bursts": int(share_bursts[code]),
            "jobs_in_bursts": int(share_burst_jobs[code]),
            "gpu_hours_in_bursts": float(share_burst_hours[code]),
            "gpu_hours_fraction": _fraction(share_burst_hours[code], share_hours[code]),
            "bursts_per_period": per_week[code].tolist(),
        }
    return totals


def _top_users(
    trace: Trace, jobs: _SplitJobs, bursts: _Bursts, user_bursts: np.ndarray, top: int
) -> list[dict[str, Any]]:
    """The ``top`` submitters with most jobs in bursts (then most GPU-hours in them), each with the
    share it submitted to most (a user may submit to several)."""
    users, shares = len(jobs.user_names), jobs.shares
    user, in_burst, hours = jobs.user, bursts.in_burst, jobs.gpu_hours
    user_jobs = np.bincount(user, minlength=users)
    user_hours = np.bincount(user, weights=hours, minlength=users)
    user_burst_jobs = np.bincount(user[in_burst], minlength=users)
    user_burst_hours = np.bincount(user[in_burst], weights=hours[in_burst], minlength=users)
    user_share = np.zeros(users, dtype=np.int64)
    pairs = np.bincount(user * shares + jobs.share, minlength=users * shares).reshape(users, shares)
    user_share[:] = pairs.argmax(axis=1)
    offenders = np.flatnonzero(user_burst_jobs > 0)
    offenders = offenders[np.lexsort((-user_burst_hours[offenders], -user_burst_jobs[offenders]))][:top]
    return [
        {
            "user": jobs.user_names[u],
            "share": trace.share_names[int(user_share[u])],
            "bursts": int(user_bursts[u]),
            "jobs_in_bursts": int(user_burst_jobs[u]),
            "jobs": int(user_jobs[u]),
            "gpu_hours_in_bursts": float(user_burst_hours[u]),
            "gpu_hours": float(user_hours[u]),
            "gpu_hours_fraction": _fraction(user_burst_hours[u], user_hours[u]),
        }
        for u in offenders.tolist()
    ]


def _fraction(part: float, whole: float) -> float:
    return float(part / whole) if whole > 0 else 0.0


# -- RESERVE hoarding --------------------------------------------------------------------------


def reserve_hoarding(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """Per RESERVE share of a replay (``ReplayResult.metrics``), and any other share with stranded
    quota (beyond its lending limit): the GPU-hours and $ its quota sat idle while other shares had
    jobs waiting that it could have run, as a fraction of its quota, in total and per day."""
    periods = metrics.get("periods") or {}
    days = list(periods.get("day") or [])
    daily = periods.get("shares") or {}
    shares: dict[str, Any] = {}
    totals = {"stranded_gpu_hours": 0.0, "stranded_usd": 0.0, "capacity_gpu_hours": 0.0}
    for index, entry in enumerate(metrics.get("shares") or []):
        name = entry.get("name")
        if not isinstance(name, str):
            raise InputError("a share of the metrics has no name", row=index + 1, field="shares.name")
        stranded = float(entry.get("stranded_gpu_hours") or 0.0)
        reserve = entry.get("strategy") == "RESERVE"
        if not reserve and stranded <= 0:
            continue
        capacity = float(entry.get("capacity_gpu_hours") or 0.0)
        day = daily.get(name) or {}
        day_stranded = [float(v or 0.0) for v in day.get("stranded") or []]
        day_capacity = [float(v or 0.0) for v in day.get("capacity") or []]
        day_usd = [float(v or 0.0) for v in (day.get("usd") or {}).get("stranded") or []]
        shares[name] = {
            "strategy": entry.get("strategy"),
            "capacity_gpu_hours": capacity,
            "idle_gpu_hours": float(entry.get("idle_gpu_hours") or 0.0),
            "stranded_gpu_hours": stranded,
            "stranded_usd": float(entry.get("stranded_usd") or 0.0),
            "stranded_fraction": _fraction(stranded, capacity),
            "days": {
                "stranded_gpu_hours": day_stranded,
                "stranded_usd": day_usd,
                "stranded_fraction": [
                    _fraction(s, c) for s, c in zip(day_stranded, day_capacity, strict=False)
                ],
            },
        }
        totals["stranded_gpu_hours"] += stranded
        totals["stranded_usd"] += shares[name]["stranded_usd"]
        totals["capacity_gpu_hours"] += capacity
    summary = metrics.get("summary") or {}
    return {
        "days": days,
        "epoch_times": bool(summary.get("epoch_times", False)),
        "shares": shares,
        "total": {
            **totals,
            "stranded_fraction": _fraction(totals["stranded_gpu_hours"], totals["capacity_gpu_hours"]),
        },
    }
