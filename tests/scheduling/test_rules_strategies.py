"""SEMANTICS.md sections 1 and 3: strategies, borrow and lending limits, unassigned capacity and the
borrowing invariant. One instance type ``gpu`` unless said otherwise; every job needs 1 instance."""

from __future__ import annotations

import pytest
from gpu_policies import policy, share


def at_once(share_name: str, *durations: float) -> list[dict]:
    """One job per duration, all of share ``share_name`` and submitted at 0; their ids are the share's
    name in lower case numbered from 1 (B: b1, b2, ...)."""
    return [
        {"job_id": f"{share_name.lower()}{i}", "submit_time": 0, "share": share_name, "duration": duration}
        for i, duration in enumerate(durations, start=1)
    ]


@pytest.mark.parametrize(
    ("pol", "jobs", "starts"),
    [
        # R's instance stays idle: b2 waits for b1
        pytest.param(
            policy(2, share("R", 1, "RESERVE"), share("B", 1, "LEND_AND_BORROW")),
            at_once("B", 100, 100),
            [(0, "b1"), (100, "b2")],
            id="reserve_share_never_lends",
        ),
        # one unassigned instance is idle, but RESERVE does not borrow
        pytest.param(
            policy(2, share("R", 1, "RESERVE")),
            at_once("R", 100, 100),
            [(0, "r1"), (100, "r2")],
            id="reserve_share_never_borrows_even_unassigned",
        ),
        # b2 borrows L's idle instance
        pytest.param(
            policy(2, share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
            at_once("B", 100, 100),
            [(0, "b1"), (0, "b2")],
            id="lend_share_lends_its_idle_quota",
        ),
        # B's instance and the unassigned one are idle, but LEND does not borrow
        pytest.param(
            policy(3, share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
            at_once("L", 100, 100),
            [(0, "l1"), (100, "l2")],
            id="lend_share_never_borrows",
        ),
        # a1 on A's quota, a2 and a3 on the unassigned instance and L's; a4 waits for a1
        pytest.param(
            policy(3, share("A", 1, "LEND_AND_BORROW"), share("L", 1, "LEND")),
            at_once("A", 100, 100, 100, 100),
            [(0, "a1"), (0, "a2"), (0, "a3"), (100, "a4")],
            id="lend_and_borrow_borrows_unassigned_and_lenders_quota",
        ),
        pytest.param(
            policy(2, share("A", 1, "LEND_AND_BORROW"), share("B", 1, "LEND_AND_BORROW")),
            at_once("B", 100, 100),
            [(0, "b1"), (0, "b2")],
            id="lend_and_borrow_share_lends_too",
        ),
        # quota 3 at 50%: floor(1.5) = 1 instance may be borrowed, though 3 are unassigned
        pytest.param(
            policy(6, share("A", 3, "LEND_AND_BORROW", borrow_limit_percent=50)),
            at_once("A", 100, 100, 100, 100, 100),
            [(0, "a1"), (0, "a2"), (0, "a3"), (0, "a4"), (100, "a5")],
            id="borrow_limit_percent_is_rounded_down",
        ),
        # 3 borrowed, no limit
        pytest.param(
            policy(4, share("A", 1, "LEND_AND_BORROW", borrow_limit_percent=-1)),
            at_once("A", 100, 100, 100, 100),
            [(0, "a1"), (0, "a2"), (0, "a3"), (0, "a4")],
            id="borrow_limit_percent_minus_one_is_unlimited",
        ),
        pytest.param(
            policy(2, share("A", 1, "LEND_AND_BORROW", borrow_limit_percent=0)),
            at_once("A", 100, 100),
            [(0, "a1"), (100, "a2")],
            id="borrow_limit_percent_zero_forbids_borrowing",
        ),
        # quota 1 + 2 borrowed
        pytest.param(
            policy(4, share("A", 1, "LEND_AND_BORROW", borrowing_limit={"gpu": 2})),
            at_once("A", 100, 100, 100, 100),
            [(0, "a1"), (0, "a2"), (0, "a3"), (100, "a4")],
            id="borrowing_limit_is_absolute",
        ),
        # L has 2 idle instances but lends at most 1: b3 waits until b1 ends and B's quota is free
        pytest.param(
            policy(3, share("L", 2, "LEND", lending_limit={"gpu": 1}), share("B", 1, "LEND_AND_BORROW")),
            at_once("B", 100, 300, 100),
            [(0, "b1"), (0, "b2"), (100, "b3")],
            id="lending_limit_caps_what_a_lender_lends",
        ),
        pytest.param(
            policy(2, share("A", 1, "LEND_AND_BORROW")),
            at_once("A", 100, 100),
            [(0, "a1"), (0, "a2")],
            id="unassigned_capacity_is_lendable",
        ),
    ],
)
def test_start_times(run, pol, jobs, starts):
    assert run(pol, jobs).starts() == starts


def test_lenders_job_within_quota_reclaims_its_instance(run):
    r = run(
        policy(2, share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     1000
        b2     0           B     1000
        l1     100         L     100
    """,
    )
    assert r.events[:5] == [
        (0, "b1", "start", None, None),
        (0, "b2", "start", None, None),  # borrows L's idle instance
        # B borrows; L's job is within L's quota: reclaim. b1, b2 tie on priority and start: job_id desc
        (100, "b2", "preempt", "cross_share", "l1"),
        (100, "l1", "start", None, None),
        (200, "l1", "finish", None, None),
    ]
    assert r.starts()[-1] == (200, "b2")  # L's instance is idle again


def test_reserve_idle_quota_is_never_borrowed_so_a_lender_reclaims(run):
    # pool 3: R's instance is physically free at 100, but B borrowing it would break the borrowing
    # invariant (R lends nothing), so l1 must take back its own instance from B.
    r = run(
        policy(3, share("R", 1, "RESERVE"), share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     1000
        b2     0           B     1000
        l1     100         L     100
        r1     150         R     100
    """,
    )
    assert r.events[:6] == [
        (0, "b1", "start", None, None),
        (0, "b2", "start", None, None),  # borrows L's instance
        (100, "b2", "preempt", "cross_share", "l1"),
        (100, "l1", "start", None, None),
        (150, "r1", "start", None, None),  # R's own job fits at once: nobody used R's quota
        (200, "l1", "finish", None, None),
    ]


def test_borrowing_is_per_instance_type(run):
    pol = {
        "instance_types": {"x": {"gpus": 1}, "y": {"gpus": 1}},
        "capacity": {"x": 1, "y": 1},
        "shares": [
            {"name": "A", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW"},
            {"name": "B", "capacity": {"y": 1}, "strategy": "LEND"},
        ],
    }
    r = run(
        pol,
        """
        job_id submit_time share duration instance_type
        a1     0           A     100      x
        a2     0           A     100      x
        a3     0           A     100      y
    """,
    )
    # a2 cannot use B's idle y instance for an x job; a3 borrows it
    assert r.starts() == [(0, "a1"), (0, "a3"), (100, "a2")]
