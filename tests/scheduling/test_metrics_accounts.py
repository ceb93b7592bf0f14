"""The finance accounts of a replay add up: per day and in total, every share's own use, lent and
idle quota plus the unassigned capacity's lent and idle part equal the pool's capacity."""

from __future__ import annotations

import pytest

from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate


@pytest.fixture(scope="module")
def demo_metrics():
    trace = generate(3000, seed=7)
    policy_dict = demo_policy_dict(demo_pool_gpus(trace) + 3)  # +3 GPUs nobody holds: unassigned
    return replay(Policy.from_dict(policy_dict), trace).metrics


def test_every_day_adds_up_to_the_pool_capacity(demo_metrics):
    periods = demo_metrics["periods"]
    days = len(periods["day"])
    assert days > 1
    for day in range(days):
        accounted = (
            sum(row["own"][day] + row["lent"][day] + row["idle"][day] for row in periods["shares"].values())
            + periods["unassigned"]["lent"][day]
            + periods["unassigned"]["idle"][day]
        )
        assert accounted == pytest.approx(periods["pool"]["capacity"][day], rel=1e-6, abs=1e-3)


def test_share_capacity_per_day_is_its_own_lent_and_idle(demo_metrics):
    for row in demo_metrics["periods"]["shares"].values():
        for day, capacity in enumerate(row["capacity"]):
            assert row["own"][day] + row["lent"][day] + row["idle"][day] == pytest.approx(capacity, abs=1e-3)


def test_totals_add_up_and_match_the_days(demo_metrics):
    pool = demo_metrics["pool"]
    shares = demo_metrics["shares"]
    accounted = sum(s["own_gpu_hours"] + s["lent_gpu_hours"] + s["idle_gpu_hours"] for s in shares)
    accounted += pool["unassigned_lent_gpu_hours"] + pool["unassigned_idle_gpu_hours"]
    assert accounted == pytest.approx(pool["capacity_gpu_hours"], rel=1e-9)
    assert sum(demo_metrics["periods"]["pool"]["capacity"]) == pytest.approx(
        pool["capacity_gpu_hours"], rel=1e-6
    )
    # What is borrowed was lent by a share or by the unassigned capacity.
    borrowed = sum(s["borrowed_gpu_hours"] for s in shares)
    lent = sum(s["lent_gpu_hours"] for s in shares) + pool["unassigned_lent_gpu_hours"]
    assert borrowed == pytest.approx(lent, rel=1e-9)
    assert pool["busy_gpu_hours"] == pytest.approx(
        sum(s["own_gpu_hours"] for s in shares) + borrowed, rel=1e-9
    )


def test_stranded_is_part_of_idle_and_series_are_bounded(demo_metrics):
    for s in demo_metrics["shares"]:
        assert 0 <= s["stranded_gpu_hours"] <= s["idle_gpu_hours"] + 1e-9
    series = demo_metrics["series"]
    assert len(series["t"]) == 200
    for row in series["shares"].values():
        assert all(len(row[k]) == 200 for k in ("own", "borrowed", "lent", "idle", "stranded"))
    for kind in ("wait", "jct"):
        assert len(demo_metrics["cdfs"][kind]["all"]["x"]) <= 1000


def _same(a, b) -> None:
    """Equal nested metrics, numbers to a relative 1e-9 (blocks add areas in another order)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys()
        for key in a:
            _same(a[key], b[key])
    elif isinstance(a, list):
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            _same(x, y)
    elif isinstance(a, float):
        assert a == pytest.approx(b, rel=1e-9, abs=1e-6)
    else:
        assert a == b


def test_accounts_do_not_depend_on_the_block_of_instants(monkeypatch):
    # The accounts are integrated a block of instants at a time; blocks of 7 instants (bucket and
    # day edges fall inside and between blocks) must give what one block for everything gives.
    from scheduling import metrics

    trace = generate(1500, seed=3)
    policy = Policy.from_dict(demo_policy_dict(demo_pool_gpus(trace) + 3))
    monkeypatch.setattr(metrics, "BLOCK", 1 << 40)
    whole = replay(policy, trace).metrics
    monkeypatch.setattr(metrics, "BLOCK", 7)
    _same(replay(policy, trace).metrics, whole)
