"""Section 11's durations **(choice)**, in one place: given ones first, else a draw from the
history's durations of the job's share and size class, with the fallbacks, the survival rule for
running jobs and the caps at ``max_runtime_seconds``.

A job's draw is one uniform number u in [0, 1): the sample's generator gives one per snapshot job
in snapshot order, so a sample depends on (seed, sample index) only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scheduling.forecast.snapshot import Snapshot, SnapshotJob
from scheduling.trace import Trace

MIN_CLASS_DURATIONS = 30  # fewer durations than this in a class: fall back to the share, then all
SIZE_CLASSES = (1, 2, 8, 64)  # instance_count 1, 2-7, 8-63, 64+
NO_DURATION = "no_duration"


def size_class(count: int) -> int:
    """0 for 1 instance, 1 for 2-7, 2 for 8-63, 3 for 64 and more."""
    return int(np.searchsorted(SIZE_CLASSES, count, side="right")) - 1


class DurationHistory:
    """The history's durations, sorted, per (share, size class), per share, and all together; with
    each pool, the submit times of its durations (in the same order) for ``windowed``."""

    def __init__(self, history: Trace | None):
        self.by_class: dict[tuple[str, int], np.ndarray] = {}
        self.by_share: dict[str, np.ndarray] = {}
        self.all = np.zeros(0)
        self.submits: dict[int, np.ndarray] = {}  # by id() of a pool above
        if history is None or not len(history):
            return
        durations = np.asarray(history.duration, dtype=np.float64)
        submit = np.asarray(history.submit_time, dtype=np.float64)
        classes = np.searchsorted(SIZE_CLASSES, history.instance_count, side="right") - 1
        self.all = self._pool(durations, submit, np.ones(len(durations), dtype=bool))
        for code, name in enumerate(history.share_names):
            mine = history.share == code
            if not mine.any():
                continue
            self.by_share[name] = self._pool(durations, submit, mine)
            for c in range(len(SIZE_CLASSES)):
                chosen = mine & (classes == c)
                if chosen.any():
                    self.by_class[(name, c)] = self._pool(durations, submit, chosen)

    def _pool(self, durations: np.ndarray, submit: np.ndarray, chosen: np.ndarray) -> np.ndarray:
        order = np.argsort(durations[chosen], kind="stable")
        pool = durations[chosen][order]
        self.submits[id(pool)] = submit[chosen][order]
        return pool

    def __bool__(self) -> bool:
        return len(self.all) > 0

    def pool(self, share: str, count: int) -> np.ndarray:
        """The durations a job draws from: its share and size class, else its share, else all,
        each only when it holds at least MIN_CLASS_DURATIONS (the whole history in any case)."""
        for candidate in (self.by_class.get((share, size_class(count))), self.by_share.get(share)):
            if candidate is not None and len(candidate) >= MIN_CLASS_DURATIONS:
                return candidate
        return self.all

    def windowed(self, pool: np.ndarray, rng: np.random.Generator, days: float) -> np.ndarray | None:
        """**Beyond section 11 (opt-in, ``duration_window_days``)**: the durations of ``pool`` whose
        jobs were submitted within ``days`` around a job of the pool drawn uniformly: one period's
        jobs, so that a sample's draws share that period's character (a team's burst of similar
        jobs) instead of averaging it away. None when fewer than MIN_CLASS_DURATIONS are in it."""
        submits = self.submits[id(pool)]
        centre = float(submits[int(rng.integers(len(submits)))])
        half = days * 43_200.0
        chosen = pool[(submits >= centre - half) & (submits < centre + half)]
        return chosen if len(chosen) >= MIN_CLASS_DURATIONS else None

    def p90(self, share: str, count: int) -> float:
        pool = self.pool(share, count)
        return float(np.quantile(pool, 0.9)) if len(pool) else math.nan


@dataclass(frozen=True)
class DurationRule:
    """How one snapshot job gets its duration (pending) or remaining work (running) in a sample:
    ``fixed`` when it is known or cannot vary; else a draw from ``pool[lo:]`` minus ``elapsed``,
    capped at ``cap``. ``fixed`` nan: no duration (reason no_duration)."""

    fixed: float = math.nan
    pool: np.ndarray | None = None
    lo: int = 0
    elapsed: float = 0.0
    cap: float = math.inf

    def draw(self, u: float) -> float:
        pool = self.pool
        if pool is None:
            return self.fixed
        d = float(pool[self.lo + int(u * (len(pool) - self.lo))]) - self.elapsed
        return min(d, self.cap)

    def draw_within(self, window: np.ndarray, u: float) -> float:
        """``draw`` from a window of the pool (``DurationHistory.windowed``); the whole pool when
        none of the window's durations is longer than the work already done."""
        lo = int(np.searchsorted(window, self.elapsed, side="right")) if self.elapsed > 0 else 0
        if lo >= len(window):
            return self.draw(u)
        return min(float(window[lo + int(u * (len(window) - lo))]) - self.elapsed, self.cap)


def elapsed_work(job: SnapshotJob, t0: float, startup: float) -> float:
    """e = T0 - started_at - startup_seconds, the work a running job has done (0 while STARTING)."""
    assert job.started_at is not None
    return max(0.0, t0 - job.started_at - startup)


def duration_rule(job: SnapshotJob, t0: float, startup: float, history: DurationHistory) -> DurationRule:
    cap = math.inf if job.max_runtime_seconds is None else job.max_runtime_seconds
    if job.running:
        e = elapsed_work(job, t0, startup)
        if job.remaining_seconds is not None:
            return DurationRule(fixed=job.remaining_seconds)
        cap = max(0.0, cap - e)
        if not history:
            return DurationRule(fixed=cap if math.isfinite(cap) else math.nan)
        pool = history.pool(job.share, job.instance_count)
        lo = int(np.searchsorted(pool, e, side="right"))
        if lo >= len(pool):  # none ran longer: it keeps as long again (capped)
            return DurationRule(fixed=min(e, cap))
        return DurationRule(pool=pool, lo=lo, elapsed=e, cap=cap)
    if job.duration is not None:
        return DurationRule(fixed=job.duration)
    if not history:
        return DurationRule(fixed=cap if math.isfinite(cap) else math.nan)
    return DurationRule(pool=history.pool(job.share, job.instance_count), cap=cap)


def duration_rules(snapshot: Snapshot, startup: float, history: DurationHistory) -> list[DurationRule]:
    """One rule per snapshot job, running jobs first, as ``Snapshot.jobs`` orders them."""
    return [duration_rule(job, snapshot.time, startup, history) for job in snapshot.jobs]


def requested_time(job: SnapshotJob, t0: float, startup: float, history: DurationHistory) -> float:
    """The requested_time baseline's duration (pending) or remaining work (running): its
    ``max_runtime_seconds``, else the history's p90 duration of its class, else what is given;
    nan when none of them is known."""
    if job.max_runtime_seconds is not None:
        total = job.max_runtime_seconds
    elif history:
        total = history.p90(job.share, job.instance_count)
    elif job.running and job.remaining_seconds is not None:
        return job.remaining_seconds
    elif job.duration is not None:
        return job.duration
    else:
        return math.nan
    if job.running:
        return max(0.0, total - elapsed_work(job, t0, startup))
    return total
