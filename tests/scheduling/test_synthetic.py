"""The synthetic trace generator: deterministic per seed, and the workload shape it promises."""

from __future__ import annotations

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.model import Policy, Strategy
from scheduling.synthetic import (
    DEFAULT_TEAMS,
    MAX_DURATION,
    MIN_DURATION,
    PRIORITY_LOW,
    PRIORITY_URGENT,
    TeamSpec,
    demand_gpu_seconds,
    demo_policy_dict,
    demo_pool_gpus,
    generate,
)
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES
from scheduling.traces.summary import summarize

DAY = 86400


@pytest.fixture(scope="module")
def trace():
    return generate(40_000, days=28, seed=11)


def test_synthetic_trace_is_deterministic_for_a_seed():
    first, again, other = generate(3000, seed=5), generate(3000, seed=5), generate(3000, seed=6)
    for column in ("submit_time", "share", "duration", "instance_count", "priority", "checkpoint_interval"):
        np.testing.assert_array_equal(getattr(first, column), getattr(again, column))
    assert first.job_id == again.job_id and first.user == again.user
    assert not np.array_equal(first.submit_time, other.submit_time)


def test_synthetic_trace_basic_shape(trace):
    assert len(trace) == 40_000
    assert trace.share_names == [team.name for team in DEFAULT_TEAMS]
    assert np.all(np.diff(trace.submit_time) >= 0)  # in submission order
    assert trace.submit_time.min() >= 0 and trace.submit_time.max() <= 28 * DAY
    assert len(set(trace.job_id)) == len(trace)
    assert np.all(trace.preemption_retries == UNLIMITED_RETRIES)
    assert np.all(trace.instance_type == NO_TYPE) and trace.type_names == []
    assert trace.epoch_times is False and len(trace.updates) == 0


def test_synthetic_trace_arrivals_follow_office_hours(trace):
    hour = (trace.submit_time // 3600 % 24).astype(int)
    weekday = (trace.submit_time // DAY % 7) < 5
    per_hour = np.bincount(hour[weekday], minlength=24)
    assert per_hour[10:17].mean() > 2.5 * per_hour[1:6].mean()  # busy by day, quiet by night


def test_synthetic_trace_weekends_are_quieter(trace):
    day = (trace.submit_time // DAY).astype(int)
    per_day = np.bincount(day, minlength=28)[:28]
    weekend = np.arange(28) % 7 >= 5
    assert per_day[weekend].mean() < 0.7 * per_day[~weekend].mean()


def test_synthetic_trace_sizes_priorities_and_checkpoints_are_mixed(trace):
    sizes = np.bincount(trace.instance_count)
    assert set(np.flatnonzero(sizes)) == {1, 2, 4, 8, 16}
    assert sizes[1] == sizes.max()
    low = np.mean(trace.priority == PRIORITY_LOW)
    urgent = np.mean(trace.priority == PRIORITY_URGENT)
    assert low > 0.6 and 0.01 < urgent < 0.1
    checkpointing = {
        name: bool(np.any(~np.isnan(trace.checkpoint_interval[trace.share == code])))
        for code, name in enumerate(trace.share_names)
    }
    assert checkpointing == {"research": False, "prod-training": True, "nlp": True, "vision": False}
    assert set(np.unique(trace.checkpoint_interval[~np.isnan(trace.checkpoint_interval)])) == {1800, 3600}


def test_synthetic_trace_durations_are_heavy_tailed_from_minutes_to_days(trace):
    duration = trace.duration
    assert duration.min() >= MIN_DURATION and duration.max() <= MAX_DURATION
    assert 10 * 60 < np.median(duration) < 3 * 3600
    assert np.mean(duration) > 2 * np.median(duration)
    assert np.percentile(duration, 99.5) > DAY


def test_synthetic_trace_demand_split_follows_the_team_specs(trace):
    work = trace.duration * trace.instance_count
    for code, team in enumerate(DEFAULT_TEAMS):
        assert work[trace.share == code].sum() / work.sum() == pytest.approx(team.demand, abs=0.06)


def test_synthetic_trace_sweeps_make_bursts(trace):
    # Sweep jobs arrive minutes apart: many more submissions share a minute than a flat rate would give.
    research = trace.submit_time[trace.share == 0]
    per_minute = np.bincount((research // 60).astype(int))
    assert per_minute.max() >= 8


def test_synthetic_trace_demo_pool_is_loaded_to_about_85_percent_and_queues_at_peaks(trace):
    gpus = demo_pool_gpus(trace)
    assert gpus % 8 == 0
    load = demand_gpu_seconds(trace) / (gpus * 28 * DAY)
    assert 0.8 <= load <= 0.9
    summary = summarize(trace, buckets=28 * 24)  # hourly
    demanded = sum(np.array(s["gpu_seconds"]) for s in summary["demand"]["shares"].values())
    average_gpus = demanded / summary["demand"]["width"]
    assert average_gpus.max() > 1.2 * gpus  # bursts exceed the pool: jobs queue


def test_synthetic_trace_demo_policy_is_valid_with_each_strategy():
    policy = Policy.from_dict(demo_policy_dict(96))
    assert [s.name for s in policy.shares] == [team.name for team in DEFAULT_TEAMS]
    assert {s.strategy for s in policy.shares} == {Strategy.LEND_AND_BORROW, Strategy.LEND, Strategy.RESERVE}
    assert sum(s.quota("gpu") for s in policy.shares) <= 96
    # Every team's largest job fits where its strategy lets it run, even on the smallest pool.
    smallest = Policy.from_dict(demo_policy_dict(40))
    for share, team in zip(smallest.shares, DEFAULT_TEAMS, strict=True):
        largest = max(size for size, _ in team.sizes)
        reach = share.quota("gpu") + min(share.borrow_limit("gpu"), 40 - share.quota("gpu"))
        assert largest <= reach, share.name
    with pytest.raises(InputError) as caught:
        demo_policy_dict(16)
    assert caught.value.field == "total_gpus"


def test_synthetic_trace_instance_type_and_custom_teams():
    teams = [
        TeamSpec("solo", demand=1, median_minutes=10, sigma=0.5, sizes=((2, 1.0),), checkpoint_interval=900)
    ]
    trace = generate(100, teams=teams, days=2, seed=1, instance_type="ml.g5.xlarge")
    assert trace.type_names == ["ml.g5.xlarge"] and np.all(trace.instance_type == 0)
    assert trace.share_names == ["solo"] and np.all(trace.instance_count == 2)
    assert np.all(trace.checkpoint_interval == 900)
    policy = Policy.from_dict(demo_policy_dict(48, instance_type="ml.g5.xlarge"))
    assert policy.capacity == {"ml.g5.xlarge": 48}


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"jobs": 0}, "jobs"),
        ({"jobs": 10, "days": 0}, "days"),
        ({"jobs": 10, "teams": []}, "teams"),
        ({"jobs": 10, "teams": [DEFAULT_TEAMS[0], DEFAULT_TEAMS[0]]}, "teams[1].name"),
    ],
)
def test_synthetic_trace_bad_arguments(kwargs, field):
    with pytest.raises(InputError) as caught:
        generate(**kwargs)
    assert caught.value.field == field


def test_a_million_job_synthetic_trace_is_generated():
    # how fast is the benchmark's business (benchmarks/replay_benchmark.py), not a timed test's
    trace = generate(1_000_000, seed=3)
    assert len(trace) == 1_000_000
