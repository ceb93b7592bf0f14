"""Commons games on tiny hand-made traces: priority inflation per share and week, bursts of small
jobs per user, and stranded RESERVE quota read from a replay's metrics."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduling.commons import WEEK, job_splitting, priority_inflation, reserve_hoarding, slope_trend
from scheduling.errors import InputError
from scheduling.trace import NO_TYPE, Trace


def make_trace(
    rows: list[tuple], *, shares: list[str], users: bool = True, types: list[str] | None = None
) -> Trace:
    """rows: (submit_time, share, priority, instance_count, duration, user[, type code])."""
    n = len(rows)
    return Trace(
        job_id=[f"j{i}" for i in range(n)],
        submit_time=np.array([r[0] for r in rows], dtype=np.float64),
        share=np.array([shares.index(r[1]) for r in rows], dtype=np.int32),
        share_names=shares,
        priority=np.array([r[2] for r in rows], dtype=np.int32),
        instance_type=np.array([r[6] if len(r) > 6 else NO_TYPE for r in rows], dtype=np.int32),
        type_names=types or [],
        instance_count=np.array([r[3] for r in rows], dtype=np.int32),
        duration=np.array([r[4] for r in rows], dtype=np.float64),
        checkpoint_interval=np.full(n, np.nan),
        preemption_retries=np.zeros(n, dtype=np.int32),
        user=[r[5] for r in rows] if users else None,
    )


# -- priority inflation ------------------------------------------------------------------------


def test_slope_trend_by_hand():
    # y = 0, 0.1, 0.2, 0.3 lies on a line: the slope is exact, t undefined, and it grows.
    exact = slope_trend(np.array([0.0, 0.1, 0.2, 0.3]))
    assert exact["slope"] == pytest.approx(0.1) and exact["t"] is None and exact["growing"]
    # y = 0, 1, 0, 1 against x = 0..3: dx = -1.5 -0.5 0.5 1.5, sum dx*dy = 1, sxx = 5, slope 0.2;
    # residuals -0.2 0.6 -0.6 0.2 (sum of squares 0.8), standard error sqrt(0.8 / 2 / 5) = 0.283
    noisy = slope_trend(np.array([0.0, 1.0, 0.0, 1.0]))
    assert noisy["slope"] == pytest.approx(0.2)
    assert noisy["t"] == pytest.approx(0.2 / math.sqrt(0.08))
    assert noisy["t"] < 2 and not noisy["growing"]
    assert not slope_trend(np.array([0.3, 0.2, 0.1, 0.0]))["growing"]
    assert not slope_trend(np.array([0.0, 0.5, 1.0]))["growing"]  # exact, but only 3 weeks
    assert slope_trend(np.array([0.5]))["slope"] == 0.0


def test_priority_inflation_per_share_and_week():
    day = 86400.0
    rows = [
        # week 0: team a 1 of 2 at top (9); team b at 1 and 5
        (0, "a", 9, 1, 60, "u1"),
        (day, "a", 1, 1, 60, "u1"),
        (0, "b", 1, 1, 60, "u2"),
        (day, "b", 5, 1, 60, "u2"),
        # week 1: team a 2 of 2 at top; team b nothing
        (WEEK + 1, "a", 9, 1, 60, "u1"),
        (WEEK + 2, "a", 9, 1, 60, "u1"),
        # week 2: team a 1 of 1 at top, team b one at 1
        (2 * WEEK, "a", 9, 1, 60, "u1"),
        (2 * WEEK + 5, "b", 1, 1, 60, "u2"),
    ]
    trace = make_trace(rows, shares=["a", "b"])
    result = priority_inflation(trace)
    assert result["top_priority"] == 9
    # priorities sorted 1 1 1 1 5 9 9 9 9 (n=8: 1,1,1,5,9,9,9,9): the 90th percentile ('lower') is 9
    assert result["high_priority"] == 9
    assert result["periods"] == [0.0, WEEK, 2 * WEEK]
    a = result["shares"]["a"]
    assert a["jobs"] == [2, 2, 1] and a["top"] == [1, 2, 1]
    assert a["top_fraction"] == [0.5, 1.0, 1.0]
    assert a["total"] == {"jobs": 5, "top": 4, "high": 4}
    # fractions 0.5, 1, 1 against weeks 0, 1, 2: slope 0.25, but three weeks are too few to call
    assert a["trend"]["top"]["slope"] == pytest.approx(0.25) and not a["trend"]["top"]["growing"]
    b = result["shares"]["b"]
    assert b["jobs"] == [2, 0, 1] and b["top_fraction"] == [0.0, None, 0.0]
    assert b["trend"]["top"]["points"] == 2  # the empty week is left out of the trend


def test_a_team_that_inflates_is_flagged_and_a_steady_one_is_not():
    rows = []
    for week in range(6):
        for job in range(10):  # team "up": week w has w+1 of 10 jobs... at top, plus noise-free
            rows.append((week * WEEK + job, "up", 7 if job <= week else 0, 1, 60, "u"))
            rows.append((week * WEEK + job, "flat", 7 if job < 3 else 0, 1, 60, "v"))
    result = priority_inflation(make_trace(rows, shares=["up", "flat"]))
    up, flat = result["shares"]["up"], result["shares"]["flat"]
    assert up["top_fraction"] == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    assert up["trend"]["top"]["growing"] and up["trend"]["top"]["slope"] == pytest.approx(0.1)
    assert flat["trend"]["top"]["slope"] == pytest.approx(0.0) and not flat["trend"]["top"]["growing"]


def test_a_long_trace_gets_wider_periods_and_stays_bounded():
    rows = [(w * WEEK, "a", w % 3, 1, 60, "u") for w in range(600)]
    result = priority_inflation(make_trace(rows, shares=["a"]))
    assert len(result["periods"]) <= 260
    assert result["period_seconds"] == 3 * WEEK
    assert sum(result["shares"]["a"]["jobs"]) == 600


def test_empty_trace_and_bad_period():
    empty = make_trace([], shares=["a"])
    assert priority_inflation(empty)["shares"] == {}
    with pytest.raises(InputError) as error:
        priority_inflation(empty, period_seconds=0)
    assert error.value.field == "period_seconds"


# -- job splitting -----------------------------------------------------------------------------


def test_a_burst_of_small_jobs_by_hand():
    rows = [(10 + i, "a", 0, 1, 3600, "alice") for i in range(8)]  # 8 one-instance jobs in 8 s
    rows += [(100 + 7 * i, "a", 0, 2, 1800, "bob") for i in range(8)]  # 8 two-instance jobs in 49 s
    rows += [(500 + 9 * i, "a", 0, 1, 60, "carol") for i in range(8)]  # spread over 63 s: no burst
    rows += [(0, "b", 0, 16, 7200, "dave")]  # the largest job: 16 instances
    rows += [(1000 + i, "b", 0, 1, 60, "dave") for i in range(7)]  # only 7
    result = job_splitting(make_trace(rows, shares=["a", "b"]), gpus_per_type=None)
    assert result["by"] == "user"
    assert result["bursts"] == 2 and result["jobs_in_bursts"] == 16
    assert result["gpu_hours_in_bursts"] == pytest.approx(8 * 1 + 8 * 2 * 0.5)
    users = {u["user"]: u for u in result["users"]}
    assert set(users) == {"alice", "bob"}
    assert users["alice"] == {
        "user": "alice",
        "share": "a",
        "bursts": 1,
        "jobs_in_bursts": 8,
        "jobs": 8,
        "gpu_hours_in_bursts": pytest.approx(8.0),
        "gpu_hours": pytest.approx(8.0),
        "gpu_hours_fraction": pytest.approx(1.0),
    }
    a = result["shares"]["a"]
    # share a: alice 8 + bob 8 + carol 8 * 1/60 GPU-hours
    assert a["gpu_hours"] == pytest.approx(16 + 8 / 60)
    assert a["gpu_hours_fraction"] == pytest.approx(16 / (16 + 8 / 60))
    assert a["bursts"] == 2 and a["bursts_per_period"] == [2]
    assert result["shares"]["b"]["bursts"] == 0
    assert result["users_with_bursts"] == 2


def test_a_burst_that_no_single_job_could_hold_is_not_splitting():
    # 10 two-instance jobs (20 instances) while the largest job of the trace has 4 instances.
    rows = [(i, "a", 0, 2, 60, "alice") for i in range(10)] + [(500, "a", 0, 4, 60, "bob")]
    assert job_splitting(make_trace(rows, shares=["a"]))["bursts"] == 0
    rows.append((600, "a", 0, 20, 60, "bob"))
    assert job_splitting(make_trace(rows, shares=["a"]))["bursts"] == 1


def test_windows_are_greedy_and_per_instance_type():
    # 20 jobs within 60 s of the first are one burst (the window starts at the first job), the next
    # 8 start a second one; 8 jobs split over two instance types are two groups of 4: no burst.
    rows = [(i * 3, "a", 0, 1, 60, "alice", 0) for i in range(20)]  # 0..57 s: one burst of 20
    rows += [(61 + i, "a", 0, 1, 60, "alice", 0) for i in range(8)]  # 61..68 s: a second burst
    rows += [(1000 + i, "a", 0, 1, 60, "bob", i % 2) for i in range(8)]
    rows += [(5000, "a", 0, 24, 60, "eve", 0), (5000, "a", 0, 8, 60, "eve", 1)]
    trace = make_trace(rows, shares=["a"], types=["p4d", "g5"])
    result = job_splitting(trace, gpus_per_type={"p4d": 8, "g5": 1})
    assert result["bursts"] == 2 and result["jobs_in_bursts"] == 28
    alice = result["users"][0]
    assert alice["user"] == "alice" and alice["bursts"] == 2
    assert alice["gpu_hours_in_bursts"] == pytest.approx(28 * 8 / 60)


def test_without_users_bursts_are_per_share_and_the_list_is_bounded():
    rows = []
    for s in range(30):
        rows += [(s * 1000 + i, f"s{s}", 0, 1, 60, None) for i in range(8)]
    rows.append((99_000, "s0", 0, 8, 60, None))  # a job that could hold any of the bursts
    trace = make_trace(rows, shares=[f"s{s}" for s in range(30)], users=False)
    result = job_splitting(trace, top=5)
    assert result["by"] == "share" and result["bursts"] == 30
    assert len(result["users"]) == 5 and result["users_with_bursts"] == 30
    assert result["users"][0]["user"] == result["users"][0]["share"]


def test_bad_burst_parameters():
    trace = make_trace([(0, "a", 0, 1, 60, "u")], shares=["a"])
    for options, field in (({"window_seconds": -1}, "window_seconds"), ({"min_jobs": 1}, "min_jobs")):
        with pytest.raises(InputError) as error:
            job_splitting(trace, **options)
        assert error.value.field == field


# -- RESERVE hoarding --------------------------------------------------------------------------


def test_reserve_hoarding_from_metrics():
    metrics = {
        "summary": {"epoch_times": False},
        "shares": [
            {
                "name": "vault",
                "strategy": "RESERVE",
                "capacity_gpu_hours": 96.0,
                "idle_gpu_hours": 40.0,
                "stranded_gpu_hours": 24.0,
                "stranded_usd": 36.0,
            },
            {
                "name": "team",
                "strategy": "LEND_AND_BORROW",
                "capacity_gpu_hours": 96.0,
                "idle_gpu_hours": 10.0,
                "stranded_gpu_hours": 0.0,
                "stranded_usd": 0.0,
            },
            {
                "name": "capped",
                "strategy": "LEND",
                "capacity_gpu_hours": 48.0,
                "idle_gpu_hours": 10.0,
                "stranded_gpu_hours": 6.0,
                "stranded_usd": 9.0,
            },
        ],
        "periods": {
            "day": [0.0, 86400.0],
            "shares": {
                "vault": {
                    "capacity": [48.0, 48.0],
                    "stranded": [20.0, 4.0],
                    "usd": {"stranded": [30.0, 6.0]},
                },
                "capped": {"capacity": [24.0, 24.0], "stranded": [6.0, 0.0], "usd": {"stranded": [9.0, 0.0]}},
            },
        },
    }
    result = reserve_hoarding(metrics)
    assert list(result["shares"]) == ["vault", "capped"]  # team neither reserves nor strands
    vault = result["shares"]["vault"]
    assert vault["stranded_fraction"] == pytest.approx(0.25)
    assert vault["days"]["stranded_gpu_hours"] == [20.0, 4.0]
    assert vault["days"]["stranded_usd"] == [30.0, 6.0]
    assert vault["days"]["stranded_fraction"] == pytest.approx([20 / 48, 4 / 48])
    assert result["total"]["stranded_gpu_hours"] == 30.0 and result["total"]["stranded_usd"] == 45.0
    assert result["total"]["stranded_fraction"] == pytest.approx(30 / 144)
    assert result["days"] == [0.0, 86400.0]


def test_reserve_hoarding_of_a_pool_without_reserve():
    result = reserve_hoarding({"shares": [{"name": "t", "strategy": "LEND", "stranded_gpu_hours": 0}]})
    assert result["shares"] == {} and result["total"]["stranded_fraction"] == 0.0
