"""SEMANTICS.md section 10: the time limit in RUNNABLE (AWS jobStateTimeLimitActions, action CANCEL).
One instance type ``gpu``."""

from __future__ import annotations

from gpu_policies import policy, share


def a2_waits_for_a1(run, limit: float):
    """One instance, held by a1 from 0 to 100; a2 (100 s) comes at 10 and waits, under a RUNNABLE limit
    of ``limit`` s."""
    pol = policy(1, share("A", 1), runnable_timeout_seconds=limit)
    jobs = [
        {"job_id": "a1", "submit_time": 0, "share": "A", "duration": 100},
        {"job_id": "a2", "submit_time": 10, "share": "A", "duration": 100},
    ]
    return run(pol, jobs)


def test_a_job_is_cancelled_exactly_at_its_limit(run):
    # a2 is RUNNABLE from 10, so its 50 s run out at 60
    r = a2_waits_for_a1(run, 50)
    assert r.events == [
        (0, "a1", "start", None, None),
        (60, "a2", "cancel", None, None),
        (100, "a1", "finish", None, None),
    ]
    a2 = r.job("a2")
    assert (a2["state"], a2["first_start"], a2["wait"], a2["end"], a2["queued"]) == (
        "CANCELLED",
        None,
        None,
        60,
        50,
    )  # never started: no wait; 50 s queued


def test_a_job_that_starts_before_its_limit_is_not_cancelled(run):
    # a2 waits from 10 to 100, 90 s: just under the 91 s limit
    r = a2_waits_for_a1(run, 91)
    assert r.starts() == [(0, "a1"), (100, "a2")]
    assert r.job("a2")["state"] == "SUCCEEDED"


def test_cancellation_comes_after_submissions_and_before_the_pass(run):
    # a2's 60 s run out at 100, the instant a1 frees the instance: it is cancelled before the pass, so
    # a3 (submitted at 50, 50 s RUNNABLE) takes the instance
    pol = policy(1, share("A", 1), runnable_timeout_seconds=60)
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     40          A     100      5
        a3     50          A     30       0
    """,
    )
    assert r.at(100) == [
        (100, "a1", "finish", None, None),
        (100, "a2", "cancel", None, None),
        (100, "a3", "start", None, None),
    ]


def preempted_at_30(run, a_hi_duration: int):
    """One instance, a limit of 120 s: a_low (100 s) runs from 0, and a_hi (priority 5, ``a_hi_duration``
    s) preempts it in-share at 30."""
    pol = policy(1, share("A", 1, in_share_preemption="lower_priority"), runnable_timeout_seconds=120)
    jobs = [
        {"job_id": "a_low", "submit_time": 0, "share": "A", "duration": 100, "priority": 0},
        {"job_id": "a_hi", "submit_time": 30, "share": "A", "duration": a_hi_duration, "priority": 5},
    ]
    return run(pol, jobs)


def test_the_clock_restarts_when_a_job_is_preempted(run):
    # a_hi runs until 130. a_low is RUNNABLE again from 30, so its 120 s limit ends at 150: it restarts
    # at 130, in time. Counted from its submission the limit would have ended at 120.
    r = preempted_at_30(run, 100)
    assert r.events == [
        (0, "a_low", "start", None, None),
        (30, "a_low", "preempt", "in_share", "a_hi"),
        (30, "a_hi", "start", None, None),
        (130, "a_hi", "finish", None, None),
        (130, "a_low", "start", None, None),
        (230, "a_low", "finish", None, None),  # no checkpoints: all 100 s again
    ]
    assert r.job("a_low")["queued"] == 100  # 0 before its first start, 100 after its preemption


def test_a_preempted_job_is_cancelled_after_the_limit_since_its_preemption(run):
    # as above but a_hi runs 200 s: a_low, RUNNABLE from 30, is cancelled at 150; its first start
    # stays, so it has a wait (0)
    r = preempted_at_30(run, 200)
    assert r.at(150) == [(150, "a_low", "cancel", None, None)]
    a_low = r.job("a_low")
    assert (a_low["state"], a_low["first_start"], a_low["wait"], a_low["end"], a_low["preemptions"]) == (
        "CANCELLED",
        0,
        0,
        150,
        1,
    )
    assert a_low["queued"] == 120


def test_a_cancelled_head_unblocks_its_share_in_the_same_pass(run):
    # strict_fifo: big heads A's queue and cannot fit while a0 runs; small waits behind it although an
    # instance is free. big's 30 s run out at 40: it is cancelled before the pass, and in that pass
    # small is the head and starts (RUNNABLE 20 s, under its limit)
    pol = policy(2, share("A", 2), queueing="strict_fifo", runnable_timeout_seconds=30)
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a0     0           A     100      0        1
        big    10          A     100      5        2
        small  20          A     100      0        1
    """,
    )
    assert r.events == [
        (0, "a0", "start", None, None),
        (40, "big", "cancel", None, None),
        (40, "small", "start", None, None),
        (100, "a0", "finish", None, None),
        (140, "small", "finish", None, None),
    ]


def test_a_job_waiting_for_a_training_plan_is_cancelled_at_its_limit(run):
    # a 2-instance job in a 1-instance pool is not unschedulable when a plan brings a second instance
    # at 500; with a limit of 100 s it is cancelled at 100 and the plan comes too late for it
    pol = policy(
        1,
        share("A", 1),
        runnable_timeout_seconds=100,
        changes=[
            {"time": 500, "capacity": {"gpu": 2}},
            {"time": 500, "share": "A", "capacity": {"gpu": 2}},
            {"time": 900, "capacity": {"gpu": 1}},
            {"time": 900, "share": "A", "capacity": {"gpu": 1}},
        ],
    )
    r = run(
        pol,
        """
        job_id submit_time share duration instance_count
        wide   0           A     100      2
    """,
    )
    assert r.events == [(100, "wide", "cancel", None, None)]


def test_summary_and_shares_count_cancelled_jobs(engine_run):
    pol = policy(1, share("A", 1), share("B", 0), runnable_timeout_seconds=50)
    r = engine_run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     10          A     100
        b1     20          B     10
    """,
    )
    # a2 is cancelled at 60, b1 (nothing to borrow while a1 runs) at 70; a1 succeeds
    summary = r.raw["summary"]
    assert (summary["succeeded"], summary["cancelled"]) == (1, 2)
    assert {s["name"]: s["cancelled"] for s in r.raw["shares"]} == {"A": 1, "B": 1}
