"""SEMANTICS.md sections 2 and 4: start-up time, checkpoints and lost work, preemption retries and
priority updates. One instance of type ``gpu`` held by share A unless said otherwise; A's jobs may
preempt its own lower-priority jobs."""

from __future__ import annotations

import pytest


def policy(capacity: int = 1, startup: float = 0, in_share: str = "lower_priority") -> dict:
    return {
        "capacity": {"gpu": capacity},
        "startup_seconds": startup,
        "shares": [{"name": "A", "capacity": {"gpu": capacity}, "in_share_preemption": in_share}],
    }


# -- start-up -----------------------------------------------------------------------------------


def test_starting_job_holds_capacity_and_progress_starts_after_startup(run):
    r = run(
        policy(startup=30),
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     10          A     100
    """,
    )
    # (state, first_start, end, wait, queued, preemptions, lost_seconds, reason)
    assert r.row("a1") == ("SUCCEEDED", 0, 130, 0, 0, 0, 0, None)  # 30 start-up + 100 work
    assert r.row("a2") == ("SUCCEEDED", 130, 260, 120, 120, 0, 0, None)  # waits for STARTING/RUNNING a1


def test_preempted_while_starting_loses_no_work(run):
    r = run(
        policy(startup=30),
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     10          A     100      5
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),
        (10, "a1", "preempt", "in_share", "a2"),  # still STARTING: no progress yet
        (10, "a2", "start", None, None),
        (140, "a2", "finish", None, None),
        (140, "a1", "start", None, None),
        (270, "a1", "finish", None, None),  # start-up again, then all 100 s of work
    ]
    assert r.row("a1") == ("SUCCEEDED", 0, 270, 0, 130, 1, 0, None)


def test_preempted_while_running_loses_progress_since_startup(run):
    r = run(
        policy(startup=30),
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     50          A     100      5
    """,
    )
    # a1 held 50 s: 30 start-up + 20 s of work, all lost (no checkpoints)
    assert r.row("a1") == ("SUCCEEDED", 0, 310, 0, 130, 1, 20, None)  # restarts at 180: 180 + 30 + 100


def test_rerun_cost_is_lost_work_plus_startup_spent(engine_run):
    starting = engine_run(
        policy(startup=30),
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     10          A     100      5
    """,
    ).raw["summary"]
    assert starting["lost_instance_seconds"] == pytest.approx(0)
    assert starting["rerun_instance_seconds"] == pytest.approx(10)  # 10 s of start-up spent, no work
    running = engine_run(
        policy(startup=30),
        """
        job_id submit_time share duration priority
        a1     0           A     100      0
        a2     50          A     100      5
    """,
    ).raw["summary"]
    assert running["lost_instance_seconds"] == pytest.approx(20)
    assert running["rerun_instance_seconds"] == pytest.approx(50)  # 20 lost + 30 start-up


# -- checkpoints and lost work ------------------------------------------------------------------


def test_checkpoint_keeps_work_up_to_the_last_checkpoint(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority checkpoint_interval
        a1     0           A     1000     0        300
        a2     700         A     100      5        -
    """,
    )
    # at 700 progress 700: 600 saved, 100 lost; a1 restarts at 800 with 400 s left
    assert r.row("a1") == ("SUCCEEDED", 0, 1200, 0, 100, 1, 100, None)


def test_preempted_exactly_at_a_checkpoint_loses_nothing(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority checkpoint_interval
        a1     0           A     1000     0        300
        a2     600         A     100      5        -
    """,
    )
    assert r.row("a1") == ("SUCCEEDED", 0, 1100, 0, 100, 1, 0, None)  # restarts at 700, 400 s left


def test_saved_work_accumulates_over_preemptions(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority checkpoint_interval
        a1     0           A     1000     0        300
        a2     700         A     100      5        -
        a3     1050        A     100      5        -
    """,
    )
    # 1st: progress 700, saved 600, lost 100; restart 800. 2nd at 1050: progress 600 + 250 = 850,
    # saved 600, lost 250; restart 1150 with 400 s left
    assert r.row("a1") == ("SUCCEEDED", 0, 1550, 0, 200, 2, 350, None)


def test_checkpoint_progress_excludes_startup(run):
    r = run(
        policy(startup=50),
        """
        job_id submit_time share duration priority checkpoint_interval
        a1     0           A     1000     0        300
        a2     700         A     100      5        -
    """,
    )
    # progress at 700 is 650: saved 600, lost 50; a2 ends 850; a1 then 50 + 400
    assert r.row("a1") == ("SUCCEEDED", 0, 1300, 0, 150, 1, 50, None)


def test_lost_instance_seconds_multiply_by_instance_count(engine_run):
    r = engine_run(
        policy(capacity=2, startup=50),
        """
        job_id submit_time share duration priority checkpoint_interval instance_count
        a1     0           A     1000     0        300                 2
        a2     700         A     100      5        -                   2
    """,
    )
    assert r.job("a1")["lost_seconds"] == pytest.approx(50)  # per job, not per instance
    assert r.raw["summary"]["lost_instance_seconds"] == pytest.approx(100)
    assert r.raw["summary"]["rerun_instance_seconds"] == pytest.approx(200)  # (50 lost + 50 start-up) x 2


# -- preemption retries ---------------------------------------------------------------------------


def test_zero_retries_fail_at_the_first_preemption(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority preemption_retries
        a1     0           A     1000     0        0
        a2     100         A     100      5        -
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),
        (100, "a1", "preempt", "in_share", "a2"),
        (100, "a1", "fail", "in_share", "a2"),  # the fail repeats the fatal preemption's cause
        (100, "a2", "start", None, None),
        (200, "a2", "finish", None, None),
    ]
    assert r.row("a1") == ("FAILED", 0, 100, 0, 0, 1, 100, None)


def test_n_retries_fail_at_preemption_n_plus_one(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority preemption_retries
        a1     0           A     1000     0        1
        a2     100         A     100      5        -
        a3     300         A     100      5        -
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),
        (100, "a1", "preempt", "in_share", "a2"),  # 1st preemption: retried
        (100, "a2", "start", None, None),
        (200, "a2", "finish", None, None),
        (200, "a1", "start", None, None),
        (300, "a1", "preempt", "in_share", "a3"),  # 2nd: retries used up
        (300, "a1", "fail", "in_share", "a3"),
        (300, "a3", "start", None, None),
        (400, "a3", "finish", None, None),
    ]
    assert r.row("a1") == ("FAILED", 0, 300, 0, 100, 2, 200, None)


def test_failed_job_counts_in_summary(engine_run):
    summary = engine_run(
        policy(),
        """
        job_id submit_time share duration priority preemption_retries
        a1     0           A     1000     0        0
        a2     100         A     100      5        -
    """,
    ).raw["summary"]
    assert (summary["succeeded"], summary["failed"]) == (1, 1)


# -- priority updates -------------------------------------------------------------------------------


def test_update_reorders_a_pending_job(run):
    r = run(
        policy(in_share="never"),
        """
        job_id submit_time share duration priority
        a0     0           A     100      0
        x      10          A     100      1
        y      20          A     100      5
    """,
        """
        time job_id priority
        50   x      9
    """,
    )
    assert r.starts() == [(0, "a0"), (100, "x"), (200, "y")]


def test_raising_a_running_job_protects_it(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority
        a1     0           A     1000     1
        a2     60          A     100      5
    """,
        """
        time job_id priority
        50   a1     9
    """,
    )
    assert r.preempts() == []
    assert r.starts() == [(0, "a1"), (1000, "a2")]


def test_lowering_a_running_job_lets_a_pending_one_preempt_at_once(run):
    r = run(
        policy(),
        """
        job_id submit_time share duration priority
        a1     0           A     1000     9
        a2     10          A     100      5
    """,
        """
        time job_id priority
        50   a1     0
    """,
    )
    assert r.events == [
        (0, "a1", "start", None, None),
        (50, "a1", "preempt", "in_share", "a2"),  # a pass runs at the update's instant
        (50, "a2", "start", None, None),
        (150, "a2", "finish", None, None),
        (150, "a1", "start", None, None),
        (1150, "a1", "finish", None, None),
    ]


def test_updates_for_unknown_unsubmitted_or_ended_jobs_are_ignored(run):
    r = run(
        policy(in_share="never"),
        """
        job_id submit_time share duration priority
        a0     0           A     50       0
        a1     0           A     250      0
        y      150         A     100      5
        z      200         A     100      1
    """,
        """
        time job_id priority
        20   ghost  9
        60   a0     9
        100  z      9
    """,
    )
    # ghost is unknown, a0 ended at 50, z is submitted at 200: z keeps priority 1 and runs after y
    assert r.starts() == [(0, "a0"), (50, "a1"), (300, "y"), (400, "z")]
    assert r.ignored_priority_updates == 3
