"""SEMANTICS.md section 5: runs compared together are measured over one window, the union of
their spans; a policy whose last job ends earlier is idle after it. Hand-computed."""

from __future__ import annotations

import pytest
from conftest import make_trace, table

from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.window import common_window, measure_over, span_of

HOUR = 3600.0
POOL = {
    "instance_types": {"gpu": {"gpus": 1, "hourly_price": 2.0}},
    "capacity": {"gpu": 2},
    "shares": [
        {"name": "A", "capacity": {"gpu": 1}, "strategy": "LEND_AND_BORROW"},
        {"name": "B", "capacity": {"gpu": 1}, "strategy": "LEND_AND_BORROW"},
    ],
}
# A submits two one-hour jobs at 0: pooled, they run side by side (A borrows B's idle GPU) and
# end at 1 h; under a static split the second waits for the first and ends at 2 h.
JOBS = make_trace(
    table("""
    job_id submit_time share duration
    a1     0           A     3600
    a2     0           A     3600
""")
)
STATIC = {**POOL, "shares": [{**s, "strategy": "RESERVE"} for s in POOL["shares"]]}


def metrics(policy: dict, window=None) -> dict:
    return replay(Policy.from_dict(policy), JOBS, window=window).metrics


def share(out: dict, name: str) -> dict:
    return next(s for s in out["shares"] if s["name"] == name)


def test_each_run_alone_counts_its_own_span():
    # pooled: 2 GPU-h busy of 2 GPUs x 1 h; static: 2 GPU-h of 2 x 2 h
    assert metrics(POOL)["summary"]["utilization"] == pytest.approx(1.0)
    assert metrics(STATIC)["summary"]["utilization"] == pytest.approx(0.5)
    assert metrics(POOL)["pool"]["capacity_gpu_hours"] == pytest.approx(2.0)
    assert metrics(STATIC)["pool"]["capacity_gpu_hours"] == pytest.approx(4.0)


def test_the_earlier_policy_is_idle_after_its_last_job_in_the_common_window():
    window = common_window([span_of(metrics(POOL)), span_of(metrics(STATIC))])
    assert window == (0.0, 2 * HOUR)
    out = metrics(POOL, window)
    # the same 4 GPU-h of capacity ($8) as the static split; busy 2 of 4
    assert out["pool"]["capacity_gpu_hours"] == pytest.approx(4.0)
    assert out["pool"]["capacity_usd"] == pytest.approx(8.0)
    assert out["summary"]["utilization"] == pytest.approx(0.5)
    # from 1 h to 2 h both quotas are idle: A 0 + 1 h, B 0 + 1 h (B lent its GPU in the first hour)
    assert share(out, "A")["idle_gpu_hours"] == pytest.approx(1.0)
    assert share(out, "B")["idle_gpu_hours"] == pytest.approx(1.0)
    assert share(out, "B")["lent_gpu_hours"] == pytest.approx(1.0)
    assert out["pool"]["idle_gpu_hours"] == pytest.approx(2.0)
    # the run's own span is kept beside the window it is measured over
    assert out["summary"]["span"]["end"] == pytest.approx(HOUR)
    assert out["summary"]["horizon"]["end"] == pytest.approx(2 * HOUR)
    # waits do not depend on the window
    assert out["summary"]["wait_seconds"] == metrics(POOL)["summary"]["wait_seconds"]


def test_a_window_must_contain_the_span():
    with pytest.raises(ValueError, match="does not contain the run's span"):
        metrics(STATIC, (0.0, HOUR))


def test_stored_metrics_measured_again_equal_a_replay_over_the_window():
    # measure_over works from what a run stored (its metrics), not from a new replay
    policy = Policy.from_dict(POOL)
    window = (0.0, 2 * HOUR)
    stored = metrics(POOL)
    again = measure_over(stored, policy, window)
    direct = metrics(POOL, window)
    for key in ("utilization", "useful_utilization", "horizon", "span"):
        assert again["summary"][key] == pytest.approx(direct["summary"][key])
    assert again["pool"] == pytest.approx(direct["pool"])
    for a, b in zip(again["shares"], direct["shares"], strict=True):
        for key in ("capacity_gpu_hours", "idle_gpu_hours", "idle_usd", "capacity_instance_seconds"):
            assert a[key] == pytest.approx(b[key])
        assert a["by_type"]["gpu"] == pytest.approx(b["by_type"]["gpu"])
    assert again["periods"]["shares"]["B"]["idle"] == pytest.approx(direct["periods"]["shares"]["B"]["idle"])
    assert again["periods"]["pool"]["capacity"] == pytest.approx(direct["periods"]["pool"]["capacity"])
    pool_usd = direct["periods"]["pool"]["usd"]["capacity"]
    assert again["periods"]["pool"]["usd"]["capacity"] == pytest.approx(pool_usd)
    # the series keeps its number of buckets over the window; its area is kept (GPU-h of idle)
    series = again["series"]
    assert len(series["t"]) == len(stored["series"]["t"])
    assert sum(series["shares"]["A"]["idle"]) * series["width"] / HOUR == pytest.approx(1.0, abs=1e-3)
    assert sum(series["shares"]["A"]["own"]) * series["width"] / HOUR == pytest.approx(1.0, abs=1e-3)
    # and back to the run's own span
    back = measure_over(again, policy, span_of(stored))
    assert back["pool"] == pytest.approx(stored["pool"])
    for key in ("capacity", "own", "idle", "lent"):
        assert back["periods"]["shares"]["A"][key] == pytest.approx(stored["periods"]["shares"]["A"][key])


def test_a_window_over_several_days_adds_idle_days():
    # the static split's span is 0-2 h; a window to 30 h adds day 2 (24-30 h), all idle quota
    out = measure_over(metrics(STATIC), Policy.from_dict(STATIC), (0.0, 30 * HOUR))
    periods = out["periods"]
    assert periods["day"] == [0.0, 24 * HOUR]
    # day 1: A used its GPU 2 h, idle 22 h; B idle 24 h. Day 2: 6 h of each quota idle
    assert periods["shares"]["A"]["own"] == pytest.approx([2.0, 0.0])
    assert periods["shares"]["A"]["idle"] == pytest.approx([22.0, 6.0])
    assert periods["shares"]["B"]["idle"] == pytest.approx([24.0, 6.0])
    assert periods["shares"]["B"]["usd"]["capacity"] == pytest.approx([48.0, 12.0])
    assert periods["pool"]["capacity"] == pytest.approx([48.0, 12.0])
    assert out["summary"]["utilization"] == pytest.approx(2.0 / 60.0)
