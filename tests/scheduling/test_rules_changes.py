"""SEMANTICS.md section 9: capacity and quotas over time. Preemptions where capacity is gone (cause
``capacity``), a lowered quota that preempts nobody, unschedulable only if so at every instant, and
training plans. One instance type ``gpu``."""

from __future__ import annotations

from gpu_policies import share


def policy(capacity: int, *shares: dict, changes: list[dict], **options) -> dict:
    return {"capacity": {"gpu": capacity}, "shares": list(shares), "changes": changes, **options}


def pool_change(time: float, n: int) -> dict:
    return {"time": time, "capacity": {"gpu": n}}


def quota_change(time: float, name: str, n: int) -> dict:
    return {"time": time, "share": name, "capacity": {"gpu": n}}


def training_plan(name: str, start: float, end: float, pool_before: int, quota_before: int, extra: int):
    """A SageMaker training plan as four changes: pool and share up at its start, both down at its end."""
    return [
        pool_change(start, pool_before + extra),
        quota_change(start, name, quota_before + extra),
        pool_change(end, pool_before),
        quota_change(end, name, quota_before),
    ]


def test_a_borrower_goes_first_when_capacity_falls(run):
    # pool 4 -> 2 at 50. A (quota 2) runs a1, a2; B (quota 0) borrows the unassigned instance for b1,
    # priority 9. At 50 the pool holds 3 > 2: b1 goes first, its share borrowing, whatever its priority
    pol = policy(4, share("A", 2), share("B", 0), changes=[pool_change(50, 2)])
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      1
        a2     0           A     100      0
        b1     10          B     100      9
    """,
    )
    assert r.at(50) == [(50, "b1", "preempt", "capacity", None)]
    assert r.job("b1")["state"] == "SUCCEEDED" and r.starts()[-1] == (100, "b1")  # back when A's jobs end


def test_capacity_victims_taken_anew_then_the_unneeded_kept_running(run):
    # pool 4 -> 2 at 50. A (quota 1) holds a1 (1 instance, priority 0) and a2 (2, priority 5): it borrows
    # 2; B (quota 1) holds b1. Usage 4 > 2: A borrows, so a1 (its lowest priority) is taken, then (A still
    # borrowing, usage 3 > 2) a2. Walking back, a2 is needed (a1 alone leaves 3 > 2), a1 is not: with
    # a2 gone the pool holds 2 and A is within its quota, so a1 keeps running.
    pol = policy(4, share("A", 1), share("B", 1), changes=[pool_change(50, 2)])
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a1     0           A     100      0        1
        a2     0           A     100      5        2
        b1     0           B     100      0        1
    """,
    )
    assert r.at(50) == [(50, "a2", "preempt", "capacity", None)]
    assert r.job("a1")["preemptions"] == 0 and r.job("b1")["preemptions"] == 0


def test_lowest_priority_then_most_recently_started_when_nobody_borrows(run):
    # pool 3 -> 2 at 50 with A's quota 3 -> 2: A holds a1 (started 0), a2 and a3 (started 10), all
    # priority 0 but a1 (1). Nobody borrows before the drop; after it A holds 3 > its quota 2 and the pool
    # 3 > 2: of a2 and a3 (lowest priority), both started at 10, the larger job_id goes: a3
    pol = policy(3, share("A", 3), changes=[pool_change(50, 2), quota_change(50, "A", 2)])
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      1
        a2     10          A     100      0
        a3     10          A     100      0
    """,
    )
    assert r.at(50) == [(50, "a3", "preempt", "capacity", None)]


def test_finishes_come_before_changes(run):
    # pool 2 -> 1 at 50, the instant a1 ends: a1 finishes first, so the pool holds 1 and nobody is
    # preempted
    pol = policy(2, share("A", 2), changes=[pool_change(50, 1), quota_change(50, "A", 1)])
    r = run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     50
        a2     0           A     100
    """,
    )
    assert r.preempts() == []
    assert r.at(50) == [(50, "a1", "finish", None, None)]


def test_a_lowered_quota_alone_preempts_nobody_and_others_may_reclaim(run):
    # pool 2. At 50 A's quota 2 -> 1 and B's 0 -> 1. A's a1, a2 keep running: A borrows 1, which B's idle
    # quota covers (the invariant holds). At 60 b1 comes, within B's new quota: it reclaims a2 (A's
    # borrowing job: both started at 0, larger job_id)
    pol = policy(
        2, share("A", 2), share("B", 0), changes=[quota_change(50, "A", 1), quota_change(50, "B", 1)]
    )
    r = run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
        b1     60          B     100
    """,
    )
    assert r.preempts() == [(60, "a2", "preempt", "cross_share", "b1")]


def test_quota_moved_to_a_reserve_share_is_freed_at_once(run):
    # as above but B is RESERVE: its new quota is lent to nobody, so at 50 A's borrowed instance breaks the
    # invariant (1 borrowed > 0 lendable): a2 is preempted, cause capacity
    pol = policy(
        2,
        share("A", 2),
        share("B", 0, "RESERVE"),
        changes=[quota_change(50, "A", 1), quota_change(50, "B", 1)],
    )
    r = run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     100
    """,
    )
    assert r.at(50) == [(50, "a2", "preempt", "capacity", None)]
    assert r.starts()[-1] == (100, "a2")  # after a1, within A's quota of 1


def test_a_share_above_its_lowered_quota_admits_nothing_more(run):
    # A (LEND, quota 2 -> 1 at 50) keeps a1 and a2 (B lends its new quota). a3 (A) comes at 60: A holds 2
    # and may hold 1 without borrowing, so a3 waits even when a1 ends at 100 (A still holds 1 = its
    # quota), and starts when a2 ends at 150
    pol = policy(
        2,
        share("A", 2, "LEND"),
        share("B", 0, "LEND"),
        changes=[quota_change(50, "A", 1), quota_change(50, "B", 1)],
    )
    r = run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     100
        a2     0           A     150
        a3     60          A     10
    """,
    )
    assert r.preempts() == []
    assert r.starts() == [(0, "a1"), (0, "a2"), (150, "a3")]


def test_a_job_waits_for_a_training_plan(run):
    # pool 1 (A's quota); a plan adds 2 instances to pool and A from 100 to 400. wide (3 instances) is
    # submitted at 0: under the policy as it stands then it could never run, but it fits during the plan,
    # so it waits and starts at 100. late (3 instances) comes at 500, after the plan: it stays RUNNABLE.
    # huge (4) never fits at any instant: unschedulable, the pool being too small throughout.
    plan = training_plan("A", 100, 400, pool_before=1, quota_before=1, extra=2)
    pol = policy(1, share("A", 1), changes=plan)
    r = run(
        pol,
        """
        job_id submit_time share duration instance_count
        wide   0           A     200      3
        late   500         A     10       3
        huge   0           A     10       4
    """,
    )
    assert r.events == [
        (0, "huge", "unschedulable", None, None),
        (100, "wide", "start", None, None),
        (300, "wide", "finish", None, None),
    ]
    assert r.job("huge")["reason"] == "SERVICE_ENVIRONMENT_MAX_RESOURCE"
    assert (r.job("late")["state"], r.job("late")["reason"]) == ("RUNNABLE", None)


def test_a_job_outliving_its_training_plan_is_preempted_at_its_end(run):
    # wide (3 instances, 500 s, checkpoints every 100 s) starts at 100 with the plan; at 400 the plan
    # ends, the pool falls to 1 and wide holds 3: preempted, cause capacity, having saved 300 s of work
    plan = training_plan("A", 100, 400, pool_before=1, quota_before=1, extra=2)
    pol = policy(1, share("A", 1), changes=plan)
    r = run(
        pol,
        """
        job_id submit_time share duration instance_count checkpoint_interval
        wide   0           A     500      3              100
    """,
    )
    assert r.events == [
        (100, "wide", "start", None, None),
        (400, "wide", "preempt", "capacity", None),
    ]
    wide = r.job("wide")
    assert (wide["state"], wide["preemptions"], wide["lost_seconds"]) == ("RUNNABLE", 1, 0)


def test_unschedulable_for_the_quota_when_the_pool_is_big_enough_some_time(run):
    # A is RESERVE with quota 1; the pool grows to 3 at 100 but A's quota stays 1: a 2-instance job of A
    # never fits its quota, so it is unschedulable for the quota (the pool alone would do from 100 on)
    pol = policy(1, share("A", 1, "RESERVE"), changes=[pool_change(100, 3)])
    r = run(
        pol,
        """
        job_id submit_time share duration instance_count
        two    0           A     10       2
    """,
    )
    assert r.events == [(0, "two", "unschedulable", None, None)]
    assert r.job("two")["reason"] == "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"


def test_capacity_preemption_uses_up_retries(run):
    # b1 may be preempted 0 times: the capacity preemption at 50 fails it, and the fail repeats the cause
    pol = policy(2, share("A", 1), share("B", 0), changes=[pool_change(50, 1)])
    r = run(
        pol,
        """
        job_id submit_time share duration preemption_retries
        a1     0           A     100      -
        b1     0           B     100      0
    """,
    )
    assert r.at(50) == [(50, "b1", "preempt", "capacity", None), (50, "b1", "fail", "capacity", None)]
    assert r.job("b1")["state"] == "FAILED"


def test_utilization_integrates_capacity_over_time(engine_run):
    # pool 1 until 100, then 3 until 200 (horizon 0-200): capacity 100 + 300 = 400 instance-seconds.
    # a1 runs 0-200 on one instance: 200 busy, utilization 0.5 (against the first capacity alone: 1.0)
    pol = policy(1, share("A", 1), changes=[pool_change(100, 3)])
    r = engine_run(
        pol,
        """
        job_id submit_time share duration
        a1     0           A     200
    """,
    )
    assert r.raw["summary"]["utilization"] == 0.5


def test_the_horizon_holds_a_run_that_never_ends(engine_run):
    # pool and A's quota 2 until 100, then 1. a1 (2 instances) runs 0-100 and is preempted (cause
    # capacity) when the pool falls; it never fits again and stays RUNNABLE, with no end. Section 5's
    # horizon runs "to the last end": read as the last end of any run, it is 0-100 (the preemption ends
    # a1's run), so its 200 busy instance-seconds count against 2 x 100 of capacity (utilization 1.0),
    # as its 200 lost instance-seconds do. Read as jobs' ends only, nothing would end and the run would
    # fall outside a horizon of 0 s.
    pol = policy(2, share("A", 2), changes=[pool_change(100, 1), quota_change(100, "A", 1)])
    r = engine_run(
        pol,
        """
        job_id submit_time share duration instance_count
        a1     0           A     300      2
    """,
    )
    assert r.job("a1")["state"] == "RUNNABLE" and r.job("a1")["end"] is None
    summary = r.raw["summary"]
    assert (summary["horizon"]["start"], summary["horizon"]["end"]) == (0, 100)
    assert summary["utilization"] == 1.0
    assert summary["lost_instance_seconds"] == 200
