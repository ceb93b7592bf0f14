"""SEMANTICS.md sections 2 and 6: jobs that can never run are UNSCHEDULABLE at submission, with the AWS
reason, and block nobody. One instance type ``gpu``."""

from __future__ import annotations

import pytest
from gpu_policies import policy, share

MAX_RESOURCE = "SERVICE_ENVIRONMENT_MAX_RESOURCE"
QUOTA_LIMIT = "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
LAB = "LEND_AND_BORROW"


def one_job(count: int) -> str:
    return f"""
        job_id submit_time share duration instance_count
        j      5           A     100      {count}
    """


CASES = [
    # (why, policy, instance_count, reason or None when it runs)
    ("more than the pool", policy(2, share("A", 1, LAB)), 3, MAX_RESOURCE),
    ("pool before quota", policy(3, share("A", 1, "RESERVE")), 4, MAX_RESOURCE),
    ("LEND: more than the pool", policy(3, share("A", 1, "LEND")), 4, MAX_RESOURCE),
    ("RESERVE above quota, pool has room", policy(3, share("A", 1, "RESERVE")), 2, QUOTA_LIMIT),
    ("LEND above quota, pool has room", policy(3, share("A", 1, "LEND")), 2, QUOTA_LIMIT),
    ("RESERVE at quota", policy(3, share("A", 2, "RESERVE")), 2, None),
    (
        "above quota + borrow limit 100%",
        policy(4, share("A", 1, LAB, borrow_limit_percent=100)),
        3,
        QUOTA_LIMIT,
    ),
    ("at quota + borrow limit", policy(4, share("A", 1, LAB, borrow_limit_percent=100)), 2, None),
    ("above quota + borrowing_limit", policy(4, share("A", 1, LAB, borrowing_limit=1)), 3, QUOTA_LIMIT),
    # borrowable: 1 unassigned; R (RESERVE) lends nothing
    (
        "above quota + everything borrowable",
        policy(4, share("A", 1, LAB), share("R", 2, "RESERVE")),
        3,
        QUOTA_LIMIT,
    ),
    ("at quota + everything borrowable", policy(4, share("A", 1, LAB), share("R", 2, "RESERVE")), 2, None),
    # borrowable: L lends at most 1 of its 3
    (
        "lending limit bounds the borrowable",
        policy(4, share("A", 1, LAB), share("L", 3, "LEND", lending_limit=1)),
        3,
        QUOTA_LIMIT,
    ),
    (
        "within the lending limit",
        policy(4, share("A", 1, LAB), share("L", 3, "LEND", lending_limit=1)),
        2,
        None,
    ),
]


@pytest.mark.parametrize(("why", "pol", "count", "reason"), CASES, ids=[c[0] for c in CASES])
def test_unschedulable_reason(run, why, pol, count, reason):
    r = run(pol, one_job(count))
    if reason is None:
        assert r.row("j") == ("SUCCEEDED", 5, 105, 0, 0, 0, 0, None)
    else:
        # (state, first_start, end, wait, queued, preemptions, lost_seconds, reason)
        assert r.row("j") == ("UNSCHEDULABLE", None, None, None, 0, 0, 0, reason)
        assert r.events == [(5, "j", "unschedulable", None, None)]  # at its submit time


def test_unschedulable_head_blocks_nobody_under_strict_fifo(run):
    pol = policy(2, share("A", 1, "RESERVE"), queueing="strict_fifo")
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        big    0           A     100      9        2
        small  0           A     100      0        1
    """,
    )
    assert r.events == [
        (0, "big", "unschedulable", None, None),  # taken out of the queue
        (0, "small", "start", None, None),
        (100, "small", "finish", None, None),
    ]


def test_unschedulable_counts_by_reason(engine_run):
    summary = engine_run(
        policy(3, share("A", 1, "LEND")),
        """
        job_id submit_time share duration instance_count
        huge   0           A     100      4
        wide   0           A     100      2
        fine   0           A     100      1
    """,
    ).raw["summary"]
    assert (summary["jobs"], summary["succeeded"], summary["unschedulable"]) == (3, 1, 2)
    assert summary["unschedulable_by_reason"] == {MAX_RESOURCE: 1, QUOTA_LIMIT: 1}
