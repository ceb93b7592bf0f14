"""SEMANTICS.md section 8: fair sharing (Kueue fairSharing). The share value, the admission order by
value, and preemption by LessThanOrEqualToFinalShare / LessThanInitialShare with its causes.

Most cases restate Kueue's ``pkg/scheduler/preemption/preemption_fair_test.go`` (TestFairPreemptions) in
our model: three shares A, B, C with 3 instances of quota each in a pool of 9 (Kueue: ClusterQueues a, b,
c with 3 CPUs in cohort "all"), in-share preemption of lower priority, reclaim any. Every instance is
1 GPU, so L = 9 and a share borrowing k instances has value 1000 k / 9 / weight (111 per instance).
The running jobs ("admitted" in Kueue) start at 0 (or 1, 2 where the victim order must be fixed: most
recently started first); the incoming job comes at 10. Kueue's half CPUs are doubled (quota 6, pool 18).
Kueue priority -1 is our 0 and 0 our 1 where both occur.
"""

from __future__ import annotations

import pytest

FAIR = {"preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}


def share(name: str, quota: int, **options) -> dict:
    return {
        "name": name,
        "capacity": {"gpu": quota},
        "strategy": "LEND_AND_BORROW",
        "in_share_preemption": "lower_priority",
        "reclaim": "any",
        **options,
    }


def kueue_pool(
    quota: int = 3, weights: dict | None = None, strategies: list[str] | None = None, extra_shares: tuple = ()
) -> dict:
    """Kueue's baseCQs: A, B, C with ``quota`` each (and any extra shares) in a pool of their sum."""
    weights = weights or {}
    shares = [share(n, quota, **({"fair_weight": weights[n]} if n in weights else {})) for n in "ABC"]
    shares += list(extra_shares)
    fair = {"preemption_strategies": strategies} if strategies else FAIR
    return {
        "capacity": {"gpu": sum(s["capacity"]["gpu"] for s in shares)},
        "shares": shares,
        "fair_sharing": fair,
    }


def preempted(r) -> list[tuple]:
    return [(e[1], e[3], e[4]) for e in r.preempts()]


def test_reclaim_from_the_share_using_the_most(run):
    # Kueue "reclaim nominal from user using the most": A 3, B 5 (borrows 2: value 222), C 1. c_in stays
    # within C's quota (2 <= 3), so its value is 0 <= B's 111 after one victim: B's most recently started
    # job goes (all started at 0: the largest job_id), cause cross_share (Kueue InCohortReclamation)
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration
        a1     0           A     1000
        a2     0           A     1000
        a3     0           A     1000
        b1     0           B     1000
        b2     0           B     1000
        b3     0           B     1000
        b4     0           B     1000
        b5     0           B     1000
        c1     0           C     1000
        c_in   10          C     100
    """,
    )
    assert r.at(10) == [(10, "b5", "preempt", "cross_share", "c_in"), (10, "c_in", "start", None, None)]


def test_reclaim_from_a_share_using_less_when_the_most_is_not_enough(run):
    # Kueue "can reclaim from queue using less, if taking the latest workload from user using the most
    # isn't enough": A holds a2 (1) and a1 (3): borrows 1, value 111; B holds b2 (3) and b1 (2): borrows 2,
    # value 222. c_in (3) is within C's quota: value 0. B first: b1 (most recent) leaves B at 0 >= 0:
    # taken, but 10 > 9 still. B's value is 0 now, so A: a1 leaves A at 0: taken, and c_in fits. Walking
    # back, b1 is not needed (with a1 gone the pool holds 9 and A's idle quota covers B's borrowing):
    # only a1 goes. Kueue: "attempts to preempt b1, but it's not enough".
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        a2     0           A     1000     1
        b2     0           B     1000     3
        a1     1           A     1000     3
        b1     1           B     1000     2
        c_in   10          C     100      3
    """,
    )
    assert r.at(10) == [(10, "a1", "preempt", "cross_share", "c_in"), (10, "c_in", "start", None, None)]


def test_borrowing_share_takes_from_the_share_borrowing_the_most(run):
    # Kueue "reclaim borrowable quota from user using the most": as the first case but the incoming job is
    # A's: A would borrow 1 (value 111); B at 222 falls to 111 without one job: 111 <= 111 passes. A is
    # not within its quota, so the cause is fair_sharing (Kueue InCohortFairSharing)
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration
        a1     0           A     1000
        a2     0           A     1000
        a3     0           A     1000
        b1     0           B     1000
        b2     0           B     1000
        b3     0           B     1000
        b4     0           B     1000
        b5     0           B     1000
        c1     0           C     1000
        a_in   10          A     100
    """,
    )
    assert r.at(10) == [(10, "b5", "preempt", "fair_sharing", "a_in"), (10, "a_in", "start", None, None)]


def test_nobody_is_preempted_when_everyone_is_within_quota(run):
    # Kueue "can't preempt when everyone under nominal": no share borrows, so no other share's job is a
    # candidate, and C's own jobs have c_in's priority: c_in waits for the first job to end
    rows = [f"{s}{i}     0           {s.upper()}     1000" for s in "abc" for i in (1, 2, 3)]
    r = run(kueue_pool(), "job_id submit_time share duration\n" + "\n".join(rows) + "\nc_in 10 C 100")
    assert r.preempts() == []
    assert r.starts()[-1] == (1000, "c_in")


def test_no_preemption_that_would_switch_the_imbalance(run):
    # Kueue "can't preempt when it would switch the imbalance": B borrows 2 (222). a_in (2) would make A
    # borrow 2 (222): 222 <= 111 (B after one victim) fails, and 222 < 222 fails too
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        a1     0           A     1000     3
        b1     0           B     1000     5
        a_in   10          A     100      2
    """,
    )
    assert r.preempts() == []


def test_lower_priority_jobs_of_its_own_share(run):
    # Kueue "can preempt lower priority workloads from same CQ": A holds two priority-0 jobs and two of
    # priority 1 (borrows 1), B five (borrows 2: 222). a_in (2, priority 1) puts A at 3 borrowed (333), the
    # highest: A itself is the target and gives a2_low (most recent: the larger job_id). Then A and B are
    # both at 222; A's next candidate (priority 0) comes before B's (1) in the victim order: a1_low
    rows = "\n".join(f"b{i} 0 B 1000 1 1" for i in range(1, 6))
    r = run(
        kueue_pool(),
        f"""
        job_id submit_time share duration priority instance_count
        a1_low 0           A     1000     0        1
        a2_low 0           A     1000     0        1
        a3     0           A     1000     1        1
        a4     0           A     1000     1        1
        {rows}
        a_in   10          A     100      1        2
    """,
    )
    assert preempted(r) == [("a2_low", "in_share", "a_in"), ("a1_low", "in_share", "a_in")]


def test_own_lower_priority_job_and_the_share_using_the_most(run):
    # Kueue "can preempt a combination of same CQ and highest user": A holds a_low (priority 0), a2, a3;
    # B six (borrows 3: 333). a_in (2) puts A at 222: B is the target, 222 <= 222 after one victim: b6
    # (most recent by job_id), cause fair_sharing. Now A and B are both at 222, A's a_low comes first in
    # the victim order: taken, in_share, and a_in fits
    rows = "\n".join(f"b{i} 0 B 1000 1 1" for i in range(1, 7))
    r = run(
        kueue_pool(),
        f"""
        job_id submit_time share duration priority instance_count
        a_low  0           A     1000     0        1
        a2     0           A     1000     1        1
        a3     0           A     1000     1        1
        {rows}
        a_in   10          A     100      1        2
    """,
    )
    assert r.at(10) == [
        (10, "b6", "preempt", "fair_sharing", "a_in"),
        (10, "a_low", "preempt", "in_share", "a_in"),
        (10, "a_in", "start", None, None),
    ]  # neither preempted job can preempt back in the next rounds: both would raise their share above


def test_a_huge_borrower_goes_when_the_incoming_stays_within_quota(run):
    # Kueue "preempt huge workload if there is no other option, as long as the target CQ gets a lower
    # share": b1 holds all 9; a_in (2) stays within A's quota: value 0 <= 0 (B without b1): cross_share
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        b1     0           B     1000     9
        a_in   10          A     100      2
    """,
    )
    assert preempted(r) == [("b1", "cross_share", "a_in")]


def test_no_preemption_of_a_huge_borrower_for_a_huge_incoming(run):
    # Kueue "can't preempt huge workload if the incoming is also huge": A would borrow 4 (444), B borrows
    # 4 (444): 444 <= 0 (B without b1) fails, 444 < 444 fails
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        a1     0           A     1000     2
        b1     0           B     1000     7
        a_in   10          A     100      5
    """,
    )
    assert r.preempts() == []


def test_no_preemption_of_two_small_jobs_for_a_huge_incoming(run):
    # Kueue "can't preempt 2 smaller workloads if the incoming is huge": A would borrow 3 (333), B borrows
    # 4 (444). No single victim leaves B at 333 or more (222, 222, 111): all set aside. Second phase:
    # 333 < 444 takes B's first, but 11 > 9 and B is dropped: nobody is preempted
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        b1     0           B     1000     2
        b2     0           B     1000     2
        b3     0           B     1000     3
        a_in   10          A     100      6
    """,
    )
    assert r.preempts() == []


def test_own_share_then_others_even_over_quota(run):
    # Kueue "preempt from target and others even if over nominal": A holds a2_low (1) and a1_low (2, more
    # recent), B b2 and b1 (3 each, b1 more recent; borrows 3: 333). a_in (4) puts A at 4 borrowed (444):
    # A is the target and gives a1_low; A at 222 < B: B's b1 and b2 each leave B at 0 < 222: set aside.
    # A gives a2_low (A at 111), still 10 > 9. Second phase: 111 < 333 takes b1: it fits. Walking back
    # a2_low is not needed (8 of 9 held, A's borrowing covered by C): a1_low (in_share), b1 (fair_sharing)
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration priority instance_count
        a2_low 0           A     1000     0        1
        b2     0           B     1000     1        3
        a1_low 1           A     1000     0        2
        b1     1           B     1000     1        3
        a_in   10          A     100      1        4
    """,
    )
    assert preempted(r) == [("a1_low", "in_share", "a_in"), ("b1", "fair_sharing", "a_in")]


def test_prefer_a_victim_that_does_not_leave_the_target_below_the_incoming(run):
    # Kueue "prefer to preempt workloads that don't make the target CQ have the biggest share" (doubled:
    # quotas 6, pool 18, L 18). B holds b3 (4), b2 (2), b1 (4, most recent): borrows 4, 222; C holds c1 (2).
    # a_in (7) puts A at 1 borrowed: 55.6. b1 would leave B at 0 < 55.6: set aside; b2 leaves B at 111:
    # taken (LessThanOrEqualToFinalShare first, before LessThanInitialShare could take b1)
    r = run(
        kueue_pool(quota=6),
        """
        job_id submit_time share duration instance_count
        b3     0           B     1000     4
        c1     0           C     1000     2
        b2     1           B     1000     2
        b1     2           B     1000     4
        a_in   10          A     100      7
    """,
    )
    assert preempted(r) == [("b2", "fair_sharing", "a_in")]


def test_preempt_from_two_shares_when_that_lowers_the_highest_value(run):
    # Kueue "preempt from different cluster queues if the end result has a smaller max share" (doubled):
    # B holds b2 (5), b1 (4); C c2 (5), c1 (4, most recent of all): each borrows 3, 167. a_in (7): A at
    # 55.6. No victim passes the first strategy (each leaves its share at 0). Second phase: B and C tie at
    # 167, C's c1 is first in the victim order: taken (21 > 18 still), C dropped; then B's b1: fits
    r = run(
        kueue_pool(quota=6),
        """
        job_id submit_time share duration instance_count
        b2     0           B     1000     5
        c2     0           C     1000     5
        b1     1           B     1000     4
        c1     2           C     1000     4
        a_in   10          A     100      7
    """,
    )
    assert preempted(r) == [("c1", "fair_sharing", "a_in"), ("b1", "fair_sharing", "a_in")]


def test_the_scenario_above_does_not_flap(run):
    # Kueue "scenario above does not flap": after it, A holds 7 (borrows 1: 55.6), B 5, C 5. b_in (4) would
    # put B at 3 borrowed (167): A without a1 is at 0, and 167 < 55.6 fails too: nobody is preempted
    r = run(
        kueue_pool(quota=6),
        """
        job_id submit_time share duration instance_count
        a1     0           A     1000     7
        b2     0           B     1000     5
        c2     0           C     1000     5
        b_in   10          B     100      4
    """,
    )
    assert r.preempts() == []


def test_no_preemption_that_takes_the_target_below_its_quota(run):
    # Kueue "cannot preempt if it would make the candidate CQ go under nominal after preempting one
    # element": B borrows 3 (333) in two jobs of 3. a_in (4): A at 111. Either victim leaves B at 0: the
    # first strategy fails; the second takes one (111 < 333) but 10 > 9: nobody is preempted
    r = run(
        kueue_pool(),
        """
        job_id submit_time share duration instance_count
        b1     0           B     1000     3
        b2     0           B     1000     3
        c1     0           C     1000     3
        a_in   10          A     100      4
    """,
    )
    assert r.preempts() == []


def test_low_priority_borrowers_are_not_preempted_capriciously(run):
    # Kueue "workloads under priority threshold not capriciously preempted": share P (quota 0) borrows 3
    # (333) with priority-0 jobs. a_in (2, priority 1) puts A at 222: one of P's jobs passes (222 <= 222)
    # but 10 > 9; the next would leave P at 111 < 222; second phase 222 < 222 fails: nobody is preempted
    pol = kueue_pool(extra_shares=(share("P", 0),))
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a1     0           A     1000     1        1
        a2     0           A     1000     1        1
        a3     0           A     1000     1        1
        b1     0           B     1000     1        1
        b2     0           B     1000     1        1
        b3     0           B     1000     1        1
        p1     0           P     1000     0        1
        p2     0           P     1000     0        1
        p3     0           P     1000     0        1
        a_in   10          A     100      1        2
    """,
    )
    assert r.preempts() == []


TWO_OF_B = """
job_id submit_time share duration priority instance_count
a1     0           A     1000     0        3
b_low  0           B     1000     0        5
b_high 0           B     1000     1        1
a_in   10          A     100      0        1
"""


def test_less_than_initial_share_takes_the_lowest_priority_even_if_big(run):
    # Kueue "preempt lower priority first, even if big" (LessThanInitialShare alone): A at 111 < B's 333,
    # whatever the victim: B's first in the victim order, b_low (priority 0), goes
    r = run(kueue_pool(strategies=["LessThanInitialShare"]), TWO_OF_B)
    assert r.at(10) == [(10, "b_low", "preempt", "fair_sharing", "a_in"), (10, "a_in", "start", None, None)]


def test_less_than_or_equal_to_final_share_takes_the_one_that_keeps_the_balance(run):
    # Kueue "preempt workload that doesn't transfer the imbalance, even if high priority"
    # (LessThanOrEqualToFinalShare alone): without b_low B is at 0 < A's 111: set aside; without b_high B is
    # at 222 >= 111: b_high goes. In the next round b_high (priority 1) preempts b_low in its own share:
    # B counting b_high is at 333, above A, and without b_low the pool has room
    r = run(kueue_pool(strategies=["LessThanOrEqualToFinalShare"]), TWO_OF_B)
    assert r.at(10) == [
        (10, "b_high", "preempt", "fair_sharing", "a_in"),
        (10, "a_in", "start", None, None),
        (10, "b_low", "preempt", "in_share", "b_high"),
        (10, "b_high", "start", None, None),
    ]


SIX_OF_B = "\n".join(
    ["job_id submit_time share duration instance_count"]
    + [f"a{i} 0 A 1000 1" for i in (1, 2, 3)]
    + [f"b{i} 0 B 1000 1" for i in range(1, 7)]
)


def test_a_heavier_share_preempts_more(run):
    # Kueue "CQ with higher weight can preempt more": A weighs 2. a_in (2) puts A at 2 borrowed: 222 / 2 =
    # 111. B (333) without one job is at 222, without two at 111: both pass, 111 <= 111
    r = run(kueue_pool(weights={"A": 2}), SIX_OF_B + "\na_in 10 A 100 2")
    assert preempted(r) == [("b6", "fair_sharing", "a_in"), ("b5", "fair_sharing", "a_in")]


def test_anything_borrowed_by_a_share_of_weight_zero_can_be_preempted(run):
    # Kueue "can preempt anything borrowing from CQ with 0 weight": B's value is infinite while it borrows.
    # a_in (3): A at 333. b6 and b5 pass (B stays infinite); b4 would leave B at 0 < 333: it and the rest
    # are set aside. Second phase: 333 < infinite takes b4: it fits
    r = run(kueue_pool(weights={"B": 0}), SIX_OF_B + "\na_in 10 A 100 3")
    assert preempted(r) == [
        ("b6", "fair_sharing", "a_in"),
        ("b5", "fair_sharing", "a_in"),
        ("b4", "fair_sharing", "a_in"),
    ]


def test_nothing_within_quota_of_a_share_of_weight_zero_is_preempted(run):
    # Kueue "can't preempt nominal from CQ with 0 weight": A and B (3 each, pool 6), B weighs 0 but
    # borrows nothing: no candidate at all
    pol = {
        "capacity": {"gpu": 6},
        "fair_sharing": FAIR,
        "shares": [share("A", 3), share("B", 3, fair_weight=0)],
    }
    rows = "\n".join(f"{s}{i} 0 {s.upper()} 1000" for s in "ab" for i in (1, 2, 3))
    r = run(pol, "job_id submit_time share duration\n" + rows + "\na_in 10 A 100")
    assert r.preempts() == []


def test_in_share_preemption_with_a_single_share(run):
    # Kueue "can preempt within cluster queue when no cohort": one share, nothing lendable (L = 0, every
    # value 0); a_in (priority 1000) preempts a1 in its share
    pol = {"capacity": {"gpu": 1}, "fair_sharing": FAIR, "shares": [share("A", 1)]}
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     1000     0
        a_in   10          A     100      1000
    """,
    )
    assert r.at(10) == [(10, "a1", "preempt", "in_share", "a_in"), (10, "a_in", "start", None, None)]


# -- admission order by value ---------------------------------------------------------------------------


def no_preemption_pool(
    fair: bool, b_weight: float = 1, a_weight: float = 1, queueing: str = "best_effort_fifo"
) -> dict:
    # pool 4: A and B hold 1 each, 2 unassigned (L = 4); nobody preempts
    shares = [
        {"name": "A", "capacity": {"gpu": 1}, "reclaim": "never", "fair_weight": a_weight},
        {"name": "B", "capacity": {"gpu": 1}, "reclaim": "never", "fair_weight": b_weight},
    ]
    return {
        "capacity": {"gpu": 4},
        "shares": shares,
        "queueing": queueing,
        "fair_sharing": FAIR if fair else None,
    }


ADMISSION_JOBS = """
job_id submit_time share duration priority instance_count
a1     0           A     100      0        2
a2     10          A     100      9        1
b2     10          B     100      0        2
"""


@pytest.mark.parametrize("queueing", ["best_effort_fifo", "strict_fifo"])
def test_fair_sharing_admits_the_share_of_lowest_value_first(run, queueing):
    # a1 runs on A's quota and 1 borrowed. At 10 a2 would put A at 2 borrowed (1000 x 2 / 4 = 500), b2 put
    # B at 1 (250): b2 goes first although a2 has the higher priority; then a2 does not fit
    r = run(no_preemption_pool(fair=True, queueing=queueing), ADMISSION_JOBS)
    assert r.starts() == [(0, "a1"), (10, "b2"), (100, "a2")]


def test_without_fair_sharing_priority_decides_between_borrowers(run):
    # both need to borrow, so section 4's order takes a2 (priority 9) first; b2 waits for a1
    r = run(no_preemption_pool(fair=False), ADMISSION_JOBS)
    assert r.starts() == [(0, "a1"), (10, "a2"), (100, "b2")]


@pytest.mark.parametrize(
    ("a_weight", "b_weight", "first"),
    [
        (1, 0.25, "a2"),  # B at 250 / 0.25 = 1000 > A's 500
        (1, 0.5, "a2"),  # 500 each: priority decides
        (2, 1, "a2"),  # A at 500 / 2 = 250 each: priority decides
        (1, 0, "a2"),  # B's value is infinite
        (0, 0, "b2"),  # both infinite: compared by 1000 B / L, 250 < 500
        (0, 1, "b2"),  # A's value is infinite
    ],
)
def test_weights_change_the_admission_order(run, a_weight, b_weight, first):
    r = run(no_preemption_pool(fair=True, a_weight=a_weight, b_weight=b_weight), ADMISSION_JOBS)
    assert r.starts()[1] == (10, first)


def test_values_are_computed_anew_after_each_admission(run):
    # pool 2, nobody's quota (L = 2). At 0 a1, a2 (A, priority 9) and b1 (B) would each put their share at
    # 500: a1 goes first by priority; then a2 would put A at 1000, b1 B at 500: b1 goes next, a2 waits
    pol = {
        "capacity": {"gpu": 2},
        "fair_sharing": FAIR,
        "shares": [{"name": "A", "capacity": {"gpu": 0}}, {"name": "B", "capacity": {"gpu": 0}}],
    }
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     100      9
        a2     0           A     100      9
        b1     0           B     100      0
    """,
    )
    assert r.starts() == [(0, "a1"), (0, "b1"), (100, "a2")]


def test_share_values_weigh_instances_by_their_gpus(run):
    # two types: x (1 GPU) and y (4 GPUs), pool 4 x + 1 y, nobody's quota: L = 4 + 4 = 8. a1 holds one y
    # (A at 1000 x 4 / 8 = 500). At 10 a2 (A, one x) would put A at 625, b1 (B, one x) B at 125: b1 first,
    # then a2 (both fit)
    pol = {
        "instance_types": {"x": {"gpus": 1}, "y": {"gpus": 4}},
        "capacity": {"x": 4, "y": 1},
        "fair_sharing": FAIR,
        "shares": [{"name": "A", "capacity": {}}, {"name": "B", "capacity": {}}],
    }
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_type
        a1     0           A     100      0        y
        a2     10          A     100      9        x
        b1     10          B     100      0        x
    """,
    )
    assert r.starts() == [(0, "a1"), (10, "b1"), (10, "a2")]


def test_equal_values_tie_exactly_whatever_the_weights(run):
    # pool 9, nobody's quota (L = 9); nobody preempts. a1 (A, 2) and c1 (C, 6) run; one instance is free.
    # At 10 a2 would put A at 3 borrowed, weight 3: 1000 x 3 / 9 / 3 = 111.1...; b2 would put B at 1,
    # weight 1: 1000 x 1 / 9 = 111.1..., the same value. The tie goes to the higher priority: b2 (in
    # binary floats the first quotient rounds below the second, which would wrongly take a2)
    shares = [
        {"name": n, "capacity": {"gpu": 0}, "reclaim": "never", "fair_weight": w}
        for n, w in (("A", 3), ("B", 1), ("C", 1))
    ]
    pol = {"capacity": {"gpu": 9}, "fair_sharing": FAIR, "shares": shares}
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a1     0           A     100      0        2
        c1     0           C     100      0        6
        a2     10          A     100      0        1
        b2     10          B     100      5        1
    """,
    )
    assert r.starts()[2] == (10, "b2")
    assert r.starts()[3] == (100, "a2")


@pytest.mark.parametrize("in_a_cohort", [False, True])
def test_a_refused_job_does_not_speak_for_a_lower_priority_one_with_fewer_candidates(run, in_a_cohort):
    # Section 8's search is not monotone in its candidates: a job with more of them can be refused where
    # one with fewer is admitted. Pool 4 = A 1 + B 1 + C 2 (C idle, so L = 4). a1 (A, 1) runs; B holds
    # b_hi (1, priority 2) and b_lo (2, priority 0, started later): it borrows 2, value 1000 x 2 / 4 / 0.5
    # = 1000. At 10 a_hi (2, priority 3) and a_lo (2, priority 2) of A: each would put A at 2 borrowed,
    # 500; a_hi comes first (priority). A reclaims lower_priority, so a_hi's candidates are b_lo and b_hi,
    # a_lo's only b_lo. a_hi, first strategy (LessThanOrEqualToFinalShare): b_lo would leave B at 0 < 500:
    # set aside; b_hi leaves B at 500 >= 500: taken, but 1 instance is free of the 2 needed. Second
    # strategy (LessThanInitialShare) on b_lo: 500 < B's 500 now? No: refused, nobody preempted. a_lo:
    # b_lo set aside as before, then 500 < 1000: taken, and a_lo fits (cause fair_sharing: A borrows).
    # Nobody can preempt back: A and B preempt nobody in their share, B never reclaims. The same in one
    # cohort of section 13 (its own quota 0: the tree's values are the shares' values above).
    shares = [
        share("A", 1, reclaim="lower_priority", in_share_preemption="never"),
        share("B", 1, reclaim="never", in_share_preemption="never", fair_weight=0.5),
        share("C", 2),
    ]
    pol = {"capacity": {"gpu": 4}, "shares": shares, "fair_sharing": FAIR}
    if in_a_cohort:
        pol["cohorts"] = [{"name": "all"}]
        for s in shares:
            s["cohort"] = "all"
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a1     0           A     1000     3        1
        b_hi   0           B     1000     2        1
        b_lo   1           B     1000     0        2
        a_hi   10          A     1000     3        2
        a_lo   10          A     1000     2        2
    """,
    )
    assert r.at(10) == [(10, "b_lo", "preempt", "fair_sharing", "a_lo"), (10, "a_lo", "start", None, None)]
