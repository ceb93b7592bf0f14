"""A capacity curve's data: each replay's summary, and the lines over one common window."""

from __future__ import annotations

import pytest
from conftest import make_trace
from gpu_policies import policy, priced, share

from scheduling.capacity_curve import (
    common_window,
    curve_lines,
    curve_rows,
    curve_sizes,
    p95_bought_per_dollar,
    plan_effect,
    plan_label,
    plan_row,
    point_summary,
)
from scheduling.capacity_plans import TrainingPlan, add_training_plan
from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.scaling import policy_at

SPLIT = policy(
    2, share("a", 1, "RESERVE"), share("b", 1, "RESERVE"), name="split", instance_types=priced(2.0)
)
# a submits two one-hour jobs at once, b one.
TRACE = make_trace([
    {"job_id": 1, "submit_time": 0, "share": "a", "duration": 3600},
    {"job_id": 2, "submit_time": 0, "share": "a", "duration": 3600},
    {"job_id": 3, "submit_time": 0, "share": "b", "duration": 3600},
])  # fmt: skip


def summary_at(size: int) -> dict:
    policy = Policy.from_dict(policy_at(SPLIT, size))
    return point_summary(replay(policy, TRACE).metrics, policy)


def test_default_sizes_are_eight_around_today():
    # 1,560 x (0.75, 0.875, 1, 1.125, 1.25, 1.5, 1.75, 2), rounded half up.
    assert curve_sizes(1560) == [1170, 1365, 1560, 1755, 1950, 2340, 2730, 3120]
    assert curve_sizes(4, factors=[0.1, 1]) == [1, 4]  # never below one instance
    with pytest.raises(InputError, match=r"sizes\[1\]"):
        curve_sizes(4, sizes=[2, 0])


def test_a_point_keeps_each_shares_waits_and_the_pools_price():
    point = summary_at(2)
    # a's second job waits the hour its first one runs: p95 of [0, 3600] = 3,420 s.
    assert point["shares"]["a"]["wait"]["p95"] == pytest.approx(3420)
    assert point["shares"]["b"]["wait"]["p95"] == 0
    assert point["gpus"] == 2 and point["monthly_price_usd"] == pytest.approx(2 * 2.0 * 730)
    assert point["busy_gpu_hours"] == pytest.approx(3)


def test_rows_are_measured_over_the_common_window():
    rows = curve_rows([("split", 2, summary_at(2)), ("split", 4, summary_at(4))])
    # the window is the 2 h of the smaller pool: 3 GPU-hours over 2 GPUs x 2 h, then 4 GPUs x 2 h.
    assert [row.utilization for row in rows] == pytest.approx([0.75, 0.375])
    assert [row.worst_p95_seconds for row in rows] == pytest.approx([3420, 0])
    line = curve_lines(rows)["split"]
    # 0.95 h of p95 saved for $2,920 a month more: 0.325 h per $1,000.
    assert p95_bought_per_dollar(line) == pytest.approx([0.95 / 2.92])


# One more GPU for a during the first hour: its two jobs start together, the replay ends at 1 h.
PLAN = TrainingPlan("gpu", 1, "a", 0, 3600)


def plan_summary() -> dict:
    policy = add_training_plan(Policy.from_dict(policy_at(SPLIT, 2)), PLAN)
    return point_summary(replay(policy, TRACE).metrics, policy)


def test_a_plan_is_placed_at_its_average_gpus_and_priced_for_its_hours_in_the_window():
    base_summary, planned = summary_at(2), plan_summary()
    window = common_window([base_summary, planned])
    assert window == (0, 7200)  # the base replay's 2 h; the plan's ends at 1 h
    [base] = curve_rows([("split", 2, base_summary)], window=window)
    point = plan_row(PLAN, Policy.from_dict(SPLIT), planned, base, window)
    # 1 instance x $2 an hour x 1 h; 1 GPU-hour over a 2 h window: 2 + 0.5 GPUs on average.
    assert (point.hours, point.gpu_hours, point.cost_usd) == pytest.approx((1, 1, 2))
    assert point.row.gpus == pytest.approx(2.5)
    # today's $2,920 a month, plus the plan's $2 in 2 h as a month of 730 h: $730.
    assert point.row.monthly_price_usd == pytest.approx(2920 + 730)
    assert point.row.utilization == pytest.approx(3 / (2.5 * 2))  # 3 busy GPU-hours
    effect = plan_effect(point, "a")
    # a's p95 falls from 3,420 s to 0: 0.95 h, for $2 (475 h per $1,000) and 1 GPU-hour (950).
    assert (effect.before_seconds, effect.after_seconds) == pytest.approx((3420, 0))
    assert effect.hours_per_1000_usd == pytest.approx(475)
    assert effect.hours_per_1000_gpu_hours == pytest.approx(950)
    assert plan_effect(point).saved_hours == pytest.approx(0.95)  # the worst share was a
    assert plan_effect(point, "b").saved_hours == 0  # b never waited


def test_a_plan_outside_the_window_costs_nothing_and_buys_nothing_per_dollar():
    late = TrainingPlan("gpu", 1, "a", 7200, 9000)
    [base] = curve_rows([("split", 2, summary_at(2))])
    point = plan_row(late, Policy.from_dict(SPLIT), summary_at(2), base, (0, 7200))
    assert (point.cost_usd, point.row.gpus) == (0, 2)
    assert plan_effect(point, "a").hours_per_1000_usd is None


def test_a_plan_is_labelled_in_days_or_dates():
    assert plan_label(TrainingPlan("ml.p5.48xlarge", 8, "research", 864000, 3456000)) == (
        "+8 x ml.p5.48xlarge for research, days 10-40"
    )
    assert plan_label(PLAN) == "+1 x gpu for a, hours 0-1"
    assert plan_label(TrainingPlan("gpu", 2, "a", 1609459200, 1612137600)).endswith(
        "2021-01-01 to 2021-02-01"
    )
