"""The samples of a forecast: each one replays the snapshot forward (``scheduling.replay.engine.resume``)
with durations and arrivals drawn from a generator seeded with (seed, sample index) only, so that
any split of the samples into chunks gives the same forecast."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from scheduling.errors import InputError
from scheduling.forecast.arrivals import ArrivalDays, no_arrivals
from scheduling.forecast.durations import DurationHistory, DurationRule, duration_rules
from scheduling.forecast.inputs import DAY, ForecastInputs, bound_snapshot, policy_at
from scheduling.forecast.snapshot import Snapshot
from scheduling.model import Policy
from scheduling.replay.engine import resume
from scheduling.trace import UNLIMITED_RETRIES, Trace


@dataclass
class SampleStarts:
    """Samples ``first``..``first + count - 1``: per snapshot job (``job_ids``, running jobs first)
    its start and end in each sample, nan when it did not start (end) before the horizon."""

    first: int
    job_ids: list[str]
    start: np.ndarray  # float64, samples x jobs
    end: np.ndarray

    @property
    def count(self) -> int:
        return int(self.start.shape[0])

    def to_json(self) -> dict[str, Any]:
        return {
            "first": self.first,
            "count": self.count,
            "job_ids": list(self.job_ids),
            "start": _rows(self.start),
            "end": _rows(self.end),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SampleStarts:
        n = len(data["job_ids"])
        shape = (int(data["count"]), n)
        return cls(
            first=int(data["first"]),
            job_ids=list(data["job_ids"]),
            start=_array(data["start"], shape),
            end=_array(data["end"], shape),
        )


def _rows(values: np.ndarray) -> list[list[float | None]]:
    return [[None if v != v else float(v) for v in row] for row in values.tolist()]


def _array(rows: list, shape: tuple[int, int]) -> np.ndarray:
    out = np.array([[math.nan if v is None else v for v in row] for row in rows], dtype=np.float64)
    return out.reshape(shape)


class Prepared:
    """What every sample shares: the policy at T0, the snapshot's columns, its duration rules and
    the history's week of arrivals."""

    def __init__(self, inputs: ForecastInputs):
        self.inputs = inputs
        self.t0 = t0 = inputs.snapshot.time
        self.until = inputs.until
        self.policy: Policy = policy_at(inputs.policy, t0)
        self.snapshot: Snapshot = bound_snapshot(inputs)
        jobs = self.snapshot.jobs
        self.n = len(jobs)
        self.history = DurationHistory(inputs.history)
        startup = self.policy.startup_seconds
        self.rules: list[DurationRule] = duration_rules(self.snapshot, startup, self.history)
        self.no_duration = np.array([r.pool is None and math.isnan(r.fixed) for r in self.rules], dtype=bool)
        self.arrival_days = (
            ArrivalDays(inputs.history, t0, self.policy) if inputs.arrivals == "history" else None
        )
        if self.arrival_days is not None and not self.arrival_days:
            # Most likely two clocks (an ISO-8601 snapshot, a history in seconds from its own origin),
            # or an old history: either way "history" arrivals would silently be none.
            raise InputError(
                f"the history has no job submitted in the 7 days before the snapshot's time {t0:,.0f}: "
                "history arrivals need them (are both on the same clock?); use arrivals none",
                field="arrivals",
            )
        share_index = self.policy.share_index()
        type_names = list(self.policy.instance_types)
        type_index = {name: i for i, name in enumerate(type_names)}
        self.share_names = [s.name for s in self.policy.shares]
        self.type_names = type_names
        self.job_ids = [job.job_id for job in jobs]
        self.submit = np.array([job.queued_since for job in jobs], dtype=np.float64)
        self.share = np.array([share_index[job.share] for job in jobs], dtype=np.int64)
        self.type = np.array([type_index[job.instance_type] for job in jobs], dtype=np.int64)
        self.count = np.array([job.instance_count for job in jobs], dtype=np.int64)
        self.priority = np.array([job.priority for job in jobs], dtype=np.int64)
        self.checkpoint = np.array(
            [math.nan if job.checkpoint_interval is None else job.checkpoint_interval for job in jobs]
        )
        self.started_at = np.array([math.nan if job.started_at is None else job.started_at for job in jobs])
        # A job without a duration holds what it takes until after the horizon **(choice)**: its own
        # forecast is withheld (no_duration), and the others' are not made optimistic by its absence.
        self.hold = self.until - t0 + DAY
        prefix = "~arrival~"
        while any(job_id.startswith(prefix) for job_id in self.job_ids):
            prefix += "~"
        self.arrival_prefix = prefix

    def durations(self, u: np.ndarray, rng: np.random.Generator | None = None) -> np.ndarray:
        days = self.inputs.duration_window_days
        if days is None or rng is None:
            drawn = [rule.draw(float(x)) for rule, x in zip(self.rules, u.tolist(), strict=True)]
            out = np.array(drawn, dtype=np.float64)
        else:  # one window per pool and sample, drawn in the order the pools are first met
            windows: dict[int, np.ndarray | None] = {}
            values = []
            for rule, x in zip(self.rules, u.tolist(), strict=True):
                pool = rule.pool
                if pool is None:
                    values.append(rule.fixed)
                    continue
                if id(pool) not in windows:
                    windows[id(pool)] = self.history.windowed(pool, rng, days)
                window = windows[id(pool)]
                values.append(rule.draw(x) if window is None else rule.draw_within(window, x))
            out = np.array(values, dtype=np.float64)
        out[self.no_duration] = self.hold
        return out

    def replay(
        self, durations: np.ndarray, arrivals: dict[str, np.ndarray], times: np.ndarray, until: float
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """One replay from T0 with these snapshot durations and arrivals: the snapshot's jobs'
        starts, ends, states and unschedulable reasons (codes into ``result.REASONS``)."""
        n_arr = len(times)
        trace = Trace(
            job_id=self.job_ids + [f"{self.arrival_prefix}{k}" for k in range(n_arr)],
            submit_time=np.concatenate([self.submit, times]),
            share=np.concatenate([self.share, arrivals["share"]]).astype(np.int32),
            share_names=self.share_names,
            priority=np.concatenate([self.priority, arrivals["priority"]]).astype(np.int32),
            instance_type=np.concatenate([self.type, arrivals["instance_type"]]).astype(np.int32),
            type_names=self.type_names,
            instance_count=np.concatenate([self.count, arrivals["instance_count"]]).astype(np.int32),
            duration=np.concatenate([durations, arrivals["duration"]]).astype(np.float64),
            checkpoint_interval=np.concatenate([self.checkpoint, arrivals["checkpoint_interval"]]),
            preemption_retries=np.concatenate(
                [np.full(self.n, UNLIMITED_RETRIES), arrivals["preemption_retries"]]
            ).astype(np.int32),
        )
        started_at = np.concatenate([self.started_at, np.full(n_arr, math.nan)])
        outcomes = resume(self.policy, trace, started_at, self.t0, until)
        n = self.n
        return (
            outcomes.first_start[:n].copy(),
            outcomes.end[:n].copy(),
            outcomes.state[:n].copy(),
            outcomes.reason[:n].copy(),
        )

    def sample(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        rng = np.random.default_rng([self.inputs.seed, i])
        u = rng.random(self.n)
        # (its own stream, so that the section 11 draws stay the same with or without windows)
        durations = self.durations(u, np.random.default_rng([self.inputs.seed, i, 1]))
        if self.arrival_days is not None:
            positions, times = self.arrival_days.draw(rng, self.until)
            arrivals = self.arrival_days.columns(positions) if len(positions) else no_arrivals()
        else:
            times, arrivals = np.zeros(0), no_arrivals()
        start, end, _, _ = self.replay(durations, arrivals, times, self.until)
        start[self.no_duration] = math.nan
        end[self.no_duration] = math.nan
        running = ~np.isnan(self.started_at)
        start[running] = self.started_at[running]  # "start" of a running job is its started_at
        return start, end


def run_samples(inputs: ForecastInputs, first: int, count: int) -> SampleStarts:
    """Samples ``first``..``first + count - 1`` (each from (seed, index) alone)."""
    if first < 0 or count < 0 or first + count > inputs.samples:
        raise ValueError(f"samples {first}..{first + count - 1} are outside 0..{inputs.samples - 1}")
    prepared = Prepared(inputs)
    starts = np.full((count, prepared.n), math.nan)
    ends = np.full((count, prepared.n), math.nan)
    for k in range(count):
        starts[k], ends[k] = prepared.sample(first + k)
    return SampleStarts(first, prepared.job_ids, starts, ends)
