"""Seeded synthetic traces for demos and benchmarks: teams that submit more by day than by
night and less at weekends, in sweeps, with heavy-tailed durations and mixed job sizes.
``demo_policy_dict`` gives a matching 4-share pool; ``demo_pool_gpus`` sizes it for a load.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

from scheduling.errors import InputError
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES, PriorityUpdates, Trace

DAY = 86400.0
MIN_DURATION = 60.0  # a minute
MAX_DURATION = 5 * DAY
PRIORITY_LOW, PRIORITY_NORMAL, PRIORITY_URGENT = 10, 50, 100
DEMO_LOAD = 0.85  # the average load demo_pool_gpus sizes a pool for
MIN_DEMO_GPUS = 40  # the smallest pool where every demo team's largest job fits its quota

# Relative submission rate per hour of a weekday (UTC; t = 0 is a Monday midnight):
# quiet at night, a morning ramp, busiest in office hours, an evening tail.
OFFICE_HOURS = np.array(
    [0.3, 0.25, 0.2, 0.2, 0.2, 0.25, 0.4, 0.7, 1.1, 1.5, 1.7, 1.7,
     1.5, 1.6, 1.7, 1.7, 1.6, 1.4, 1.1, 0.9, 0.7, 0.6, 0.5, 0.4]
)  # fmt: skip


@dataclass(frozen=True)
class TeamSpec:
    """One team's workload. ``demand`` is its relative share of the GPU-hours submitted (the
    number of jobs follows from it and from the team's mean job size and duration)."""

    name: str
    demand: float
    median_minutes: float  # median duration
    sigma: float  # lognormal shape: 1 is moderately, 1.8 very heavy-tailed
    sizes: tuple[tuple[int, float], ...]  # (instance_count, weight)
    urgent: float = 0.05  # fraction of jobs at PRIORITY_URGENT
    normal: float = 0.25  # fraction at PRIORITY_NORMAL; the rest are PRIORITY_LOW
    checkpoint_interval: float | None = None
    diurnal: float = 1.0  # 0 = flat around the clock, 1 = the full office-hours pattern
    weekend: float = 0.4  # weekend rate relative to weekdays
    sweep_fraction: float = 0.2  # jobs submitted in bursts (hyper-parameter sweeps)
    sweep_size: float = 8.0  # mean jobs per sweep
    users: int = 6

    def mean_instance_seconds(self) -> float:
        """Expected instances x duration of one job (durations clipped to a minute..5 days)."""
        counts = np.array([size for size, _ in self.sizes], dtype=float)
        weights = np.array([weight for _, weight in self.sizes], dtype=float)
        mean_count = float((counts * weights).sum() / weights.sum())
        normal = NormalDist()
        quantiles = np.array([normal.inv_cdf((i + 0.5) / 4000) for i in range(4000)])
        durations = np.clip(
            self.median_minutes * 60 * np.exp(self.sigma * quantiles), MIN_DURATION, MAX_DURATION
        )
        return mean_count * float(durations.mean())


DEFAULT_TEAMS: tuple[TeamSpec, ...] = (
    # Many short, small experiments, half in sweeps; no checkpoints; a strong office-hours rhythm.
    TeamSpec("research", demand=0.35, median_minutes=40, sigma=1.6,
             sizes=((1, 0.5), (2, 0.25), (4, 0.15), (8, 0.08), (16, 0.02)),
             urgent=0.03, normal=0.2, diurnal=1.0, weekend=0.35, sweep_fraction=0.5, users=12),
    # Few, large, long runs from pipelines: little daily rhythm, checkpoints every 30 minutes.
    TeamSpec("prod-training", demand=0.40, median_minutes=360, sigma=1.0,
             sizes=((1, 0.1), (2, 0.15), (4, 0.25), (8, 0.35), (16, 0.15)),
             urgent=0.15, normal=0.35, checkpoint_interval=1800, diurnal=0.3, weekend=0.8,
             sweep_fraction=0.1, users=4),
    TeamSpec("nlp", demand=0.15, median_minutes=120, sigma=1.4,
             sizes=((1, 0.3), (2, 0.25), (4, 0.3), (8, 0.15)),
             urgent=0.05, normal=0.25, checkpoint_interval=3600, diurnal=0.8, weekend=0.4, users=8),
    TeamSpec("vision", demand=0.10, median_minutes=60, sigma=1.3,
             sizes=((1, 0.45), (2, 0.3), (4, 0.25)),
             urgent=0.05, normal=0.25, diurnal=0.9, weekend=0.3, sweep_fraction=0.3, users=6),
)  # fmt: skip


def default_days(jobs: int) -> float:
    """500 jobs a day, between 1 and 60 days: a long trace for many jobs keeps pools realistic."""
    return float(min(60.0, max(1.0, jobs / 500)))


def generate(
    jobs: int,
    *,
    teams: Sequence[TeamSpec] | None = None,
    days: float | None = None,
    seed: int = 0,
    instance_type: str | None = None,
) -> Trace:
    """A trace of ``jobs`` jobs submitted over ``days`` days (default: ``default_days``).

    Times are seconds from a Monday midnight; the same arguments give the same trace.
    """
    teams = tuple(DEFAULT_TEAMS if teams is None else teams)
    _check(jobs, teams, days)
    span_days = default_days(jobs) if days is None else float(days)
    horizon = span_days * DAY
    rng = np.random.default_rng(seed)

    mean_work = np.array([team.mean_instance_seconds() for team in teams])
    job_weights = np.array([team.demand for team in teams]) / mean_work
    per_team = rng.multinomial(jobs, job_weights / job_weights.sum())

    submit = np.empty(jobs)
    share = np.empty(jobs, dtype=np.int32)
    duration = np.empty(jobs)
    count = np.empty(jobs, dtype=np.int32)
    priority = np.empty(jobs, dtype=np.int32)
    checkpoint = np.empty(jobs)
    user_code = np.empty(jobs, dtype=np.int64)
    user_names: list[str] = []
    start = 0
    for code, (team, n) in enumerate(zip(teams, per_team, strict=True)):
        part = slice(start, start + n)
        submit[part] = _arrivals(rng, team, n, horizon)
        share[part] = code
        durations = team.median_minutes * 60 * np.exp(team.sigma * rng.standard_normal(n))
        duration[part] = np.round(np.clip(durations, MIN_DURATION, MAX_DURATION))
        sizes = np.array([size for size, _ in team.sizes], dtype=np.int32)
        weights = np.array([weight for _, weight in team.sizes], dtype=float)
        count[part] = sizes[_pick(rng, weights, n)]
        priority[part] = np.array([PRIORITY_LOW, PRIORITY_NORMAL, PRIORITY_URGENT], dtype=np.int32)[
            _pick(rng, np.array([1 - team.normal - team.urgent, team.normal, team.urgent]), n)
        ]
        checkpoint[part] = np.nan if team.checkpoint_interval is None else team.checkpoint_interval
        # A few heavy users submit most of a team's jobs (weights 1, 1/2, 1/3, ...).
        user_code[part] = len(user_names) + _pick(rng, 1.0 / np.arange(1, team.users + 1), n)
        user_names.extend(f"{team.name}-{i + 1:02d}" for i in range(team.users))
        start += n

    order = np.argsort(submit, kind="stable")
    names = np.array(user_names)
    return Trace(
        job_id=[f"job-{i:07d}" for i in range(jobs)],
        submit_time=np.round(submit[order], 3),
        share=share[order],
        share_names=[team.name for team in teams],
        priority=priority[order],
        instance_type=np.full(jobs, NO_TYPE if instance_type is None else 0, dtype=np.int32),
        type_names=[] if instance_type is None else [instance_type],
        instance_count=count[order],
        duration=duration[order],
        checkpoint_interval=checkpoint[order],
        preemption_retries=np.full(jobs, UNLIMITED_RETRIES, dtype=np.int32),
        user=names[user_code[order]].tolist(),
        name=None,
        recorded_start=None,
        updates=PriorityUpdates.empty(),
        epoch_times=False,
    )


def _check(jobs: int, teams: Sequence[TeamSpec], days: float | None) -> None:
    if isinstance(jobs, bool) or not isinstance(jobs, (int, np.integer)) or jobs < 1:
        raise InputError(f"{jobs!r} is not a positive number of jobs", field="jobs")
    if days is not None and not (math.isfinite(days) and days > 0):
        raise InputError(f"{days!r} is not a positive number of days", field="days")
    if not teams:
        raise InputError("at least one team is needed", field="teams")
    for i, team in enumerate(teams):
        where = f"teams[{i}]"
        if not team.name or team.name in [t.name for t in teams[:i]]:
            raise InputError(f"team names must be unique and non-empty: {team.name!r}", field=f"{where}.name")
        if not team.demand > 0 or not team.median_minutes > 0 or team.sigma < 0:
            raise InputError("demand and median_minutes must be positive, sigma not negative", field=where)
        if not team.sizes or any(size < 1 or weight < 0 for size, weight in team.sizes):
            raise InputError("sizes must be (instance_count >= 1, weight >= 0) pairs", field=f"{where}.sizes")
        if not 0 <= team.urgent + team.normal <= 1 or min(team.urgent, team.normal) < 0:
            raise InputError("urgent and normal are fractions adding up to at most 1", field=where)
        if team.users < 1 or not 0 <= team.sweep_fraction <= 1 or team.sweep_size < 1:
            raise InputError("users >= 1, sweep_fraction in 0..1 and sweep_size >= 1", field=where)


def _pick(rng: np.random.Generator, weights: np.ndarray, n: int) -> np.ndarray:
    """``n`` indices drawn with the given relative weights (vectorised)."""
    cumulative = np.cumsum(weights, dtype=float)
    return np.searchsorted(cumulative, rng.random(n) * cumulative[-1], side="right").clip(0, len(weights) - 1)


def hourly_rate(team: TeamSpec, horizon: float) -> np.ndarray:
    """Relative submission rate of each hour in ``[0, horizon)`` (the last one possibly partial)."""
    hours = max(1, math.ceil(horizon / 3600))
    index = np.arange(hours)
    rate = 1 + team.diurnal * (OFFICE_HOURS[index % 24] - 1)
    weekend = (index // 24) % 7 >= 5
    rate = np.where(weekend, rate * team.weekend, rate)
    last = horizon / 3600 - (hours - 1)
    rate[-1] *= last
    return rate


def _arrivals(rng: np.random.Generator, team: TeamSpec, n: int, horizon: float) -> np.ndarray:
    """Submit times: single jobs follow the hourly rate; sweep jobs arrive a few minutes
    after their sweep's start, and sweeps start following the same rate."""
    rate = hourly_rate(team, horizon)
    cumulative = np.cumsum(rate)

    def at_rate(k: int) -> np.ndarray:
        hour = np.searchsorted(cumulative, rng.random(k) * cumulative[-1], side="right").clip(
            0, len(rate) - 1
        )
        return np.minimum((hour + rng.random(k)) * 3600, horizon)

    in_sweep = rng.random(n) < team.sweep_fraction
    times = np.empty(n)
    single = ~in_sweep
    times[single] = at_rate(int(single.sum()))
    swept = int(in_sweep.sum())
    if swept:
        sweeps = max(1, round(swept / team.sweep_size))
        starts = at_rate(sweeps)
        times[in_sweep] = np.minimum(
            starts[rng.integers(0, sweeps, swept)] + rng.exponential(120.0, swept), horizon
        )
    return times


def demand_gpu_seconds(trace: Trace, gpus_per_instance: float = 1.0) -> float:
    """GPU-seconds of work the trace asks for."""
    return float((trace.duration * trace.instance_count).sum()) * gpus_per_instance


def demo_pool_gpus(trace: Trace, *, load: float = DEMO_LOAD, days: float | None = None) -> int:
    """The pool (in GPUs, a multiple of 8, at least MIN_DEMO_GPUS) that the trace loads to
    ``load`` on average over its submission window (``days``, default: from the trace)."""
    if not 0 < load <= 1:
        raise InputError(f"{load!r} is not a load in (0, 1]", field="load")
    window = (
        days * DAY if days is not None else math.ceil(max(float(trace.submit_time.max()), 1.0) / DAY) * DAY
    )
    gpus = demand_gpu_seconds(trace) / (load * window)
    return max(MIN_DEMO_GPUS, 8 * math.ceil(gpus / 8))


def demo_policy_dict(total_gpus: int, *, instance_type: str = "gpu", hourly_price: float = 2.5) -> dict:
    """A policy JSON dict (SEMANTICS.md section 7) for the default teams on a pool of
    ``total_gpus`` one-GPU instances: research and prod-training lend and borrow (with
    in-share preemption), nlp only lends, vision reserves its quota; what no share holds
    (quotas are rounded down) is unassigned and lendable."""
    if isinstance(total_gpus, bool) or not isinstance(total_gpus, int) or total_gpus < MIN_DEMO_GPUS:
        raise InputError(
            f"{total_gpus!r}: a demo pool needs at least {MIN_DEMO_GPUS} GPUs so that every team's "
            "largest job fits",
            field="total_gpus",
        )

    def quota(fraction: float) -> dict[str, int]:
        return {instance_type: int(total_gpus * fraction)}

    return {
        "name": f"demo-{total_gpus}",
        "description": "Four teams sharing one pool: two lend and borrow, one lends, one reserves.",
        "instance_types": {instance_type: {"gpus": 1, "hourly_price": hourly_price}},
        "capacity": {instance_type: total_gpus},
        "queueing": "best_effort_fifo",
        "startup_seconds": 120,
        "shares": [
            {"name": "research", "capacity": quota(0.30), "strategy": "LEND_AND_BORROW",
             "borrow_limit_percent": -1, "in_share_preemption": "lower_priority", "reclaim": "any"},
            {"name": "prod-training", "capacity": quota(0.35), "strategy": "LEND_AND_BORROW",
             "borrow_limit_percent": 100, "in_share_preemption": "lower_priority", "reclaim": "any"},
            {"name": "nlp", "capacity": quota(0.20), "strategy": "LEND", "reclaim": "any"},
            {"name": "vision", "capacity": quota(0.15), "strategy": "RESERVE"},
        ],
    }  # fmt: skip
