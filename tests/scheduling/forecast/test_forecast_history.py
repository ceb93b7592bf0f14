"""Section 11's choices for durations and arrivals drawn from history, each with a hand-computed
outcome, and the seed's contract: sample i depends on (seed, i) only."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.forecast import ForecastInputs, forecast, read_snapshot, run_samples
from scheduling.forecast.arrivals import ArrivalDays
from scheduling.forecast.durations import DurationHistory, size_class
from scheduling.forecast.summary import quantiles
from scheduling.model import Policy
from scheduling.trace import Trace

DAY = 86_400.0
T0 = 10 * DAY


def policy(capacity: int = 1) -> Policy:
    return Policy.from_dict({
        "name": "p", "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1.0}},
        "capacity": {"gpu": capacity},
        "shares": [{"name": "A", "capacity": {"gpu": capacity}, "strategy": "LEND_AND_BORROW"},
                   {"name": "B", "capacity": {"gpu": 0}, "strategy": "LEND_AND_BORROW"}],
    })  # fmt: skip


def history(rows: list[tuple[str, int, float]], submit: list[float] | None = None, **columns) -> Trace:
    """(share, instance_count, duration) rows, submitted long before T0 unless given."""
    n = len(rows)
    names = ["A", "B", "C"]
    return Trace(
        job_id=[f"h{i}" for i in range(n)],
        submit_time=np.array(submit if submit is not None else [float(i) for i in range(n)]),
        share=np.array([names.index(r[0]) for r in rows], dtype=np.int32),
        share_names=names,
        priority=np.array(columns.get("priority", [0] * n), dtype=np.int32),
        instance_type=np.zeros(n, dtype=np.int32),
        type_names=["gpu"],
        instance_count=np.array([r[1] for r in rows], dtype=np.int32),
        duration=np.array([r[2] for r in rows], dtype=np.float64),
        checkpoint_interval=np.full(n, np.nan),
        preemption_retries=np.full(n, -1, dtype=np.int32),
        recorded_start=np.array(columns["recorded_start"]) if "recorded_start" in columns else None,
    )


def test_size_classes():
    assert [size_class(c) for c in (1, 2, 7, 8, 63, 64, 500)] == [0, 1, 1, 2, 2, 3, 3]


def test_class_then_share_then_everything_below_30_durations():
    rows = [("A", 1, 100.0)] * 30 + [("A", 8, 1000.0)] * 5 + [("B", 8, 5000.0)] * 40 + [("C", 1, 7.0)] * 10
    h = DurationHistory(history(rows))
    assert set(h.pool("A", 1).tolist()) == {100.0} and len(h.pool("A", 1)) == 30  # its class: 30
    assert len(h.pool("A", 9)) == 35  # 5 in its class: its share's 35
    assert len(h.pool("B", 8)) == 40
    assert len(h.pool("C", 1)) == 85  # 10 in class and share: the whole history
    assert len(h.pool("unknown", 1)) == 85


def snapshot(running=(), pending=()) -> dict:
    return {"time": T0, "running": list(running), "pending": list(pending)}


def ends(result: dict, job_id: str) -> dict:
    return next(j for j in result["jobs"] if j["job_id"] == job_id)


def test_pending_draws_from_its_class_and_is_capped():
    h = history([("A", 1, 100.0)] * 30 + [("A", 2, 900.0)] * 30)
    snap = read_snapshot(snapshot(pending=[
        {"job_id": "p", "share": "A", "submit_time": T0},
        {"job_id": "q", "share": "A", "submit_time": T0 + 0, "instance_count": 1, "max_runtime_seconds": 60,
         "priority": 0},
    ]))  # fmt: skip
    out = forecast(ForecastInputs(policy(), snap, h, samples=20, arrivals="none"))
    # p (job_id order first at the same submit time) runs 100 s; q starts then, capped at 60 s
    assert ends(out, "p")["end"] == {"p10": T0 + 100, "p50": T0 + 100, "p90": T0 + 100}
    assert ends(out, "q")["start"]["p50"] == T0 + 100
    assert ends(out, "q")["end"]["p50"] == T0 + 160


@pytest.mark.parametrize(
    ("started", "max_runtime", "end"),
    [
        (T0 - 150, None, T0 + 50),  # ran 150: draws from the durations > 150 (all 200): 50 more
        (T0 - 300, None, T0 + 300),  # ran 300, none ran longer: it keeps as long again
        (T0 - 300, 320.0, T0 + 20),  # ... capped at max_runtime - e
        (T0 - 50, None, None),  # ran 50: 100 or 200, minus 50: checked below
    ],
)
def test_running_jobs_draw_by_survival(started, max_runtime, end):
    h = history([("A", 1, 100.0)] * 30 + [("A", 1, 200.0)] * 30)
    job = {"job_id": "r", "share": "A", "started_at": started}
    if max_runtime:
        job["max_runtime_seconds"] = max_runtime
    snap = read_snapshot(snapshot(running=[job]))
    out = forecast(ForecastInputs(policy(), snap, h, samples=40, arrivals="none"))
    got = ends(out, "r")["end"]
    if end is not None:
        assert got == {"p10": end, "p50": end, "p90": end}
    else:
        assert got["p10"] == T0 + 50 and got["p90"] == T0 + 150


def test_startup_is_not_work_for_survival():
    # start-up 100 s: a job started 250 s ago has worked 150 s (draws from > 150: 200 -> 50 more)
    p = Policy.from_dict({**policy().to_dict(), "startup_seconds": 100})
    h = history([("A", 1, 100.0)] * 30 + [("A", 1, 200.0)] * 30)
    snap = read_snapshot(snapshot(running=[{"job_id": "r", "share": "A", "started_at": T0 - 250}]))
    out = forecast(ForecastInputs(p, snap, h, samples=10, arrivals="none"))
    assert ends(out, "r")["end"]["p50"] == T0 + 50


def test_same_inputs_same_forecast_and_sample_i_from_seed_and_i_only():
    h = history([("A", 1, float(d)) for d in range(10, 400, 10)])
    snap = read_snapshot(snapshot(
        running=[{"job_id": "r", "share": "A", "started_at": T0 - 5}],
        pending=[{"job_id": f"p{i}", "share": "A", "submit_time": T0 - i} for i in range(5)],
    ))  # fmt: skip
    inputs = ForecastInputs(policy(), snap, h, samples=12, seed=7, arrivals="none")
    assert forecast(inputs) == forecast(inputs)
    whole = run_samples(inputs, 0, 12)
    assert np.array_equal(run_samples(inputs, 5, 3).start, whole.start[5:8], equal_nan=True)
    other = ForecastInputs(policy(), snap, h, samples=12, seed=8, arrivals="none")
    assert not np.array_equal(run_samples(other, 0, 12).end, whole.end, equal_nan=True)
    spread = ends(forecast(inputs), "p4")["start"]
    assert spread["p10"] < spread["p90"]  # drawn durations spread the later starts


def test_quantiles_count_samples_that_did_not_start_as_later_than_all():
    assert quantiles(np.arange(1.0, 11.0)) == {"p10": 1.0, "p50": 5.0, "p90": 9.0}
    assert quantiles(np.array([1.0, 2.0] + [math.nan] * 8)) == {"p10": 1.0, "p50": None, "p90": None}
    assert quantiles(np.array([3.0] * 9 + [math.nan])) == {"p10": 3.0, "p50": 3.0, "p90": 3.0}


def test_arrivals_resample_whole_days_of_the_week_before_t0():
    # One job on each of the 7 days before T0, on day j at (j * 1000) s into it (days counted from
    # T0): each day after T0 holds one arrival, at the time of day of the day it copies.
    submit = [T0 - j * DAY + j * 1000 for j in range(1, 8)] + [T0 - 9 * DAY]  # (the last: too old)
    h = history([("A", 1, 10.0)] * 8, submit=submit)
    days = ArrivalDays(h, T0, policy())
    positions, times = days.draw(np.random.default_rng(3), T0 + 5 * DAY)
    assert len(times) == 5
    for i, t in enumerate(sorted(times)):
        offset = t - T0 - i * DAY
        assert offset in {1000.0 * j for j in range(1, 8)}
    # a part day: its arrivals up to the horizon
    assert len(days.draw(np.random.default_rng(3), T0 + 5.5 * DAY)[1]) == 6


def test_arrivals_take_their_place_in_the_queue():
    # Every day of the week one job at 600 s into the day, priority 9, 7200 s. r ends at T0 + 3600:
    # the arrival at T0 + 600 (priority 9) goes before p (priority 0), so p starts at T0 + 10800.
    submit = [T0 - j * DAY + 600 for j in range(1, 8)]
    h = history([("A", 1, 7200.0)] * 7, submit=submit, priority=[9] * 7)
    snap = read_snapshot(snapshot(
        running=[{"job_id": "r", "share": "A", "started_at": T0 - 10, "remaining_seconds": 3600}],
        pending=[{"job_id": "p", "share": "A", "submit_time": T0 - 5, "duration": 100}],
    ))  # fmt: skip
    with_arrivals = forecast(ForecastInputs(policy(), snap, h, samples=5, horizon_days=2))
    assert with_arrivals["arrivals"] == "history"
    assert ends(with_arrivals, "p")["start"] == {"p10": T0 + 10800, "p50": T0 + 10800, "p90": T0 + 10800}
    without = forecast(ForecastInputs(policy(), snap, h, samples=5, horizon_days=2, arrivals="none"))
    assert ends(without, "p")["start"]["p50"] == T0 + 3600


def test_baselines():
    # History waits of A: 100, 200, 300 (median 200). requested_time: r runs its max_runtime 400
    # (300 more), where the forecast uses its remaining 50.
    h = history([("A", 1, 50.0)] * 3, submit=[0.0, 10.0, 20.0], recorded_start=[100.0, 210.0, 320.0])
    snap = read_snapshot(snapshot(
        running=[{"job_id": "r", "share": "A", "started_at": T0 - 100, "remaining_seconds": 50,
                  "max_runtime_seconds": 400}],
        pending=[{"job_id": "fresh", "share": "A", "submit_time": T0 - 50, "duration": 10},
                 {"job_id": "old", "share": "A", "submit_time": T0 - 500, "duration": 10}],
    ))  # fmt: skip
    out = forecast(ForecastInputs(policy(), snap, h, samples=3, arrivals="none"))
    old = ends(out, "old")
    fresh = ends(out, "fresh")
    assert old["start"]["p50"] == T0 + 50
    # requested_time: r until T0 + 300; old (history p90 duration 50) then fresh at T0 + 350
    assert old["baselines"] == {"requested_time": T0 + 300, "share_median_wait": T0}
    assert fresh["baselines"] == {"requested_time": T0 + 350, "share_median_wait": T0 + 150}
    assert ends(out, "r")["baselines"] == {"requested_time": T0 - 100, "share_median_wait": T0 - 100}


def test_arrivals_without_a_type_in_a_one_type_pool_and_with_an_unknown_type():
    submit = [T0 - DAY + 100.0]
    h = history([("A", 1, 10.0)], submit=submit)
    h.instance_type[:] = -1  # omitted: the pool's one type
    days = ArrivalDays(h, T0, policy())
    assert days.columns(np.array([0]))["instance_type"].tolist() == [0]
    h.type_names = ["tpu"]
    h.instance_type[:] = 0
    with pytest.raises(InputError) as caught:
        ArrivalDays(h, T0, policy())
    assert (caught.value.row, caught.value.field) == (1, "history.instance_type")


def test_duration_windows_draw_a_sample_from_one_period():
    # Beyond section 11 (opt-in): 60 jobs of 100 s half an hour apart from 0, 60 of 500 s from
    # 1000 hours. A 2-day window around any job holds 48 or more of its period's and none of the
    # other's: in each sample both pending jobs (both start at T0 on two instances) run 100 s or both
    # 500 s; with the whole pool they mix.
    half_hours = [1800.0 * i for i in range(60)]
    h = history([("A", 1, 100.0)] * 60 + [("A", 1, 500.0)] * 60,
                submit=half_hours + [3.6e6 + t for t in half_hours])  # fmt: skip
    snap = read_snapshot(
        snapshot(
            pending=[
                {"job_id": "p", "share": "A", "submit_time": T0},
                {"job_id": "q", "share": "A", "submit_time": T0},
            ]
        )
    )
    windowed = ForecastInputs(policy(2), snap, h, samples=24, arrivals="none", duration_window_days=2)
    ends_ = run_samples(windowed, 0, 24).end - T0
    assert all(row[0] == row[1] for row in ends_.tolist())
    assert set(ends_[:, 0].tolist()) == {100.0, 500.0}
    whole = ForecastInputs(policy(2), snap, h, samples=24, arrivals="none")
    mixed = run_samples(whole, 0, 24).end - T0
    assert any(row[0] != row[1] for row in mixed.tolist())
    assert forecast(windowed)["duration_window_days"] == 2


def test_a_window_with_fewer_than_30_durations_falls_back_to_the_whole_pool():
    hours = [3600.0 * i for i in range(20)]
    h = history([("A", 1, 100.0)] * 20 + [("A", 1, 500.0)] * 20, submit=hours + [3.6e6 + t for t in hours])
    durations = DurationHistory(h)
    pool = durations.pool("A", 1)
    assert durations.windowed(pool, np.random.default_rng(0), 2) is None  # 20 in any window
    assert len(durations.windowed(pool, np.random.default_rng(0), 2000)) == 40
    with pytest.raises(InputError):
        ForecastInputs(policy(), read_snapshot(snapshot()), h, duration_window_days=0)


def test_history_arrivals_without_a_job_in_the_week_before_t0_are_refused():
    h = history([("A", 1, 10.0)] * 3, submit=[0.0, 1.0, 2.0])  # 10 days before T0
    snap = read_snapshot(snapshot(pending=[{"job_id": "p", "share": "A", "submit_time": T0}]))
    with pytest.raises(InputError) as caught:
        forecast(ForecastInputs(policy(), snap, h, samples=1))
    assert caught.value.field == "arrivals"
    out = forecast(ForecastInputs(policy(), snap, h, samples=1, arrivals="none"))
    assert out["jobs"][0]["start"]["p50"] == T0


def test_share_median_wait_from_a_replay_of_a_history_without_recorded_starts():
    # No recorded starts: the history is replayed under the policy (1 instance). Jobs of 10 s
    # submitted at T0 - 100, -95, -90 start at -100, -90, -80: waits 0, 5, 10, median 5; p, waiting
    # since T0 - 2: T0 + 3.
    h = history([("A", 1, 10.0)] * 3, submit=[T0 - 100, T0 - 95, T0 - 90])
    pending = [{"job_id": "p", "share": "A", "submit_time": T0 - 2, "duration": 1}]
    snap = read_snapshot(snapshot(pending=pending))
    out = forecast(ForecastInputs(policy(), snap, h, samples=1))
    assert out["jobs"][0]["baselines"]["share_median_wait"] == T0 + 3
