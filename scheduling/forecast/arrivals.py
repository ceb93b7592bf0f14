"""Section 11's arrivals **(choice)**: each day after T0 takes the arrivals of a day drawn
uniformly from the 7 days before T0, at the same times of day, with their recorded durations and
priorities. A "day" is 24 hours counted from T0: source day j (1..7) is (T0 - j days, T0 - (j-1)
days], and its jobs land in (T0 + i days, T0 + (i+1) days] for day i after T0, so every arrival
is after T0 and keeps its time of day."""

from __future__ import annotations

import math

import numpy as np

from scheduling.errors import InputError
from scheduling.forecast.inputs import DAY
from scheduling.model import Policy
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES, Trace

SOURCE_DAYS = 7


class ArrivalDays:
    """The history's jobs of each of the 7 days before T0, as columns in the policy's codes."""

    def __init__(self, history: Trace | None, t0: float, policy: Policy):
        self.t0 = t0
        self.days: list[np.ndarray] = []  # per source day j = 1..7: history rows, in time order
        self.submit = np.zeros(0)
        if history is None or not len(history):
            return
        submit = np.asarray(history.submit_time, dtype=np.float64)
        self.submit = submit
        recent = np.flatnonzero((submit > t0 - SOURCE_DAYS * DAY) & (submit <= t0))
        share_index = {s.name: i for i, s in enumerate(policy.shares)}
        share_codes = np.array([share_index.get(n, -1) for n in history.share_names] + [-1], dtype=np.int64)
        type_names = list(policy.instance_types)
        type_index = {n: i for i, n in enumerate(type_names)}
        unknown_type = -2  # (NO_TYPE is -1: omitted, allowed when the pool has one type)
        type_codes = np.array([type_index.get(n, unknown_type) for n in history.type_names] + [NO_TYPE])
        shares = share_codes[history.share[recent]]
        raw_types = history.instance_type[recent]
        types = np.where(raw_types == NO_TYPE, NO_TYPE, type_codes[raw_types])
        for k, row in enumerate(recent.tolist()):  # only the week's jobs: a few thousand at most
            if shares[k] < 0:
                raise InputError(
                    f"share {history.share_names[history.share[row]]!r} of an arrival is not in the policy",
                    row=row + 1, field="history.share",
                )  # fmt: skip
            if types[k] == unknown_type or (types[k] == NO_TYPE and len(type_names) != 1):
                raise InputError("the arrival's instance type is not in the policy", row=row + 1,
                                 field="history.instance_type")  # fmt: skip
        self.share = shares
        self.type = np.where(types == NO_TYPE, 0, types)
        self.rows = recent
        self.history = history
        # per source day j = 1..7, the positions (into ``recent``) of its jobs, in time order
        order = np.argsort(submit[recent], kind="stable")
        times = submit[recent][order]
        for j in range(1, SOURCE_DAYS + 1):
            low, high = t0 - j * DAY, t0 - (j - 1) * DAY
            self.days.append(order[(times > low) & (times <= high)])

    def __bool__(self) -> bool:
        return any(len(d) for d in self.days)

    def draw(self, rng: np.random.Generator, until: float) -> tuple[np.ndarray, np.ndarray]:
        """(positions into the week's jobs, their arrival times) for days 0.. up to ``until``."""
        n_days = max(0, math.ceil((until - self.t0) / DAY))
        if not self.days or n_days == 0:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        sources = rng.integers(1, SOURCE_DAYS + 1, size=n_days)
        picked: list[np.ndarray] = []
        times: list[np.ndarray] = []
        week_times = self.submit[self.rows]
        for i, j in enumerate(sources.tolist()):
            day = self.days[j - 1]
            if not len(day):
                continue
            moved = week_times[day] + (i + j) * DAY
            keep = moved <= until
            picked.append(day[keep])
            times.append(moved[keep])
        if not picked:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        return np.concatenate(picked), np.concatenate(times)

    def columns(self, positions: np.ndarray) -> dict[str, np.ndarray]:
        """The drawn jobs' columns (recorded durations and priorities), in the policy's codes."""
        rows = self.rows[positions]
        h = self.history
        return {
            "share": self.share[positions],
            "instance_type": self.type[positions],
            "instance_count": h.instance_count[rows],
            "priority": h.priority[rows],
            "duration": h.duration[rows],
            "checkpoint_interval": h.checkpoint_interval[rows],
            "preemption_retries": h.preemption_retries[rows] if len(rows) else np.zeros(0, dtype=np.int32),
        }


def no_arrivals() -> dict[str, np.ndarray]:
    return {
        "share": np.zeros(0, dtype=np.int64), "instance_type": np.zeros(0, dtype=np.int64),
        "instance_count": np.zeros(0, dtype=np.int32), "priority": np.zeros(0, dtype=np.int32),
        "duration": np.zeros(0), "checkpoint_interval": np.zeros(0),
        "preemption_retries": np.full(0, UNLIMITED_RETRIES, dtype=np.int32),
    }  # fmt: skip
