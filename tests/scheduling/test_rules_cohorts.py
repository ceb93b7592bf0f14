"""SEMANTICS.md section 13: hierarchical cohorts in the replay. Every case runs with the reference model
and the engine (the ``run`` fixture).

Kueue's own cases are restated as scenarios: the jobs Kueue's tests take as already admitted are
submitted at t = 0 (and admitted by our rules, in an order the comment checks), the incoming job at
t = 10. Kueue's priorities (which may be negative) are shifted by +10. Sources, in
``kubernetes-sigs/kueue``: ``pkg/cache/scheduler/resource_test.go``, ``pkg/cache/scheduler/
fair_sharing_test.go``, ``pkg/scheduler/preemption/preemption_hierarchical_test.go``,
``pkg/scheduler/preemption/fairsharing/ordering_test.go`` and ``pkg/scheduler/flavorassigner/
flavorassigner_test.go``. Kueue's ``borrowWithinCohort`` and evicted-first ordering are not modelled;
cases resting on them are left out, or restated with the outcome our rules give (said so).

One instance type, ``gpu`` (1 GPU), unless a case needs flavors. Shares default to LEND_AND_BORROW
with in-share preemption of lower priorities and ``reclaim: any``, as Kueue's test queues are set.
"""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.model import Policy


def policy(capacity: int | dict, shares: list[dict], cohorts: list[dict], **extra) -> dict:
    types = capacity if isinstance(capacity, dict) else {"gpu": capacity}
    return {
        "instance_types": {t: {"gpus": 1} for t in types},
        "capacity": types,
        "shares": shares,
        "cohorts": cohorts,
        **extra,
    }


def share(name: str, quota: int | dict, cohort: str | None = None, **options) -> dict:
    out = {
        "name": name,
        "capacity": quota if isinstance(quota, dict) else {"gpu": quota},
        "strategy": "LEND_AND_BORROW",
        "in_share_preemption": "lower_priority",
        "reclaim": "any",
        **options,
    }
    if cohort is not None:
        out["cohort"] = cohort
    return out


def cohort(name: str, quota: int | dict = 0, parent: str | None = None, **options) -> dict:
    out = {"name": name, "capacity": quota if isinstance(quota, dict) else {"gpu": quota}, **options}
    if parent is not None:
        out["parent"] = parent
    return out


# --- the quota arithmetic, seen through admissions ---------------------------------------------------------

# resource_test.go, "lending and borrowing limits respected": cohort 10 with cq1 10, cq2 10 (borrowing limit
# 2) and cq3 10 (lending limit 5), usage 20 / 10 / 6. SQ(cohort) = 10 + 10 + 10 + (10 - 5) = 35 and U(cohort)
# = 20 + 10 + max(0, 6 - 5) = 31: available 4 for cq1, min(4, 10 - 10 + 2) = 2 for cq2, max(0, 5 - 6) + 4 = 4
# for cq3. At t = 0, cq2's and cq3's jobs are within quota (level 0) and go first; cq1's 20 then borrows 10
# of the 24 the cohort has left. Reclaim is off so that a probe that does not fit just waits.
LIMITS_POLICY = policy(
    40,
    [share("cq1", 10, "cohort", reclaim="never"),
     share("cq2", 10, "cohort", reclaim="never", borrowing_limit=2),
     share("cq3", 10, "cohort", reclaim="never", lending_limit=5)],
    [cohort("cohort", 10)],
)  # fmt: skip


@pytest.mark.parametrize(
    ("probe_share", "available"),
    [("cq1", 4), ("cq2", 2), ("cq3", 4)],
)
@pytest.mark.parametrize("over", [0, 1])
def test_kueue_lending_and_borrowing_limits_respected(run, probe_share, available, over):
    """Kueue resource_test.go "lending and borrowing limits respected": available 4 / 2 / 4."""
    jobs = f"""
    job_id submit_time share duration instance_count
    u1     0           cq1   100      20
    u2     0           cq2   100      10
    u3     0           cq3   100      6
    probe  10          {probe_share} 10 {available + over}
    """
    r = run(LIMITS_POLICY, jobs)
    assert r.starts()[:3] == [(0, "u2"), (0, "u3"), (0, "u1")]  # level 0 first, then cq1 borrowing
    # a probe of exactly the available count starts at once; one more waits for the others to end
    assert r.job("probe")["first_start"] == (10 if over == 0 else 100)
    assert r.preempts() == []


# --- classical preemption over the tree (preemption_hierarchical_test.go) -----------------------------------

#            ROOT (0)
#         /         \
#      C (2)     q_borrowing (0)
#       |
#     q (0)
ADVANTAGE_TREE = [cohort("C", 2)]


def test_kueue_preempt_with_hierarchical_advantage(run):
    """Kueue "preempt with hierarchical advantage": q's job fits within C's quota, so it reclaims
    q_borrowing's job of the same priority (reclaim any), cause cross_share."""
    pol = policy(2, [share("q", 0, "C"), share("q_borrowing", 0)], ADVANTAGE_TREE)
    jobs = """
    job_id     submit_time share       duration priority instance_count
    admitted2  0           q_borrowing 100      10       2
    in         10          q           10       10       2
    """
    r = run(pol, jobs)
    assert r.at(10) == [(10, "admitted2", "preempt", "cross_share", "in"), (10, "in", "start", None, None)]
    assert r.starts()[-1] == (20, "admitted2")  # back on C's idle quota once in ends


def test_kueue_avoid_queues_within_nominal_quota(run):
    """Kueue "avoid queues within nominal quota": q_nominal's lower-priority job runs within its own quota
    and is spared; q_borrowing's is taken."""
    pol = policy(4, [share("q_nominal", 2), share("q", 0, "C"), share("q_borrowing", 0)], ADVANTAGE_TREE)
    jobs = """
    job_id     submit_time share       duration priority instance_count
    admitted1  0           q_nominal   100      0        2
    admitted2  0           q_borrowing 100      10       2
    in         10          q           10       10       2
    """
    r = run(pol, jobs)
    assert r.starts()[:2] == [(0, "admitted1"), (0, "admitted2")]  # level 0, then level 2 (borrows at ROOT)
    assert r.at(10) == [(10, "admitted2", "preempt", "cross_share", "in"), (10, "in", "start", None, None)]
    assert r.job("admitted1")["preemptions"] == 0


def test_kueue_preempt_multiple_with_hierarchical_advantage(run):
    """Kueue "preempt multiple with hierarchical advantage": both of q_borrowing's jobs, of higher priority
    than the incoming one, go (lowest priority first)."""
    pol = policy(2, [share("q", 0, "C"), share("q_borrowing", 0)], ADVANTAGE_TREE)
    jobs = """
    job_id     submit_time share       duration priority instance_count
    admitted1  0           q_borrowing 100      11       1
    admitted2  0           q_borrowing 100      12       1
    in         10          q           10       10       2
    """
    r = run(pol, jobs)
    assert r.at(10) == [
        (10, "admitted1", "preempt", "cross_share", "in"),
        (10, "admitted2", "preempt", "cross_share", "in"),
        (10, "in", "start", None, None),
    ]


def test_kueue_prefer_to_preempt_hierarchical_candidate(run):
    """Kueue "prefer to preempt hierarchical candidate": q could preempt its own lower-priority job, but
    other shares' candidates come first (section 4's order) and q_borrowing's one is enough."""
    pol = policy(2, [share("q", 0, "C"), share("q_borrowing", 0)], ADVANTAGE_TREE)
    jobs = """
    job_id               submit_time share       duration priority
    admitted_borrowing   0           q_borrowing 100      11
    admitted_same_queue  0           q           100      8
    in                   10          q           10       10
    """
    r = run(pol, jobs)
    assert r.at(10) == [
        (10, "admitted_borrowing", "preempt", "cross_share", "in"),
        (10, "in", "start", None, None),
    ]
    assert r.job("admitted_same_queue")["preemptions"] == 0


#            ROOT (0)
#         /         \
#      C (2)     q_borrowing (0)
#     /     \
#   q (4)  q_same_cohort (0)
def test_kueue_incoming_workload_fits_in_cq_nominal_quota(run):
    """Kueue "incoming workload fits in CQ nominal quota": q is within its quota once admitted, so it reclaims
    from both subtrees: q_same_cohort (lowest common ancestor C) and q_borrowing (ROOT), priorities aside."""
    shares = [share("q", 4, "C"), share("q_same_cohort", 0, "C"), share("q_borrowing", 0)]
    pol = policy(6, shares, [cohort("C", 2)])
    jobs = """
    job_id       submit_time share         duration priority instance_count
    borrowing    0           q_borrowing   100      20       3
    same_cohort  0           q_same_cohort 100      20       3
    in           10          q             10       10       4
    """
    r = run(pol, jobs)
    # at 0: same_cohort borrows within C (level 1) before borrowing, which borrows at ROOT (level 2)
    assert r.starts()[:2] == [(0, "same_cohort"), (0, "borrowing")]
    # equal priority and start: job_id descending; the first alone leaves 3, the job needs 4
    assert r.at(10) == [
        (10, "same_cohort", "preempt", "cross_share", "in"),
        (10, "borrowing", "preempt", "cross_share", "in"),
        (10, "in", "start", None, None),
    ]


#            ROOT (1)
#         /         \
#      C (4)     q_borrowing (0)
#     /     \
#   q (0)  q_same_cohort (0)
HIERARCHY_AND_PRIORITY = [cohort("C", 4)]


def test_kueue_preempt_hierarchical_candidates_and_inside_cq(run):
    """Kueue "preempt hierarchical candidates and inside CQ": q (reclaim lower_priority) fits within C's
    quota, so q_borrowing's lower-priority job is reclaimed; its higher-priority one is not allowed; q's own
    lower-priority job makes up the rest."""
    shares = [share("q", 0, "C", reclaim="lower_priority"), share("q_same_cohort", 0, "C"),
              share("q_borrowing", 0)]  # fmt: skip
    jobs = """
    job_id                              submit_time share       duration priority instance_count
    admitted_borrowing                  0           q_borrowing 100      9        2
    admitted_same_queue_preemptible     0           q           100      9        1
    admitted_borrowing_not_preemptible  0           q_borrowing 100      11       2
    in                                  10          q           10       10       3
    """
    r = run(policy(5, shares, HIERARCHY_AND_PRIORITY), jobs)
    # at 0: q's job borrows within C (level 1), then q_borrowing's by priority (level 2)
    assert r.starts()[:3] == [
        (0, "admitted_same_queue_preemptible"),
        (0, "admitted_borrowing_not_preemptible"),
        (0, "admitted_borrowing"),
    ]
    assert r.at(10) == [
        (10, "admitted_borrowing", "preempt", "cross_share", "in"),
        (10, "admitted_same_queue_preemptible", "preempt", "in_share", "in"),
        (10, "in", "start", None, None),
    ]


def test_a_same_cohort_borrower_without_hierarchical_advantage_is_no_candidate(run):
    """Kueue "preempt hierarchical and priority candidates", without its ``borrowWithinCohort`` (not
    modelled): q's job does not fit within q's quota, so q_same_cohort's borrower (found at C) is no
    candidate; q_borrowing's allowed job alone frees 2 of the 3 needed, so nobody is preempted (Kueue, with
    borrowWithinCohort, preempts both)."""
    shares = [share("q", 0, "C", reclaim="lower_priority"), share("q_same_cohort", 0, "C"),
              share("q_borrowing", 0)]  # fmt: skip
    jobs = """
    job_id                              submit_time share         duration priority instance_count
    admitted_borrowing                  0           q_borrowing   100      9        2
    admitted_same_cohort_preemptible    0           q_same_cohort 100      9        1
    admitted_borrowing_not_preemptible  0           q_borrowing   100      11       2
    in                                  10          q             10       10       3
    """
    r = run(policy(5, shares, HIERARCHY_AND_PRIORITY), jobs)
    assert r.preempts() == []
    assert r.job("in")["first_start"] == 100


def test_kueue_reclaim_nominal_quota_from_lowest_priority_excluding_non_borrowing(run):
    """Kueue "reclaim nominal quota from lowest priority workload, excluding non-borrowing": q_nominal's job
    (lowest priority of all) is within its quota and spared; q_borrowing's lowest-priority job goes."""
    pol = policy(5, [share("q", 0, "C"), share("q_borrowing", 0), share("q_nominal", 2)], [cohort("C", 3)])
    jobs = """
    job_id                      submit_time share       duration priority instance_count
    admitted_borrowing_prio_8   0           q_borrowing 100      18       1
    admitted_borrowing_prio_9   0           q_borrowing 100      19       1
    admitted_borrowing_prio_10  0           q_borrowing 100      19       1
    admitted_nominal            0           q_nominal   100      8        2
    in                          10          q           10       10       1
    """
    r = run(pol, jobs)
    assert r.at(10) == [(10, "admitted_borrowing_prio_8", "preempt", "cross_share", "in"),
                        (10, "in", "start", None, None)]  # fmt: skip


def test_kueue_infeasible_preemption_all_available_workloads_in_pruned_subtrees(run):
    """Kueue "infeasible preemption all available workloads in pruned subtrees": q_other's low-priority jobs
    sit in C_other, which is within its quota (pruned); q_same_cohort's job is found at C, where q has no
    advantage: nobody is preempted and the job waits."""
    pol = policy(
        4,
        [share("q_other", 0, "C_other"), share("q", 0, "C"), share("q_same_cohort", 0, "C")],
        [cohort("C", 2), cohort("C_other", 2)],
    )
    jobs = """
    job_id                submit_time share         duration priority instance_count
    admitted_other_1      0           q_other       100      0        1
    admitted_other_2      0           q_other       100      0        1
    admitted_same_cohort  0           q_same_cohort 100      10       2
    in                    10          q             10       10       2
    """
    r = run(pol, jobs)
    assert len(r.starts()) == 4 and r.preempts() == []
    assert r.job("in")["first_start"] == 100


def test_kueue_respect_lending_limits(run):
    """Kueue "respect lending limits": q (3, lending limit 2) keeps 1 for itself, so q_borrowing borrows at
    most 4 and its job of 4 leaves that 1 idle; q's job of 5 fits within C once the borrower goes."""
    pol = policy(5, [share("q", 3, "C", lending_limit=2), share("q_borrowing", 0)], [cohort("C", 2)])
    jobs = """
    job_id              submit_time share       duration priority instance_count
    admitted_borrowing  0           q_borrowing 100      10       4
    in                  10          q           10       8        5
    """
    r = run(pol, jobs)
    assert r.at(10) == [
        (10, "admitted_borrowing", "preempt", "cross_share", "in"),
        (10, "in", "start", None, None),
    ]


#                               ROOT
#                            /        \
#                         c11          c12
#                      /   |   \          \
#                   c21   c22   c23        q1
#                  /   \   |     |
#               c31   c32  q3    q2
#                |     |
#                q5    q4
# every cohort 4, every share 0: the pool is 28.
COMPLEX_TREE = [
    cohort("c11", 4), cohort("c12", 4), cohort("c21", 4, "c11"), cohort("c22", 4, "c11"),
    cohort("c23", 4, "c11"), cohort("c31", 4, "c21"), cohort("c32", 4, "c21"),
]  # fmt: skip
COMPLEX_SHARES = [share("q1", 0, "c12"), share("q2", 0, "c23"), share("q3", 0, "c22"), share("q4", 0, "c32"),
                  share("q5", 0, "c31")]  # fmt: skip


def test_kueue_reclaim_in_complex_hierarchy(run):
    """Kueue "reclaim in complex hierarchy": q5's 7 fit within c21 (12 with q4's 5), so the borrowers of c22,
    c23 and c12 are candidates (q4's, below c21 without advantage, are not). Lowest priority first: q2's
    priority 0 job, after which c23 is back within its quota and q2's other job stops being a candidate;
    then q1's priority 4 job, and the 8 free hold the 7."""
    jobs = """
    job_id                submit_time share duration priority instance_count
    admitted_borrowing_1  0           q1    100      4        4
    admitted_borrowing_2  0           q1    100      5        4
    admitted_borrowing_3  0           q2    100      1        4
    admitted_borrowing_4  0           q2    100      0        4
    admitted_borrowing_5  0           q3    100      6        4
    admitted_borrowing_6  0           q3    100      7        3
    admitted_borrowing_7  0           q4    100      14       2
    admitted_borrowing_8  0           q4    100      12       3
    in                    10          q5    10       8        7
    """
    r = run(policy(28, COMPLEX_SHARES, COMPLEX_TREE), jobs)
    assert len(r.at(0)) == 8  # every one borrows at level 1 and the pool holds all 28
    assert r.at(10) == [
        (10, "admitted_borrowing_4", "preempt", "cross_share", "in"),
        (10, "admitted_borrowing_1", "preempt", "cross_share", "in"),
        (10, "in", "start", None, None),
    ]
    # at 20: _4 borrows within c11 (height 3), _1 only at the root (height 4): _4 goes first
    assert r.starts()[-2:] == [(20, "admitted_borrowing_4"), (20, "admitted_borrowing_1")]


# --- the round's order: borrowing levels --------------------------------------------------------------------


def test_round_order_puts_the_lower_borrowing_level_first(run):
    """Section 13: a job borrowing within team (height 1) goes before a higher-priority job borrowing at org
    (height 2: org -> team -> a, Kueue's getNodeHeight), and takes the last 2 instances."""
    pol = policy(4, [share("a", 0, "team"), share("b", 0, "org"), share("c", 0, "org")],
                 [cohort("org", 2), cohort("team", 2, "org")])  # fmt: skip
    jobs = """
    job_id submit_time share duration priority instance_count
    c1     0           c     100      0        2
    a1     10          a     10       0        2
    b1     10          b     10       5        2
    """
    r = run(pol, jobs)
    assert r.starts() == [(0, "c1"), (10, "a1"), (20, "b1")]
    assert r.preempts() == []


# --- fair sharing over the tree -----------------------------------------------------------------------------


def test_kueue_drs_with_a_borrowing_limit_the_round_compares_the_subtree(run):
    """Kueue fair_sharing_test.go "resource share affected by borrowing limit": cq (0) in child-cohort (0,
    borrowing limit 10) under root (50). With cq holding 9, its job of 1 gives cq 1000 (10 of the 10
    child-cohort may take) but child-cohort 200 (10 of root's 50). At root the round compares child-cohort
    (200) with s's job (41 of 50: 820), so cq's job goes first and s's no longer fits."""
    pol = policy(
        50,
        [share("cq", 0, "child-cohort", reclaim="never"), share("s", 0, "root", reclaim="never")],
        [cohort("root", 50), cohort("child-cohort", 0, "root", borrowing_limit=10)],
        fair_sharing={},
    )
    jobs = """
    job_id submit_time share duration instance_count
    c0     0           cq    100      9
    s0     0           s     100      30
    s1     10          s     10       11
    c1     10          cq    10       1
    """
    r = run(pol, jobs)
    assert r.at(10) == [(10, "c1", "start", None, None)]
    assert r.job("s1")["first_start"] == 20  # c1 ends


def test_kueue_drs_usage_above_nominal_is_the_target(run):
    """Kueue fair_sharing_test.go "usage above nominal": cq (5) holding 7 has value (7 - 5) x 1000 / 10 = 200,
    c3 holding 1 of no quota 100; lending-cq's job (within quota) takes from cq, the highest value, though
    c3's job has the lowest priority."""
    pol = policy(
        10,
        [share("cq", 5, "test-cohort"), share("lending-cq", 5, "test-cohort"), share("c3", 0, "test-cohort")],
        [cohort("test-cohort")],
        fair_sharing={},
    )
    jobs = """
    job_id submit_time share      duration priority instance_count
    a      0           cq         100      5        5
    b      0           cq         100      4        2
    x      0           c3         100      0        1
    l1     10          lending-cq 10       5        4
    """
    r = run(pol, jobs)
    assert r.at(10) == [(10, "b", "preempt", "cross_share", "l1"), (10, "l1", "start", None, None)]


def test_kueue_higher_drs_subtree_first(run):
    """Kueue fairsharing/ordering_test.go "hierarchical cohorts: higher-DRS subtree visited first": left's
    shares borrow 2 in all (value 200 of root's 10), right's 1 (100); every share alone is at 100. The target
    walk enters left, the higher subtree, though right-cq's job has the lowest priority; within left,
    the tie goes to the next candidate in section 4's order (L2, priority 4)."""
    pol = policy(
        10,
        [share("preemptor-cq", 4, "root"), share("left-cq1", 2, "left-cohort"),
         share("left-cq2", 2, "left-cohort"), share("right-cq", 2, "right-cohort")],
        [cohort("root"), cohort("left-cohort", 0, "root"), cohort("right-cohort", 0, "root")],
        fair_sharing={},
    )  # fmt: skip
    jobs = """
    job_id submit_time share        duration priority instance_count
    L1     0           left-cq1     100      5        3
    L2     0           left-cq2     100      4        3
    R1     0           right-cq     100      1        3
    P      10          preemptor-cq 10       3        4
    """
    r = run(pol, jobs)
    assert r.at(10) == [(10, "L2", "preempt", "cross_share", "P"), (10, "P", "start", None, None)]


# --- flavors and borrowing levels (flavorassigner_test.go) --------------------------------------------------

# Kueue's test tree: cohort three (4 of flavor three) > two (4 of two) > one (4 of one) > test-cq (4 of one,
# borrowing limit 0 on one); other-cq in two. test-cq holds its 4 of one with a job it may not preempt.
FLAVOR_TREE = [
    cohort("three", {"three": 4}), cohort("two", {"two": 4}, "three"), cohort("one", {"one": 4}, "two"),
]  # fmt: skip
PREEMPTION_OVER_BORROWING = {"when_can_borrow": "TryNextFlavor", "when_can_preempt": "TryNextFlavor",
                             "preference": "PreemptionOverBorrowing"}  # fmt: skip


def flavor_policy(flavor_order: list[str]) -> dict:
    test_cq = share("test-cq", {"one": 4}, "one", reclaim="lower_priority", borrowing_limit={"one": 0},
                    flavor_order=flavor_order, flavor_fungibility=PREEMPTION_OVER_BORROWING)  # fmt: skip
    return policy({"one": 8, "two": 4, "three": 4}, [test_cq, share("other-cq", {}, "two")], FLAVOR_TREE)


FLAVOR_JOBS = """
job_id submit_time share   duration priority instance_count instance_type
held   0           test-cq 100      20       4              one
in     10          test-cq 10       5        4              one|two|three
"""


def test_kueue_deeper_borrowing_flavor_that_fits_when_the_shallower_has_no_candidates(run):
    """Kueue "Select deeper-borrowing flavor that fits when shallower-borrowing flavor has no preemption
    candidates": one needs preemption and finds no candidate (no_fit); two fits borrowing from cohort two
    (level 2), three from cohort three (level 3): two, the lower level."""
    r = run(flavor_policy(["one", "two", "three"]), FLAVOR_JOBS)
    assert r.starts() == [(0, "held"), (10, "in")]
    assert r.job("in")["instance_type"] == "two"


def test_the_lower_borrowing_level_wins_over_the_flavor_order(run):
    """The same tree with three tried before two: both fit, PreemptionOverBorrowing takes the lower borrowing
    level (two, 2) over the earlier type (three, 3). Section 12's one-level levels (1 and 1) would tie and
    take three."""
    r = run(flavor_policy(["one", "three", "two"]), FLAVOR_JOBS)
    assert r.job("in")["instance_type"] == "two"


# --- the calendar and the pool with a tree (section 9) ------------------------------------------------------


def test_a_share_quota_raised_by_the_calendar_grows_its_cohort(run):
    """Section 9 with a tree: b's quota goes from 0 to 2 at t = 50 (the pool grows with it) and SQ(team)
    follows, from 1 to 3. team may not borrow (borrowing limit 0), so a's job of 3 waits for it; it is not
    unschedulable, since the calendar makes room some time."""
    pol = policy(
        3,
        [share("a", 0, "team"), share("b", 0, "team")],
        [cohort("team", 1, borrowing_limit=0)],
        changes=[{"time": 50, "capacity": {"gpu": 5}}, {"time": 50, "share": "b", "capacity": {"gpu": 2}}],
    )
    r = run(pol, "job_id submit_time share duration instance_count\n a1 0 a 10 3")
    assert r.starts() == [(50, "a1")]


def test_capacity_falling_preempts_the_borrower_of_the_tree(run):
    """Section 9 with a tree: the pool's unassigned 2 go at t = 50, SQ(ROOT) falls from 4 to 2 under U(ROOT)
    = 4 (section 3's invariant, on the tree); both shares borrow (quota 0), so the lower priority goes,
    cause capacity, and one preemption is enough."""
    pol = policy(
        4,
        [share("a", 0, "C"), share("b", 0)],
        [cohort("C", 2)],
        changes=[{"time": 50, "capacity": {"gpu": 2}}],
    )
    jobs = """
    job_id submit_time share duration priority instance_count
    a1     0           a     100      9        2
    b1     0           b     100      0        2
    """
    r = run(pol, jobs)
    assert r.at(50) == [(50, "b1", "preempt", "capacity", None)]
    assert r.job("a1")["preemptions"] == 0


def test_a_job_above_what_the_tree_could_ever_give_is_unschedulable(run):
    """Section 6 with a tree: team may borrow at most 2 from org, so a (0) can never hold more than team's
    own 2 + 2: a job of 5 is unschedulable for the quota, one of 4 runs."""
    pol = policy(10, [share("a", 0, "team")], [cohort("org", 6), cohort("team", 2, "org", borrowing_limit=2)])
    jobs = """
    job_id submit_time share duration instance_count
    big    0           a     10       5
    ok     0           a     10       4
    """
    r = run(pol, jobs)
    assert r.job("big")["state"] == "UNSCHEDULABLE"
    assert r.job("big")["reason"] == "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
    assert r.starts() == [(0, "ok")]


def test_one_cohort_holding_every_share_replays_the_aws_example_unchanged(run):
    """Section 13: without limits of its own, a cohort holding every share is the flat policy. Section 4's
    AWS example: p2 is reclaimed by QS2, then p3 preempted in-share when p1 is raised to 4."""
    shares = [
        share("QS1", 1, "all", borrow_limit_percent=200),
        share("QS2", 1, "all", strategy="LEND", in_share_preemption="never"),
        share("QS3", 1, "all", strategy="RESERVE", in_share_preemption="never"),
    ]
    jobs = """
    job_id submit_time share duration priority
    p3     0           QS1   1000     3
    p2     0           QS1   1000     2
    p1     0           QS1   1000     1
    q2     100         QS2   1000     0
    """
    r = run(policy(3, shares, [cohort("all")]), jobs, [{"time": 200, "job_id": "p1", "priority": 4}])
    assert r.preempts() == [
        (100, "p2", "preempt", "cross_share", "q2"),
        (200, "p3", "preempt", "in_share", "p1"),
    ]
    assert r.starts()[:4] == [(0, "p3"), (0, "p2"), (100, "q2"), (200, "p1")]


# --- validation: the tree names the cohort or share and its field -------------------------------------------


@pytest.mark.parametrize(
    ("shares", "cohorts", "field", "words"),
    [
        ([share("a", 1, "x")], [cohort("x", 0, "y"), cohort("y", 0, "x")], "cohorts[0].parent", "a cycle"),
        ([share("a", 1, "nowhere")], [cohort("x")], "shares[0].cohort", "no cohort 'nowhere'"),
        ([share("a", 1, "x")], [cohort("x", 0, "nowhere")], "cohorts[0].parent", "no cohort 'nowhere'"),
        ([share("a", 1, "x", lending_limit=2)], [cohort("x")], "shares[0].lending_limit.gpu",
         "2 is above its capacity 1"),
    ],
)  # fmt: skip
def test_a_bad_tree_names_the_cohort_or_share_and_the_field(shares, cohorts, field, words):
    """A cycle, an unknown parent (of a share or a cohort), a share's lending limit above its quota (Kueue's
    webhook refuses lendingLimit above nominalQuota): refused whole, naming the cohort or share's field."""
    with pytest.raises(InputError) as caught:
        Policy.from_dict(policy(10, shares, cohorts))
    assert caught.value.field == field
    assert words in str(caught.value)
