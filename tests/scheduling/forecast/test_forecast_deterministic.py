"""SEMANTICS.md section 11 with every duration given and arrivals none: every sample is the same
replay from the snapshot, p10 = p50 = p90 = that replay's start, hand-computed here."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.forecast import (
    ForecastInputs,
    forecast,
    merge_samples,
    read_snapshot,
    run_samples,
    snapshot_to_json,
)
from scheduling.model import Policy


def one_share(capacity: int = 2, startup: float = 0.0, **extra) -> Policy:
    return Policy.from_dict({
        "name": "p", "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1.0}},
        "capacity": {"gpu": capacity}, "startup_seconds": startup,
        "shares": [{"name": "A", "capacity": {"gpu": capacity}, "strategy": "LEND_AND_BORROW"}], **extra,
    })  # fmt: skip


def jobs_by_id(result: dict) -> dict[str, dict]:
    return {job["job_id"]: job for job in result["jobs"]}


def same(value: float) -> dict:
    return {"p10": value, "p50": value, "p90": value}


SNAPSHOT = {
    "time": 1000,
    "running": [
        {"job_id": "r1", "share": "A", "started_at": 400, "remaining_seconds": 100},
        {"job_id": "r2", "share": "A", "started_at": 900, "remaining_seconds": 500},
    ],
    "pending": [
        {"job_id": "p1", "share": "A", "submit_time": 950, "duration": 300},
        {"job_id": "p2", "share": "A", "submit_time": 800, "instance_count": 2, "duration": 200},
        {"job_id": "p3", "share": "A", "submit_time": 990, "priority": 5, "duration": 50},
    ],
}


def test_every_duration_given_is_one_replay():
    # r1 ends at 1100: p3 (priority 5) takes it; p3 ends at 1150: p1 (within quota, so before the
    # older p2, which would need 3 > 2) starts; r2 ends at 1500: p2 gets both instances.
    result = forecast(ForecastInputs(one_share(), read_snapshot(SNAPSHOT), samples=7))
    jobs = jobs_by_id(result)
    assert result["time"] == 1000 and result["samples"] == 7
    assert jobs["r1"]["start"] == same(400) and jobs["r1"]["end"] == same(1100)
    assert jobs["r2"]["end"] == same(1500)
    assert jobs["p3"]["start"] == same(1100) and jobs["p3"]["end"] == same(1150)
    assert jobs["p1"]["start"] == same(1150) and jobs["p1"]["end"] == same(1450)
    assert jobs["p2"]["start"] == same(1500) and jobs["p2"]["end"] == same(1700)
    assert [jobs[j]["position"] for j in ("p3", "p2", "p1")] == [1, 2, 3]
    assert jobs["r1"]["position"] is None and jobs["r1"]["state"] == "RUNNING"
    assert jobs["p1"]["state"] == "RUNNABLE" and jobs["p1"]["reason"] == "pool_full"
    assert jobs["p1"]["p_start_within"] == {"1h": 1.0, "24h": 1.0}
    # no history: the requested_time baseline has only the given durations, the same replay
    assert jobs["p2"]["baselines"] == {"requested_time": 1500, "share_median_wait": None}


def test_startup_and_a_job_still_starting_at_t0():
    # start-up 60 s. s1 started at 980: STARTING until 1040, ends 1040 + 100. s2 started at 500:
    # its start-up ended at 560, so it ends at T0 + 200. p needs both instances: starts at 1200,
    # ends 1200 + 60 + 10.
    snapshot = read_snapshot({
        "time": 1000,
        "running": [
            {"job_id": "s1", "share": "A", "started_at": 980, "remaining_seconds": 100},
            {"job_id": "s2", "share": "A", "started_at": 500, "remaining_seconds": 200},
        ],
        "pending": [{"job_id": "p", "share": "A", "submit_time": 10, "instance_count": 2, "duration": 10}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(one_share(startup=60), snapshot, samples=3)))
    assert jobs["s1"]["end"] == same(1140)
    assert jobs["s2"]["end"] == same(1200)
    assert jobs["p"]["start"] == same(1200) and jobs["p"]["end"] == same(1270)
    assert jobs["p"]["p_start_within"] == {"1h": 1.0, "24h": 1.0}


def two_shares() -> Policy:
    return Policy.from_dict({
        "name": "p", "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1.0}}, "capacity": {"gpu": 2},
        "shares": [{"name": "A", "capacity": {"gpu": 1}, "strategy": "LEND_AND_BORROW"},
                   {"name": "B", "capacity": {"gpu": 1}, "strategy": "LEND"}],
    })  # fmt: skip


@pytest.mark.parametrize(("checkpoint", "a2_end"), [(None, 2600.0), (200, 2200.0)])
def test_a_running_job_reclaimed_at_t0_loses_its_work_since_started_at(checkpoint, a2_end):
    # A borrows B's instance with a2 (started at 500). B's b1 reclaims it at T0: a2 has done 500 s,
    # all lost without checkpoints (rerun 500 + 1000 from 1100, when b1 ends), 400 kept with a
    # checkpoint every 200 s (rerun 1100 from 1100).
    a2 = {"job_id": "a2", "share": "A", "started_at": 500, "remaining_seconds": 1000}
    if checkpoint:
        a2["checkpoint_interval"] = checkpoint
    snapshot = read_snapshot({
        "time": 1000,
        "running": [{"job_id": "a1", "share": "A", "started_at": 0, "remaining_seconds": 1000}, a2],
        "pending": [{"job_id": "b1", "share": "B", "submit_time": 900, "duration": 100}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(two_shares(), snapshot, samples=2)))
    assert jobs["b1"]["start"] == same(1000) and jobs["b1"]["end"] == same(1100)
    assert jobs["b1"]["reason"] is None  # it does not wait: it starts in T0's pass
    assert jobs["a2"]["start"] == same(500)  # a running job's start is its started_at
    assert jobs["a2"]["end"] == same(a2_end)
    assert jobs["a1"]["end"] == same(2000)


def test_running_jobs_beyond_capacity_at_t0_are_preempted_as_section_9_does():
    # The calendar halves the pool at 500 (before T0): of two running jobs, the most recently
    # started goes at T0 (cause capacity) and reruns its whole work when the other ends.
    halved = [{"time": 500, "capacity": {"gpu": 1}}, {"time": 500, "share": "A", "capacity": {"gpu": 1}}]
    policy = one_share(changes=halved)
    snapshot = read_snapshot({
        "time": 1000,
        "running": [
            {"job_id": "old", "share": "A", "started_at": 100, "remaining_seconds": 50},
            {"job_id": "new", "share": "A", "started_at": 800, "remaining_seconds": 100},
        ],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(policy, snapshot, samples=1)))
    assert jobs["old"]["end"] == same(1050)
    assert jobs["new"]["end"] == same(1050 + 200 + 100)


def test_a_calendar_change_after_t0_applies_then():
    # Capacity 1 until 5000, 2 from then on (a training plan): p waits for it.
    policy = Policy.from_dict({
        "name": "p", "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1.0}}, "capacity": {"gpu": 1},
        "shares": [{"name": "A", "capacity": {"gpu": 1}, "strategy": "LEND_AND_BORROW"}],
        "changes": [{"time": 5000, "capacity": {"gpu": 2}}],
    })  # fmt: skip
    snapshot = read_snapshot({
        "time": 1000,
        "running": [{"job_id": "r", "share": "A", "started_at": 0, "remaining_seconds": 9000}],
        "pending": [{"job_id": "p", "share": "A", "submit_time": 0, "duration": 10}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(policy, snapshot, samples=1)))
    assert jobs["p"]["start"] == same(5000)
    assert jobs["p"]["p_start_within"] == {"1h": 0.0, "24h": 1.0}


def test_a_job_past_the_horizon_has_no_quantiles():
    snapshot = read_snapshot({
        "time": 0,
        "running": [{"job_id": "r", "share": "A", "started_at": 0, "remaining_seconds": 3 * 86_400}],
        "pending": [{"job_id": "p", "share": "A", "submit_time": 0, "instance_count": 2, "duration": 10}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(one_share(), snapshot, samples=2, horizon_days=2)))
    assert jobs["p"]["start"] == {"p10": None, "p50": None, "p90": None}
    assert jobs["p"]["p_start_within"] == {"1h": 0.0, "24h": 0.0}
    assert jobs["r"]["end"] == {"p10": None, "p50": None, "p90": None}


def test_a_runnable_timeout_counts_from_submit_time():
    policy = one_share(capacity=1, runnable_timeout_seconds=600)
    snapshot = read_snapshot({
        "time": 1000,
        "running": [{"job_id": "r", "share": "A", "started_at": 0, "remaining_seconds": 5000}],
        "pending": [{"job_id": "late", "share": "A", "submit_time": 700, "duration": 10},
                    {"job_id": "old", "share": "A", "submit_time": 100, "duration": 10}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(policy, snapshot, samples=1)))
    assert jobs["old"]["reason"] == "runnable_timeout"  # its 600 s ran out at 700, before T0
    assert jobs["old"]["start"]["p50"] is None
    assert jobs["late"]["reason"] == "pool_full"
    assert jobs["late"]["start"]["p50"] is None  # cancelled at 700 + 600, before r ends at 5000


def test_unschedulable_job_has_section_6_reason():
    snapshot = read_snapshot(
        {
            "time": 0,
            "pending": [
                {"job_id": "big", "share": "A", "submit_time": 0, "instance_count": 3, "duration": 10}
            ],
        }
    )
    jobs = jobs_by_id(forecast(ForecastInputs(one_share(), snapshot, samples=1)))
    assert jobs["big"]["reason"] == "SERVICE_ENVIRONMENT_MAX_RESOURCE"
    assert jobs["big"]["start"]["p50"] is None


def test_no_history_uses_max_runtime_and_reports_no_duration():
    snapshot = read_snapshot({
        "time": 0,
        "running": [{"job_id": "r", "share": "A", "started_at": 0, "max_runtime_seconds": 100}],
        "pending": [{"job_id": "q", "share": "A", "submit_time": 0, "instance_count": 2}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(one_share(), snapshot, samples=1)))
    assert jobs["r"]["end"] == same(100)
    assert jobs["q"]["reason"] == "no_duration"
    assert jobs["q"]["start"] == {"p10": None, "p50": None, "p90": None}


def test_chunks_give_the_same_forecast_and_round_trip_json():
    inputs = ForecastInputs(one_share(), read_snapshot(SNAPSHOT), samples=5)
    parts = [run_samples(inputs, 3, 2), run_samples(inputs, 0, 3)]
    from scheduling.forecast import SampleStarts

    parts = [SampleStarts.from_json(p.to_json()) for p in parts]
    assert merge_samples(inputs, parts) == forecast(inputs)
    with pytest.raises(ValueError):
        merge_samples(inputs, parts[:1])


def test_snapshot_json_round_trip():
    snapshot = read_snapshot(SNAPSHOT)
    assert read_snapshot(snapshot_to_json(snapshot)) == snapshot


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"pending": [{"job_id": "x", "share": "A"}]}, "pending[0] (job 'x').submit_time"),
        ({"running": [{"job_id": "x", "share": "A", "started_at": 2000}]}, "running[0] (job 'x').started_at"),
        (
            {"pending": [{"job_id": "x", "share": "A", "submit_time": 1, "duration": -3}]},
            "pending[0] (job 'x').duration",
        ),
        (
            {"pending": [{"job_id": "x", "share": "A", "submit_time": 1, "color": 3}]},
            "pending[0] (job 'x').color",
        ),
        ({"pending": [{"share": "A", "submit_time": 1}]}, "pending[0].job_id"),
        (
            {
                "running": [{"job_id": "x", "share": "A", "started_at": 1}],
                "pending": [{"job_id": "x", "share": "A", "submit_time": 1}],
            },
            "pending[0].job_id",
        ),
    ],
)
def test_bad_snapshot_names_record_and_field(change, field):
    with pytest.raises(InputError) as caught:
        read_snapshot({"time": 1000, **change})
    assert caught.value.field == field


def test_unknown_share_is_refused_with_its_record():
    snapshot = read_snapshot({"time": 5, "pending": [{"job_id": "x", "share": "Z", "submit_time": 1}]})
    with pytest.raises(InputError) as caught:
        forecast(ForecastInputs(one_share(), snapshot, samples=1))
    assert caught.value.field == "pending[0] (job 'x').share"


def test_strict_fifo_head_and_behind_it():
    # strict_fifo: h (2 instances) heads the queue and cannot fit beside r; s waits behind it even
    # though one instance is idle. r ends at 1100: h runs until 1150, then s.
    policy = one_share(queueing="strict_fifo")
    snapshot = read_snapshot({
        "time": 1000,
        "running": [{"job_id": "r", "share": "A", "started_at": 0, "remaining_seconds": 100}],
        "pending": [{"job_id": "h", "share": "A", "submit_time": 900, "instance_count": 2, "duration": 50},
                    {"job_id": "s", "share": "A", "submit_time": 950, "duration": 10}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(policy, snapshot, samples=1)))
    assert jobs["h"]["reason"] == "pool_full" and jobs["s"]["reason"] == "behind_queue_head"
    assert jobs["h"]["start"] == same(1100) and jobs["s"]["start"] == same(1150)


def test_fair_sharing_reclaims_from_a_running_job_at_t0():
    # Fair sharing on: A borrows B's instance with two jobs started at 0. B's b is within its quota:
    # A (value > 0) is the target; of a1 and a2 (started together) a2 goes (job_id descending),
    # losing its 1000 s of work: it reruns 2000 s from 1100, when b ends.
    policy = Policy.from_dict({**two_shares().to_dict(), "fair_sharing": {}})
    snapshot = read_snapshot({
        "time": 1000,
        "running": [{"job_id": "a1", "share": "A", "started_at": 0, "remaining_seconds": 1000},
                    {"job_id": "a2", "share": "A", "started_at": 0, "remaining_seconds": 1000}],
        "pending": [{"job_id": "b", "share": "B", "submit_time": 500, "duration": 100}],
    })  # fmt: skip
    jobs = jobs_by_id(forecast(ForecastInputs(policy, snapshot, samples=1)))
    assert jobs["b"]["start"] == same(1000)
    assert jobs["a1"]["end"] == same(2000)
    assert jobs["a2"]["end"] == same(3100)
