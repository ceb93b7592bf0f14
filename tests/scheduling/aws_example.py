"""SEMANTICS.md section 4's AWS quota-share example, which many test files replay, export, import or
calibrate: one copy, so that every file tests the very policy the section describes.

Pure test data: no engine code, so the reference model's tests may use it too. Callers that change
it copy it first (``copy.deepcopy`` or a dict comprehension)."""

from __future__ import annotations

import copy
from typing import Any

T = "ml.g5.xlarge"
P4 = "ml.p4d.24xlarge"

# QS1 lends and borrows up to 200% with in-share preemption, QS2 lends, QS3 reserves; pool of 3.
AWS_POLICY: dict[str, Any] = {
    "name": "seed-demo",
    "instance_types": {T: {"gpus": 1, "hourly_price": 1.41}},
    "capacity": {T: 3},
    "shares": [
        {"name": "QS1", "capacity": {T: 1}, "strategy": "LEND_AND_BORROW",
         "borrow_limit_percent": 200, "in_share_preemption": "lower_priority", "reclaim": "any"},
        {"name": "QS2", "capacity": {T: 1}, "strategy": "LEND"},
        {"name": "QS3", "capacity": {T: 1}, "strategy": "RESERVE"},
    ],
}  # fmt: skip

# The section's jobs and its one priority update, as ``table`` text.
AWS_JOBS = """
job_id submit_time share duration priority
p3     0           QS1   1000     3
p2     0           QS1   1000     2
p1     0           QS1   300      1
q2     100         QS2   500      0
"""
AWS_UPDATES = """
time job_id priority
200  p1     4
"""


def aws_policy(*share_extras: dict[str, Any], **top: Any) -> dict[str, Any]:
    """A fresh copy of the example with ``top`` keys set or added, and the i-th of ``share_extras``
    merged into the i-th share (QS1, QS2, QS3): the variants other sections build on it (weights, a
    calendar, another name) without writing the three shares again."""
    policy = copy.deepcopy(AWS_POLICY)
    for share, extra in zip(policy["shares"], share_extras, strict=False):
        share.update(extra)
    policy.update(top)
    return policy


# The example with every knob of sections 8-10: a training plan of 2 instances for QS1 from 100 to
# 500 s (four dated changes), fair sharing with one strategy, weights 2 and 0.5, a 2-hour RUNNABLE limit.
PLANNED = aws_policy(
    {"fair_weight": 2},
    {"fair_weight": 0.5},
    name="planned",
    fair_sharing={"preemption_strategies": ["LessThanInitialShare"]},
    changes=[
        {"time": 100, "capacity": {T: 5}},
        {"time": 100, "share": "QS1", "capacity": {T: 3}},
        {"time": 500, "capacity": {T: 3}},
        {"time": 500, "share": "QS1", "capacity": {T: 1}},
    ],
    runnable_timeout_seconds=7200,
)
