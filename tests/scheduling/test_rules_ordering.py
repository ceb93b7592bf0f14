"""SEMANTICS.md section 4: the order of pending jobs, rounds, strict vs best-effort FIFO and the
order of events at one instant. One instance type ``gpu``."""

from __future__ import annotations

import pytest
from gpu_policies import policy, share


def test_jobs_not_needing_to_borrow_go_first(run):
    # at 10 only B's instance is free: b1 (priority 0, within B's quota) goes before a2 (priority 9,
    # would borrow). Had a2 gone first, b1 would then have reclaimed it (a preempt event).
    r = run(
        policy(2, share("A", 1), share("B", 1)),
        """
        job_id submit_time share duration priority
        a1     0           A     1000     9
        a2     10          A     100      9
        b1     10          B     100      0
    """,
    )
    assert r.events[:5] == [
        (0, "a1", "start", None, None),
        (10, "b1", "start", None, None),
        (110, "b1", "finish", None, None),
        (110, "a2", "start", None, None),  # borrows B's idle instance now
        (210, "a2", "finish", None, None),
    ]


ONE_INSTANCE = policy(1, share("A", 1))


def a_jobs(*jobs: tuple[str, float, int]) -> list[dict]:
    """100-second jobs of share A, each given as (job_id, submit_time, priority)."""
    return [{"job_id": j, "submit_time": t, "share": "A", "duration": 100, "priority": p} for j, t, p in jobs]


@pytest.mark.parametrize(
    ("jobs", "starts"),
    [
        pytest.param(a_jobs(("a0", 0, 0), ("x", 10, 1), ("y", 20, 5)), [(0, "a0"), (100, "y"), (200, "x")],
                     id="higher_priority_first"),
        pytest.param(a_jobs(("a0", 0, 0), ("a", 20, 0), ("b", 10, 0)), [(0, "a0"), (100, "b"), (200, "a")],
                     id="equal_priority_earlier_submit_first"),
        pytest.param(a_jobs(("a0", 0, 0), ("b", 10, 0), ("a", 10, 0)), [(0, "a0"), (100, "a"), (200, "b")],
                     id="equal_priority_and_submit_job_id_as_strings"),
        # 9 < 10 as numbers ("10" < "9" as strings)
        pytest.param(a_jobs(("1", 0, 0), ("10", 10, 0), ("9", 10, 0)), [(0, "1"), (100, "9"), (200, "10")],
                     id="equal_priority_and_submit_job_id_as_numbers"),
    ],
)  # fmt: skip
def test_pending_order_on_one_instance(run, jobs, starts):
    # the job submitted at 0 holds the one instance until 100; the others start one by one in pending order
    assert run(ONE_INSTANCE, jobs).starts() == starts


def test_job_preempted_in_a_round_is_reconsidered_next_round(run):
    # pool 3. B (quota 2) runs V2 (2 instances, priority 1) and V1 (1 instance, priority 0) borrowing
    # A's instance. At 100: P1 (A) reclaims V1; then P2 (B, priority 5) preempts V2 in-share and needs
    # only one of its two instances. Next round V1, preempted in round 1, fits in the spare instance.
    pol = policy(3, share("A", 1, reclaim="any"), share("B", 2, in_share_preemption="lower_priority"))
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        V1     0           B     1000     0        1
        V2     0           B     1000     1        2
        P1     100         A     200      0        1
        P2     100         B     100      5        1
    """,
    )
    assert r.at(100) == [
        (100, "V1", "preempt", "cross_share", "P1"),  # round 1: P1 is within A's quota, V1 the lowest
        (100, "P1", "start", None, None),
        (100, "V2", "preempt", "in_share", "P2"),  # round 1: P2 needs 1, V2 holds 2
        (100, "P2", "start", None, None),
        (100, "V1", "start", None, None),  # round 2: within B's quota again
    ]
    # at 200 P2 ends; V2 (priority 1) needs 2 of B's quota, so it preempts V1 (0) in-share
    assert r.at(200) == [
        (200, "P2", "finish", None, None),
        (200, "V1", "preempt", "in_share", "V2"),
        (200, "V2", "start", None, None),
    ]


STRICT_JOBS = """
job_id submit_time share duration priority instance_count
b1     0           B     100      0        1
a1     10          A     100      5        2
a2     10          A     100      1        1
c1     10          C     200      0        1
"""


def strict_policy(queueing: str) -> dict:
    return policy(3, share("A", 1), share("B", 1, "LEND"), share("C", 1, "LEND"), queueing=queueing)


def test_best_effort_fifo_lets_a_later_job_pass_a_blocked_one(run):
    r = run(strict_policy("best_effort_fifo"), STRICT_JOBS)
    # a1 needs A's instance + one borrowed, none free at 10: a2 runs on A's quota meanwhile;
    # a1 starts when a2 ends (B's instance is free since 100)
    assert r.starts() == [(0, "b1"), (10, "a2"), (10, "c1"), (110, "a1")]


def test_strict_fifo_blocks_the_share_behind_its_head(run):
    r = run(strict_policy("strict_fifo"), STRICT_JOBS)
    # a1 heads A's queue and blocks a2; C's queue is not blocked
    assert r.starts() == [(0, "b1"), (10, "c1"), (100, "a1"), (200, "a2")]


def test_same_instant_finish_then_submission_then_update_then_pass(run):
    r = run(
        ONE_INSTANCE,
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     100         A     100      1
        a3     100         A     100      5
    """,
        """
        time job_id priority
        100  a2     9
        100  a1     9
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),
        (100, "a1", "finish", None, None),  # frees the instance for the jobs submitted at 100
        (100, "a2", "start", None, None),  # a2, submitted at 100, raised to 9 before the pass
        (200, "a2", "finish", None, None),
        (200, "a3", "start", None, None),
        (300, "a3", "finish", None, None),
    ]
    assert r.ignored_priority_updates == 1  # a1 had ended at 100 when its update came


def test_strict_fifo_priority_update_changes_the_head_at_once(run):
    # big (priority 5) heads A's queue and does not fit while a0 runs; a_small waits behind it. At 50
    # big drops to 0: a_small (same priority and submit time, smaller job_id) is the head now and fits.
    pol = policy(2, share("A", 2), queueing="strict_fifo")
    r = run(
        pol,
        """
        job_id  submit_time share duration priority instance_count
        a0      0           A     100      0        1
        big     10          A     100      5        2
        a_small 10          A     100      0        1
    """,
        """
        time job_id priority
        50   big    0
    """,
    )
    assert r.events == [
        (0, "a0", "start", None, None),
        (50, "a_small", "start", None, None),  # the pass after the update sees the new head
        (100, "a0", "finish", None, None),
        (150, "a_small", "finish", None, None),
        (150, "big", "start", None, None),
        (250, "big", "finish", None, None),
    ]


def test_strict_fifo_takes_one_head_per_share_per_round(run):
    # Pool 2; A and B (quota 1 each) lend and borrow; all three jobs come at 0. Round 1's candidates are
    # the heads as it starts: a1 (A) and b1 (B), in that order (both within quota, a1 of higher priority):
    # both fit. a2 only becomes A's head in round 2, when nothing is free and A (in-share preemption
    # never) may not preempt: it waits for a1. Had a2 been a candidate in round 1 as soon as a1 was
    # admitted (the old reading), it would have borrowed B's idle instance ahead of b1, and b1 would
    # have reclaimed it at once: a preempt event at 0.
    pol = policy(2, share("A", 1), share("B", 1), queueing="strict_fifo")
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      5
        a2     0           A     100      4
        b1     0           B     300      0
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),  # round 1
        (0, "b1", "start", None, None),  # round 1: B's head, before A's second job
        (100, "a1", "finish", None, None),
        (100, "a2", "start", None, None),  # A's quota is free again
        (200, "a2", "finish", None, None),
        (300, "b1", "finish", None, None),
    ]
    assert r.preempts() == []


def test_strict_fifo_second_job_of_a_share_waits_for_the_next_round(run):
    # Pool 2, all A's quota; C (quota 0) borrows; A never reclaims. At 0 round 1's heads are a1 (A,
    # within quota, so first) and c1 (C, needs to borrow): a1 takes one of A's instances and c1 borrows
    # the other, idle. a2 is A's head only in round 2: nothing is free and A may not reclaim, so it
    # waits for a1 to end at 100. Read the old way, a2 would have been taken right after a1 in round 1,
    # and c1 would have waited until 100.
    pol = policy(2, share("A", 2, reclaim="never"), share("C", 0), queueing="strict_fifo")
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      9
        a2     0           A     100      0
        c1     0           C     150      5
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "c1"), (100, "a2")]
    assert r.preempts() == []
