"""A capacity curve's data: each replay's summary, and the lines over one common window."""

from __future__ import annotations

import pytest
from conftest import make_trace

from scheduling.capacity_curve import (
    curve_lines,
    curve_rows,
    curve_sizes,
    p95_bought_per_dollar,
    point_summary,
)
from scheduling.engine import replay
from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.scaling import policy_at

SPLIT = {
    "name": "split",
    "instance_types": {"gpu": {"gpus": 1, "hourly_price": 2.0}},
    "capacity": {"gpu": 2},
    "shares": [
        {"name": "a", "capacity": {"gpu": 1}, "strategy": "RESERVE"},
        {"name": "b", "capacity": {"gpu": 1}, "strategy": "RESERVE"},
    ],
}
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
