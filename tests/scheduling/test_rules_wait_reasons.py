"""Why jobs waited: job-seconds spent RUNNABLE per share, by the limit the scheduler found when it
last tried the job (scheduling.model.WaitReason; the order of the checks is engine.wait_reason).
Hand-computed on tiny replays; engine only."""

from __future__ import annotations

import pytest
from aws_example import AWS_POLICY
from conftest import demo_replay
from gpu_policies import share

TWO_JOBS = """
job_id submit_time share duration
a1     0           A     100
a2     0           A     100
"""


def waited(out: dict, share_name: str) -> dict:
    reasons = next(s for s in out["shares"] if s["name"] == share_name)["waited_by_reason_seconds"]
    return {reason: seconds for reason, seconds in reasons.items() if seconds}


def test_a_share_that_may_not_borrow_waits_over_its_quota(engine_run):
    # A lends (never borrows) its one instance; R's idle instance is of no use to a2: 100 s over quota.
    pol = {"capacity": {"gpu": 2}, "shares": [share("A", 1, "LEND"), share("R", 1, "RESERVE")]}
    assert waited(engine_run(pol, TWO_JOBS).raw, "A") == {"over_quota_no_borrowing": 100}


def test_a_borrower_at_its_borrow_limit(engine_run):
    # Unassigned capacity is free, but a borrow limit of 0% lets A hold only its own instance.
    pol = {"capacity": {"gpu": 2}, "shares": [share("A", 1, "LEND_AND_BORROW", borrow_limit_percent=0)]}
    assert waited(engine_run(pol, TWO_JOBS).raw, "A") == {"borrow_limit": 100}


def test_a_full_pool(engine_run):
    pol = {"capacity": {"gpu": 1}, "shares": [share("A", 1, "LEND_AND_BORROW")]}
    assert waited(engine_run(pol, TWO_JOBS).raw, "A") == {"pool_full": 100}


def test_idle_reserve_quota_is_nothing_lendable(engine_run):
    # The pool has a free instance, but it is R's RESERVE quota: the borrowing invariant says no.
    pol = {"capacity": {"gpu": 2}, "shares": [share("A", 1, "LEND_AND_BORROW"), share("R", 1, "RESERVE")]}
    assert waited(engine_run(pol, TWO_JOBS).raw, "A") == {"nothing_lendable": 100}


def test_strict_fifo_jobs_wait_behind_the_head(engine_run):
    # big (2 instances) heads A's queue and cannot start while a0 holds one of the two instances;
    # small would fit beside a0 but under strict FIFO it waits behind big. At 100 big takes both.
    pol = {"capacity": {"gpu": 2}, "queueing": "strict_fifo", "shares": [share("A", 2, "LEND_AND_BORROW")]}
    out = engine_run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a0     0           A     100      9        1
        big    0           A     100      5        2
        small  0           A     100      0        1
    """,
    ).raw
    # 0-100: big waits (pool full), small behind it; 100-200: small is the head, pool full.
    assert waited(out, "A") == {"pool_full": 200, "behind_queue_head": 100}


def test_the_aws_example_waits_on_reserve_quota(engine_run):
    # SEMANTICS.md section 4: "p1 waits (QS3 lends nothing)".
    out = engine_run(
        AWS_POLICY,
        """
        job_id submit_time share duration priority
        p3     0           QS1   1000     3
        p2     0           QS1   1000     2
        p1     0           QS1   1000     1
    """,
    ).raw
    # p1 waits 0-1000 while QS2 lends its idle instance to p2 and QS3's stays idle; it then fits.
    assert waited(out, "QS1") == {"nothing_lendable": 1000}


@pytest.mark.parametrize("queueing", ["best_effort_fifo", "strict_fifo"])
def test_reasons_add_up_to_the_time_spent_queued(queueing):
    _, _, result, out = demo_replay(3000, 3, queueing)
    for share_metrics in out["shares"]:
        queued = sum(j["queued"] for j in out["jobs"] if j["share"] == share_metrics["name"])
        assert sum(share_metrics["waited_by_reason_seconds"].values()) == pytest.approx(queued, rel=1e-9)
    total = sum(result.summary["waited_by_reason_seconds"].values())
    assert total == pytest.approx(sum(j["queued"] for j in out["jobs"]), rel=1e-9)
