"""SEMANTICS.md sections 1 and 3: strategies, borrow and lending limits, unassigned capacity and the
borrowing invariant. One instance type ``gpu`` unless said otherwise; every job needs 1 instance."""

from __future__ import annotations

from gpu_policies import policy, share


def test_reserve_share_never_lends(run):
    r = run(
        policy(2, share("R", 1, "RESERVE"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     100
        b2     0           B     100
    """,
    )
    # R's instance stays idle: b2 waits for b1
    assert r.starts() == [(0, "b1"), (100, "b2")]


def test_reserve_share_never_borrows_even_unassigned(run):
    r = run(
        policy(2, share("R", 1, "RESERVE")),
        """
        job_id submit_time share duration
        r1     0           R     100
        r2     0           R     100
    """,
    )
    # one unassigned instance is idle, but RESERVE does not borrow
    assert r.starts() == [(0, "r1"), (100, "r2")]


def test_lend_share_lends_its_idle_quota(run):
    r = run(
        policy(2, share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     100
        b2     0           B     100
    """,
    )
    assert r.starts() == [(0, "b1"), (0, "b2")]  # b2 borrows L's idle instance


def test_lend_share_never_borrows(run):
    r = run(
        policy(3, share("L", 1, "LEND"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        l1     0           L     100
        l2     0           L     100
    """,
    )
    # B's instance and the unassigned one are idle, but LEND does not borrow
    assert r.starts() == [(0, "l1"), (100, "l2")]


def test_lend_and_borrow_borrows_unassigned_and_lenders_quota(run):
    r = run(
        policy(3, share("A", 1, "LEND_AND_BORROW"), share("L", 1, "LEND")),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
        a3     0           A     100
        a4     0           A     100
    """,
    )
    # a1 on A's quota, a2 and a3 on the unassigned instance and L's; a4 waits for a1
    assert r.starts() == [(0, "a1"), (0, "a2"), (0, "a3"), (100, "a4")]


def test_lend_and_borrow_share_lends_too(run):
    r = run(
        policy(2, share("A", 1, "LEND_AND_BORROW"), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     100
        b2     0           B     100
    """,
    )
    assert r.starts() == [(0, "b1"), (0, "b2")]


def test_borrow_limit_percent_is_rounded_down(run):
    # quota 3 at 50%: floor(1.5) = 1 instance may be borrowed, though 3 are unassigned
    r = run(
        policy(6, share("A", 3, "LEND_AND_BORROW", borrow_limit_percent=50)),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
        a3     0           A     100
        a4     0           A     100
        a5     0           A     100
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "a2"), (0, "a3"), (0, "a4"), (100, "a5")]


def test_borrow_limit_percent_minus_one_is_unlimited(run):
    r = run(
        policy(4, share("A", 1, "LEND_AND_BORROW", borrow_limit_percent=-1)),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
        a3     0           A     100
        a4     0           A     100
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "a2"), (0, "a3"), (0, "a4")]  # 3 borrowed, no limit


def test_borrow_limit_percent_zero_forbids_borrowing(run):
    r = run(
        policy(2, share("A", 1, "LEND_AND_BORROW", borrow_limit_percent=0)),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
    """,
    )
    assert r.starts() == [(0, "a1"), (100, "a2")]


def test_borrowing_limit_is_absolute(run):
    r = run(
        policy(4, share("A", 1, "LEND_AND_BORROW", borrowing_limit={"gpu": 2})),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
        a3     0           A     100
        a4     0           A     100
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "a2"), (0, "a3"), (100, "a4")]  # quota 1 + 2 borrowed


def test_lending_limit_caps_what_a_lender_lends(run):
    r = run(
        policy(3, share("L", 2, "LEND", lending_limit={"gpu": 1}), share("B", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        b1     0           B     100
        b2     0           B     300
        b3     0           B     100
    """,
    )
    # L has 2 idle instances but lends at most 1: b3 waits until b1 ends and B's quota is free
    assert r.starts() == [(0, "b1"), (0, "b2"), (100, "b3")]


def test_unassigned_capacity_is_lendable(run):
    r = run(
        policy(2, share("A", 1, "LEND_AND_BORROW")),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "a2")]


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
