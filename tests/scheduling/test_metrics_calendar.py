"""Metrics under a calendar (SEMANTICS.md section 9): utilization over the integral of capacity(t),
share capacity over the integral of quota(t); cancelled jobs counted (section 10)."""

from __future__ import annotations

import pytest
from conftest import make_trace

from scheduling.model import Policy
from scheduling.replay.engine import replay


def plan_policy(**extra) -> Policy:
    """2 GPUs, A holds 1; a training plan gives A 2 more from t=100 to t=200."""
    return Policy.from_dict(
        {
            "capacity": {"gpu": 2},
            "shares": [{"name": "A", "capacity": {"gpu": 1}}, {"name": "B", "capacity": {"gpu": 1}}],
            "changes": [
                {"time": 100, "capacity": {"gpu": 4}},
                {"time": 100, "share": "A", "capacity": {"gpu": 3}},
                {"time": 200, "capacity": {"gpu": 2}},
                {"time": 200, "share": "A", "capacity": {"gpu": 1}},
            ],
            **extra,
        }
    )


def test_utilization_counts_the_capacity_in_force():
    # one 1-GPU job from 0 to 300: busy 300; capacity 2 x 300 + 2 more x 100 = 800
    job = {"job_id": 1, "submit_time": 0, "share": "A", "duration": 300}
    result = replay(plan_policy(), make_trace([job]))
    assert result.summary["utilization"] == pytest.approx(300 / 800)
    share_a = result.shares[0]
    # A's capacity: 1 x 300 + 2 more x 100 = 500 instance-seconds; own 300, the rest idle or lent
    assert share_a["capacity_instance_seconds"] == pytest.approx(500)
    assert share_a["own_instance_seconds"] == pytest.approx(300)
    assert result.metrics["series"]["pool_capacity_series"][0] == pytest.approx(2)


def test_a_job_that_needs_the_plan_waits_for_it_and_one_past_the_limit_is_cancelled():
    # a 3-GPU job of A fits only during the plan: it starts at 100; with a 50 s limit a second
    # one submitted at 0 would be cancelled at 50 (it would need the plan too)
    jobs = [{"job_id": 1, "submit_time": 0, "share": "A", "duration": 10, "instance_count": 3}]
    result = replay(plan_policy(), make_trace(jobs))
    assert result.to_dict()["jobs"][0]["first_start"] == 100
    cancelled = replay(plan_policy(runnable_timeout_seconds=50), make_trace(jobs), record_events=True)
    record = cancelled.to_dict()["jobs"][0]
    assert (record["state"], record["end"], record["first_start"]) == ("CANCELLED", 50, None)
    assert cancelled.summary["cancelled"] == 1 and cancelled.shares[0]["cancelled"] == 1
