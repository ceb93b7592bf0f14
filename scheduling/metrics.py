"""Metrics of a replay (SEMANTICS.md section 5), computed once from the usage log and outcomes.

The engine logs only changes (time, share, type, new value); everything over time, per share,
per day or per bucket is an integral of those step functions, done here with numpy.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from scheduling.binding import BoundTrace
from scheduling.model import Cause, Policy, WaitReason
from scheduling.outcomes import REASONS, JobOutcomes, State
from scheduling.replay.quota_tree import is_tree_policy
from scheduling.replay.records import Records
from scheduling.tree_lending import LendingTree, attribute_lent_in_tree, lending_tree

DAY = 86400.0
MAX_CDF_POINTS = 1000
MAX_DAYS = 3660
ACCOUNTS = ("own", "borrowed", "lent", "idle", "stranded")


class UsageLog:
    """Changes of usage and of pending instances per (share, type), and rerun costs, in time
    order, as (time, share * n_types + type, value) records."""

    def __init__(self, n_types: int):
        self.n_types = n_types
        self.usage_changes = Records(3)
        self.pending_changes = Records(3)
        self.rerun_costs = Records(3)
        # Section 9: the calendar as it was applied, (time, type, capacity) and
        # (time, share * n_types + type, quota).
        self.capacity_changes = Records(3)
        self.quota_changes = Records(3)


def _columns(records: Records) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time, key, value) columns of a triple log."""
    table = records.table()
    return table[:, 0], table[:, 1].astype(np.int64), table[:, 2]


# --- choices of section 3 and 5 for finance, each in one function ----------------------------


def attribute_lent(borrowed_total: np.ndarray, unassigned: int, lendable: np.ndarray) -> tuple:
    """Lent attribution **(choice)**: borrowed instances are drawn first from unassigned
    capacity, then from lenders in proportion to what each has lendable.
    Returns (lent from unassigned per instant, lent per share per instant)."""
    from_unassigned = np.minimum(borrowed_total, unassigned)
    rest = borrowed_total - from_unassigned
    lendable_total = lendable.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        share_of = np.where(lendable_total[:, None] > 0, lendable / lendable_total[:, None], 0.0)
    return from_unassigned, rest[:, None] * share_of


def stranded_idle(idle_not_lendable: np.ndarray, pending: np.ndarray) -> np.ndarray:
    """Stranded **(choice)**: idle quota its share may not lend (all of it for RESERVE, above the
    lending limit for lenders), at instants when other shares have jobs of that type waiting,
    up to the instances those waiting jobs ask for."""
    others_pending = pending.sum(axis=1)[:, None] - pending
    return np.minimum(idle_not_lendable, others_pending)


# --- the computation -------------------------------------------------------------------------


def compute_metrics(
    policy: Policy,
    bound: BoundTrace,
    outcomes: JobOutcomes,
    log: UsageLog,
    totals,
    buckets: int,
    window: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """Every metric of section 5, measured over the run's span (first submit to last end) or
    over ``window``, which must contain that span (runs compared together share one window)."""
    trace = bound.trace
    submit = trace.submit_time
    n_shares = len(policy.shares)
    types = bound.type_names
    span = _horizon(submit, outcomes.end, _last_usage_change(log))
    start, end = span if window is None else _window(span, window)
    horizon = end - start
    gpus = np.array([policy.instance_types[t].gpus for t in types], dtype=float)
    price = np.array([policy.instance_types[t].hourly_price for t in types], dtype=float)

    edges = np.linspace(start, end, buckets + 1) if horizon > 0 else np.array([start, start + 1.0])
    day0 = math.floor(start / DAY) * DAY
    n_days = min(MAX_DAYS, max(1, math.ceil((end - day0) / DAY)))
    day_edges = day0 + DAY * np.arange(n_days + 1)

    accounts = [
        _type_accounts(policy, t, types[t], log, start, end, edges, day_edges) for t in range(len(types))
    ]

    wait = outcomes.wait(submit)
    jct = outcomes.jct(submit)
    share_of_job = bound.share
    summary = _summary(policy, bound, outcomes, totals, accounts, gpus, price, wait, jct, start, end)
    shares = [
        _share_metrics(
            policy, s, bound, outcomes, totals, accounts, gpus, price, wait, jct, share_of_job == s
        )
        for s in range(n_shares)
    ]
    summary["span"] = {"start": span[0], "end": span[1], "seconds": span[1] - span[0]}
    return {
        "summary": summary,
        "types": {
            name: {
                "capacity": int(policy.capacity.get(name, 0)),
                "gpus": float(gpus[t]),
                "hourly_price": float(price[t]),
                "utilization": _ratio(accounts[t]["busy"], accounts[t]["capacity"]),
                "useful_utilization": _ratio(
                    accounts[t]["busy"] - _sum_type(totals.lost, t) - _sum_type(totals.startup, t),
                    accounts[t]["capacity"],
                ),
            }
            for t, name in enumerate(types)
        },
        "shares": shares,
        "pool": _pool(accounts, gpus, price),
        "series": _series(policy, accounts, gpus, edges),
        "periods": _periods(policy, accounts, gpus, price, day_edges, log, start, end),
        "cdfs": {
            "wait": _cdfs(policy, wait, share_of_job),
            "jct": _cdfs(policy, jct, share_of_job),
        },
    }


def _horizon(submit: np.ndarray, end: np.ndarray, last_usage_change: float) -> tuple[float, float]:
    """From the earliest submit to the last end (to the last submit if nothing ended). "End" is
    read as the end of any run, a preemption's included: with a calendar, a job preempted when
    capacity went away may stay RUNNABLE for ever (section 9), and the hours it ran must lie
    inside the horizon, or busy time would escape utilization while its lost work counts."""
    if len(submit) == 0:
        return 0.0, 0.0
    start = float(submit.min())
    ended = end[~np.isnan(end)]
    stop = float(ended.max()) if len(ended) else float(submit.max())
    return start, max(start, stop, last_usage_change)


def _last_usage_change(log: UsageLog) -> float:
    """The time of the last start, finish or preemption (-inf if nothing ran)."""
    if not len(log.usage_changes):
        return -math.inf
    return float(log.usage_changes.table()[-1, 0])


def _window(span: tuple[float, float], window: tuple[float, float]) -> tuple[float, float]:
    """A window to measure over: it must contain the run's span, since outside the span nothing
    runs or waits (the accounts there are idle quota) and inside it nothing may be cut off."""
    start, end = float(window[0]), float(window[1])
    if not (start <= span[0] and end >= span[1]):
        raise ValueError(
            f"the window {start:g} to {end:g} does not contain the run's span {span[0]:g} to {span[1]:g}"
        )
    return start, end


def _change_columns(records: Records, t: int, n_types: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(time, share, value) of a change log's changes of type t, in time order (for the pool's
    capacity log, whose key is the type alone, the "share" is 0)."""
    times, keys, values = _columns(records)
    if n_types > 1:
        mine = keys % n_types == t  # this type's changes only
        times, keys, values = times[mine], keys[mine], values[mine]
    return times, keys // n_types, values


def _instants(change_times: list[np.ndarray], start: float, end: float) -> np.ndarray:
    """The union of several logs' change instants in [start, end], start included, in order."""
    inside = [times[(times >= start) & (times <= end)] for times in change_times]
    times = np.concatenate([[start], *inside])
    times.sort(kind="stable")  # the logs are each in time order: a merge of sorted runs
    return times[np.append(True, times[1:] != times[:-1])]


class _StepFunction:
    """Per-share step functions of one change log, rebuilt on the instants a block at a time
    (instants x shares): a million-job replay has millions of instants, and the whole matrix,
    hundreds of MB, would cost more in fresh pages than in arithmetic. Blocks are asked for in
    order; several changes at one instant keep the last, which is the state after that instant."""

    def __init__(self, changes: tuple[np.ndarray, ...], instants: np.ndarray, n_shares: int):
        times, self.shares, self.values = changes
        # The instant of each change (changes are logged in time order; none is before start),
        # so each block's changes are one slice of the log.
        self.step = np.maximum(np.searchsorted(instants, times, side="right") - 1, 0)
        self.n_shares = n_shares
        self.state = np.zeros(n_shares)  # the values in force before the next block
        self.next_change = 0

    def block(self, lo: int, hi: int) -> np.ndarray:
        """The values of every share at the instants lo to hi - 1 (instants x shares)."""
        first = self.next_change
        last = first + int(np.searchsorted(self.step[first:], hi, side="left"))
        self.next_change = last
        n = self.n_shares
        # At each (instant, share) the number of the last change there: n + k for the block's
        # k-th change, share s's value before the block (s) where none is; then at every
        # instant the change in force is the latest so far, and the values are looked up.
        latest = np.zeros((hi - lo, n), dtype=np.int64)
        latest[0] = np.arange(n)
        places = (self.step[first:last] - lo) * n + self.shares[first:last]
        np.maximum.at(latest.reshape(-1), places, np.arange(n, n + last - first))
        np.maximum.accumulate(latest, axis=0, out=latest)
        values = np.concatenate((self.state, self.values[first:last]))[latest]
        self.state = values[-1]
        return values


def _type_accounts(policy, t, type_name, log, start, end, edges, day_edges) -> dict[str, Any]:
    """Own / borrowed / lent / idle / stranded of every share for one instance type.

    The accounts are built and integrated (in total, per bucket, per day) a block of instants at
    a time: a million-job replay has millions of instants, and a dozen instants x shares arrays
    of that length would each go through memory; a block's stay in the processor's cache."""
    shares = policy.shares
    # Both step functions on the union of their instants, so both stay exact.
    logs = (log.usage_changes, log.pending_changes)
    changes = [_change_columns(records, t, log.n_types) for records in logs]
    quota_changes = _calendar_changes(log.quota_changes, t, log.n_types)
    capacity_changes = _calendar_changes(log.capacity_changes, t, log.n_types)
    # The calendar's instants too: accounts step there as well.
    calendar_times = np.array([c[0] for c in quota_changes + capacity_changes], dtype=float)
    instants = _instants([calendar_times, *(c[0] for c in changes)], start, end)
    usage, pending = (_StepFunction(c, instants, len(shares)) for c in changes)
    durations = np.diff(np.append(instants, end))
    grids = [_EdgePlaces(instants, end, e) for e in (edges, day_edges)]

    quota = np.array([s.quota(type_name) for s in shares], dtype=float)
    lend_limit = np.array([s.lend_limit(type_name) for s in shares], dtype=float)
    unassigned = policy.unassigned(type_name)
    capacity = float(policy.capacity.get(type_name, 0))
    # Section 13: borrowed instances drawn nearest first over the tree (``tree_lending``); the root
    # holds what neither a share nor a cohort claims.
    tree = lending_tree(policy, type_name) if is_tree_policy(policy) else None
    cohort_quota = sum(float(c.capacity.get(type_name, 0)) for c in policy.cohorts)
    integrals: dict[str, _Integral] = {}
    for lo in range(0, len(instants), BLOCK):
        hi = min(lo + BLOCK, len(instants))
        block_usage, block_durations = usage.block(lo, hi), durations[lo:hi]
        # Section 9: capacity and quotas in force at each instant of the block.
        block_quota = _steps_at(instants[lo:hi], quota, quota_changes)
        block_capacity = _steps_at(instants[lo:hi], np.array([capacity]), capacity_changes)
        block_unassigned = block_capacity[:, 0] - block_quota.sum(axis=1)
        block_pending = pending.block(lo, hi)
        quantities = _accounts_at(
            block_usage, block_pending, block_quota, lend_limit, block_unassigned, tree, cohort_quota
        )
        quantities["quota"] = block_quota
        quantities["capacity"] = block_capacity
        quantities["unassigned_capacity"] = block_unassigned[:, None]
        for name, values in quantities.items():
            if name not in integrals:
                integrals[name] = _Integral(values.shape[1], grids)
            integrals[name].add(values, block_durations, lo)
    results = {name: integral.result() for name, integral in integrals.items()}
    return {
        # Integrals of capacity(t) and quota(t) over the horizon (instance-seconds).
        "capacity": float(results["capacity"][0][0]),
        "quota_seconds": results["quota"][0],
        # usage = own + borrowed at every instant (min(u, q) + max(u - q, 0))
        "busy": float(results["own"][0].sum() + results["borrowed"][0].sum()),
        "total": {name: r[0] for name, r in results.items()},
        "buckets": {name: r[1] for name, r in results.items()},
        "days": {name: r[2] for name, r in results.items()},
        "unassigned": unassigned,
    }


BLOCK = 1 << 15  # instants per block of the accounts (x shares x 8 bytes per array)


def _calendar_changes(records: Records, t: int, n_types: int) -> list[tuple[float, int, float]]:
    """The calendar's changes of type t as applied by the engine: (time, column, new value);
    a column is a share for quotas (0 for the pool's capacity)."""
    times, columns, values = _change_columns(records, t, n_types)
    return list(zip(times.tolist(), columns.tolist(), values.tolist(), strict=True))


def _steps_at(instants: np.ndarray, base: np.ndarray, changes: list[tuple[float, int, float]]) -> np.ndarray:
    """A step function over time (instants x columns): ``base``, then each change from its time
    on (changes are few: a calendar, not a log of every job)."""
    values = np.tile(base.astype(float), (len(instants), 1))
    for time, column, value in changes:
        values[np.searchsorted(instants, time, side="left") :, column] = value
    return values


def _accounts_at(
    usage, pending, quota, lend_limit, unassigned, tree: LendingTree | None = None, cohort_quota: float = 0.0
) -> dict[str, np.ndarray]:
    """Every account at each instant of a block: instants x shares (x 1 for the unassigned, which
    over a tree includes the cohorts' own quotas)."""
    idle_quota = np.maximum(quota - usage, 0)
    lendable = np.minimum(idle_quota, lend_limit)
    borrowed = np.maximum(usage - quota, 0)
    if tree is None:
        from_unassigned, lent = attribute_lent(borrowed.sum(axis=1), unassigned, lendable)
    else:
        from_unassigned, lent = attribute_lent_in_tree(tree, borrowed, lendable, unassigned - cohort_quota)
    return {
        "own": np.minimum(usage, quota),
        "borrowed": borrowed,
        "lent": lent,
        "idle": idle_quota - lent,
        "stranded": stranded_idle(idle_quota - lendable, pending),
        "unassigned_lent": from_unassigned[:, None],
        "unassigned_idle": (unassigned - from_unassigned)[:, None],
    }


class _EdgePlaces:
    """Where each edge of a bucket or day grid falls among the instants of a step function:
    the step it lies in and how far into it (edges outside [start, end] are clamped), found
    once per type and shared by every quantity integrated over that grid."""

    def __init__(self, instants: np.ndarray, end: float, edges: np.ndarray):
        at = np.clip(edges, instants[0], end)
        self.step = np.searchsorted(instants, at, side="right") - 1
        self.into = at - instants[self.step]

    def within(self, lo: int, hi: int) -> slice:
        """The edges whose step is one of the instants lo to hi - 1 (steps are in order)."""
        return slice(*np.searchsorted(self.step, [lo, hi]).tolist())


class _Integral:
    """The integral of each column of a step function, in total and over each [e[i], e[i+1])
    interval of every edge grid, added up a block of instants at a time (the cumulative area
    is piecewise linear between instants: at an edge, the area before its step plus its part
    of that step)."""

    def __init__(self, width: int, grids: list[_EdgePlaces]):
        self.grids = grids
        self.total = np.zeros(width)  # the area before the next block
        self.at_edges = [np.zeros((len(grid.step), width)) for grid in grids]

    def add(self, values: np.ndarray, durations: np.ndarray, lo: int) -> None:
        """The block of instants lo to lo + len(values) - 1."""
        area = values * durations[:, None]
        edges = [grid.within(lo, lo + len(values)) for grid in self.grids]
        steps = [grid.step[places] - lo for grid, places in zip(self.grids, edges, strict=True)]
        # The area before each step that has an edge in it: the block cut at those steps, each
        # piece summed, the pieces added up (a cumulative sum of every instant would write as
        # many rows as it reads; the edges are a few hundred, the instants millions).
        cuts = np.unique(np.concatenate([[0], *steps]))
        pieces = np.add.reduceat(area, cuts, axis=0)
        before = np.concatenate((np.zeros((1, area.shape[1])), np.cumsum(pieces, axis=0)))
        for grid, at_edges, places, step in zip(self.grids, self.at_edges, edges, steps, strict=True):
            area_before = self.total + before[np.searchsorted(cuts, step)]
            at_edges[places] = area_before + values[step] * grid.into[places, None]
        self.total += before[-1]

    def result(self) -> tuple:
        """(total, per interval of each grid)."""
        return (self.total, *(np.diff(at_edges, axis=0) for at_edges in self.at_edges))


def distribution(values: np.ndarray) -> dict[str, float | None]:
    """Mean, percentiles (numpy's linear interpolation) and max of the finite values."""
    finite = values[np.isfinite(values)]
    if not len(finite):
        return {"count": 0, "mean": None, "p50": None, "p90": None, "p95": None, "p99": None, "max": None}
    p50, p90, p95, p99 = np.percentile(finite, [50, 90, 95, 99]).tolist()
    return {
        "count": len(finite),
        "mean": float(finite.mean()),
        "p50": p50,
        "p90": p90,
        "p95": p95,
        "p99": p99,
        "max": float(finite.max()),
    }


def cdf(values: np.ndarray, max_points: int = MAX_CDF_POINTS) -> dict[str, Any]:
    """The empirical CDF, exact at at most ``max_points`` points (always including the max)."""
    finite = np.sort(values[np.isfinite(values)])
    n = len(finite)
    if not n:
        return {"x": [], "y": [], "n": 0}
    # Last index of each distinct value: the CDF's value there is (index + 1) / n.
    last = np.flatnonzero(np.append(finite[1:] != finite[:-1], True))
    if len(last) > max_points:
        picks = np.unique(np.linspace(0, len(last) - 1, max_points).round().astype(int))
        last = last[picks]
    return {"x": finite[last].tolist(), "y": ((last + 1) / n).tolist(), "n": n}


def _cdfs(policy, values, share_of_job) -> dict[str, Any]:
    return {
        "all": cdf(values),
        "shares": {s.name: cdf(values[share_of_job == i]) for i, s in enumerate(policy.shares)},
    }


def _waited_by_reason(job_seconds) -> dict[str, float]:
    """Job-seconds spent RUNNABLE, by the reason the scheduler last found (model.WaitReason)."""
    return {reason.name.lower(): float(job_seconds[reason]) for reason in WaitReason}


def _ratio(a: float, b: float) -> float:
    return float(a / b) if b > 0 else 0.0


def _sum_type(table, t: int) -> float:
    return float(sum(row[t] for row in table))


def _job_counts(outcomes: JobOutcomes, mask=None) -> dict[str, Any]:
    state = outcomes.state if mask is None else outcomes.state[mask]
    reason = outcomes.reason if mask is None else outcomes.reason[mask]
    by_reason = np.bincount(reason, minlength=len(REASONS))
    return {
        "jobs": len(state),
        "succeeded": int((state == State.SUCCEEDED).sum()),
        "failed": int((state == State.FAILED).sum()),
        "unschedulable": int((state == State.UNSCHEDULABLE).sum()),
        "cancelled": int((state == State.CANCELLED).sum()),
        "unschedulable_by_reason": {REASONS[i]: int(n) for i, n in enumerate(by_reason) if i and n},
    }


def _summary(policy, bound, outcomes, totals, accounts, gpus, price, wait, jct, start, end) -> dict:
    n_types = len(gpus)
    busy = np.array([a["busy"] for a in accounts])
    capacity = np.array([a["capacity"] for a in accounts])
    lost = np.array([_sum_type(totals.lost, t) for t in range(n_types)])
    startup = np.array([_sum_type(totals.startup, t) for t in range(n_types)])
    rerun = lost + np.array([_sum_type(totals.rerun_startup, t) for t in range(n_types)])
    preemptions = {cause.value: sum(p[cause] for p in totals.preemptions) for cause in Cause}
    return {
        **_job_counts(outcomes),
        "utilization": _ratio(busy @ gpus, capacity @ gpus),
        "useful_utilization": _ratio((busy - lost - startup) @ gpus, capacity @ gpus),
        "preemptions": preemptions,
        "waited_by_reason_seconds": _waited_by_reason([sum(col) for col in zip(*totals.waited, strict=True)]),
        "lost_instance_seconds": float(lost.sum()),
        "startup_instance_seconds": float(startup.sum()),
        "rerun_instance_seconds": float(rerun.sum()),
        "rerun_gpu_hours": float(rerun @ gpus / 3600),
        "rerun_cost_usd": float(rerun @ price / 3600),
        "wait_seconds": distribution(wait),
        "queued_seconds": distribution(np.where(np.isnan(outcomes.first_start), np.nan, outcomes.queued)),
        "jct_seconds": distribution(jct),
        "horizon": {"start": start, "end": end, "seconds": end - start},
        "ignored_priority_updates": outcomes.ignored_updates,
        "epoch_times": bound.trace.epoch_times,
    }


def _share_metrics(policy, s, bound, outcomes, totals, accounts, gpus, price, wait, jct, mask) -> dict:
    share = policy.shares[s]
    n_types = len(gpus)
    by_type = {}
    gpu_seconds = dict.fromkeys(("capacity",) + ACCOUNTS, 0.0)
    usd = dict.fromkeys(("capacity",) + ACCOUNTS, 0.0)
    for t, name in enumerate(bound.type_names):
        row = {"capacity": float(accounts[t]["quota_seconds"][s])}
        row.update({k: float(accounts[t]["total"][k][s]) for k in ACCOUNTS})
        by_type[name] = row
        for k, v in row.items():
            gpu_seconds[k] += v * gpus[t]
            usd[k] += v * price[t] / 3600
    lost = np.array([totals.lost[s][t] for t in range(n_types)])
    rerun = lost + np.array([totals.rerun_startup[s][t] for t in range(n_types)])
    out = {
        "name": share.name,
        "strategy": share.strategy.value,
        **_job_counts(outcomes, mask),
        "preemptions": {cause.value: totals.preemptions[s][cause] for cause in Cause},
        "waited_by_reason_seconds": _waited_by_reason(totals.waited[s]),
        "lost_instance_seconds": float(lost.sum()),
        "rerun_instance_seconds": float(rerun.sum()),
        "rerun_gpu_hours": float(rerun @ gpus / 3600),
        "rerun_cost_usd": float(rerun @ price / 3600),
        "wait_seconds": distribution(wait[mask]),
        "queued_seconds": distribution(
            np.where(np.isnan(outcomes.first_start[mask]), np.nan, outcomes.queued[mask])
        ),
        "jct_seconds": distribution(jct[mask]),
        "by_type": by_type,
    }
    for k in ("capacity",) + ACCOUNTS:
        out[f"{k}_gpu_hours"] = gpu_seconds[k] / 3600
        out[f"{k}_usd"] = usd[k]
        out[f"{k}_instance_seconds"] = sum(row[k] for row in by_type.values())
    return out


def _pool(accounts, gpus, price) -> dict[str, float]:
    def gpu_hours(values):
        return float(sum(v * g for v, g in zip(values, gpus, strict=True)) / 3600)

    def dollars(values):
        return float(sum(v * p for v, p in zip(values, price, strict=True)) / 3600)

    capacity = [a["capacity"] for a in accounts]
    busy = [a["busy"] for a in accounts]
    unassigned_lent = [float(a["total"]["unassigned_lent"][0]) for a in accounts]
    unassigned_idle = [float(a["total"]["unassigned_idle"][0]) for a in accounts]
    return {
        "capacity_gpu_hours": gpu_hours(capacity),
        "busy_gpu_hours": gpu_hours(busy),
        "idle_gpu_hours": gpu_hours(capacity) - gpu_hours(busy),
        "unassigned_lent_gpu_hours": gpu_hours(unassigned_lent),
        "unassigned_idle_gpu_hours": gpu_hours(unassigned_idle),
        "capacity_usd": dollars(capacity),
        "busy_usd": dollars(busy),
        "idle_usd": dollars(capacity) - dollars(busy),
    }


def _series(policy, accounts, gpus, edges) -> dict[str, Any]:
    """Average GPUs per bucket, per share and account."""
    width = float(edges[1] - edges[0])
    shares = {}
    for s, share in enumerate(policy.shares):
        row = {}
        for k in ACCOUNTS:
            total = sum(a["buckets"][k][:, s] * g for a, g in zip(accounts, gpus, strict=True))
            row[k] = (np.asarray(total) / width).round(4).tolist()
        row["quota"] = float(
            sum(share.quota(t) * g for t, g in zip(policy.instance_types, gpus, strict=True))
        )
        # Section 9: the quota in force, as average GPUs per bucket (a step line over time).
        row["quota_series"] = (
            (
                np.asarray(sum(a["buckets"]["quota"][:, s] * g for a, g in zip(accounts, gpus, strict=True)))
                / width
            )
            .round(4)
            .tolist()
        )
        shares[share.name] = row
    unassigned = {
        k: (
            np.asarray(
                sum(a["buckets"][f"unassigned_{k}"][:, 0] * g for a, g in zip(accounts, gpus, strict=True))
            )
            / width
        )
        .round(4)
        .tolist()
        for k in ("lent", "idle")
    }
    return {
        "t": edges[:-1].tolist(),
        "width": width,
        "shares": shares,
        "unassigned": unassigned,
        "pool_capacity": float(
            sum(policy.capacity.get(t, 0) * g for t, g in zip(policy.instance_types, gpus, strict=True))
        ),
        "pool_capacity_series": (
            np.asarray(sum(a["buckets"]["capacity"][:, 0] * g for a, g in zip(accounts, gpus, strict=True)))
            / width
        )
        .round(4)
        .tolist(),
    }


def _periods(policy, accounts, gpus, price, day_edges, log, start, end) -> dict[str, Any]:
    """GPU-hours and $ per calendar day of the trace, per share: finance sums them by week or month."""
    # Capacity counts only the part of each day inside the horizon (integrated like every other
    # account, with the quotas in force), so that per day own + lent + idle adds up to capacity.
    shares = {}
    for s, share in enumerate(policy.shares):
        row: dict[str, Any] = {"usd": {}}
        # quota(t) integrated per day (section 9)
        capacity = sum(a["days"]["quota"][:, s] * g for a, g in zip(accounts, gpus, strict=True)) / 3600
        capacity_usd = sum(a["days"]["quota"][:, s] * p for a, p in zip(accounts, price, strict=True)) / 3600
        row["capacity"] = np.asarray(capacity).round(6).tolist()
        row["usd"]["capacity"] = np.asarray(capacity_usd).round(6).tolist()
        for k in ACCOUNTS:
            row[k] = (
                (sum(a["days"][k][:, s] * g for a, g in zip(accounts, gpus, strict=True)) / 3600)
                .round(6)
                .tolist()
            )
            row["usd"][k] = (
                (sum(a["days"][k][:, s] * p for a, p in zip(accounts, price, strict=True)) / 3600)
                .round(6)
                .tolist()
            )
        rerun, rerun_usd = _rerun_by_day(s, day_edges, log, gpus, price)
        row["rerun"] = rerun
        row["usd"]["rerun"] = rerun_usd
        shares[share.name] = row

    def per_day(values_per_type) -> dict[str, list]:
        gpu_hours = sum(v * g for v, g in zip(values_per_type, gpus, strict=True)) / 3600
        usd = sum(v * p for v, p in zip(values_per_type, price, strict=True)) / 3600
        return np.asarray(gpu_hours).round(6).tolist(), np.asarray(usd).round(6).tolist()

    unassigned: dict[str, Any] = {"usd": {}}
    for k, values in (
        ("capacity", [a["days"]["unassigned_capacity"][:, 0] for a in accounts]),
        ("lent", [a["days"]["unassigned_lent"][:, 0] for a in accounts]),
        ("idle", [a["days"]["unassigned_idle"][:, 0] for a in accounts]),
    ):
        unassigned[k], unassigned["usd"][k] = per_day(values)
    pool_capacity, pool_usd = per_day([a["days"]["capacity"][:, 0] for a in accounts])
    return {
        "day": day_edges[:-1].tolist(),
        "shares": shares,
        "unassigned": unassigned,
        "pool": {"capacity": pool_capacity, "usd": {"capacity": pool_usd}},
    }


def _rerun_by_day(s, day_edges, log, gpus, price) -> tuple[list, list]:
    """Rerun cost (lost work + start-up) of share s per day, by the day of each preemption."""
    if not log.rerun_costs:
        zeros = [0.0] * (len(day_edges) - 1)
        return zeros, zeros
    time, key, amount = _columns(log.rerun_costs)
    mine = key // log.n_types == s
    t = key[mine] % log.n_types
    day = np.clip(np.searchsorted(day_edges, time[mine], side="right") - 1, 0, len(day_edges) - 2)
    n_days = len(day_edges) - 1
    gpu_hours = np.bincount(day, weights=amount[mine] * gpus[t], minlength=n_days) / 3600
    usd = np.bincount(day, weights=amount[mine] * price[t], minlength=n_days) / 3600
    return gpu_hours.round(6).tolist(), usd.round(6).tolist()
