"""SEMANTICS.md section 13 in the replay engine: fit by the tree's available, the round order by
borrowing level, reclaim across subtrees (hierarchical advantage), flavors' borrowing level from the
tree, section 6's reasons and section 9's calendar with a tree. Hand-computed, one type ``gpu``
unless said; the engine only (the independent reference of section 13 is tested elsewhere)."""

from __future__ import annotations

import pytest

from scheduling.cohorts import CohortTree
from scheduling.model import Policy
from scheduling.replay.quota_tree import quota_tree


def share(name: str, quota: int, cohort: str | None = None, **options) -> dict:
    out = {"name": name, "capacity": {"gpu": quota}, "strategy": "LEND_AND_BORROW", **options}
    if cohort is not None:
        out["cohort"] = cohort
    return out


def cohort(name: str, own: int = 0, parent: str | None = None, **options) -> dict:
    out = {"name": name, "capacity": {"gpu": own}, **options}
    if parent is not None:
        out["parent"] = parent
    return out


def policy(capacity: int, cohorts: list[dict], shares: list[dict], **options) -> dict:
    return {"capacity": {"gpu": capacity}, "cohorts": cohorts, "shares": shares, **options}


# --- fit: available(s), Kueue's resource_test "lending and borrowing limits respected" -------------

# Cohort c (own 10) holds a (10), b (10, borrowing limit 2) and d (10, lending limit 5); the pool has
# 40. Usage 20 / 10 / 6 leaves available 4 / 2 / 4: SQ(c) = 10 + 10 + 10 + (10 - 5) = 35, U(c) = 20 +
# 10 + (6 - 5) = 31, so the root has 4; b may store 10 - 10 + 2 = 2 more in c; d's local quota is used.
KUEUE_LIMITS = policy(
    40,
    [cohort("c", 10)],
    [share("a", 10, "c", reclaim="never"), share("b", 10, "c", borrowing_limit={"gpu": 2}, reclaim="never"),
     share("d", 10, "c", lending_limit={"gpu": 5}, reclaim="never")],
)  # fmt: skip
KUEUE_LIMITS_JOBS = """
job_id submit_time share duration instance_count
a1     0           a     1000     20
b1     1           b     1000     10
d1     2           d     1000     6
probe  3           {share} 100    {count}
"""


@pytest.mark.parametrize(
    ("probe_share", "count", "starts_at"),
    [("a", 4, 3), ("a", 5, 1000), ("b", 2, 3), ("b", 3, 1001), ("d", 4, 3), ("d", 5, 1000)],
)
def test_fit_is_the_trees_available(engine_run, probe_share, count, starts_at):
    r = engine_run(KUEUE_LIMITS, KUEUE_LIMITS_JOBS.format(share=probe_share, count=count))
    # it starts at once when it fits; else when the job of its own share (b: whose borrowing was the
    # limit) or the first big one (a's 20 instances) ends
    assert r.job("probe")["first_start"] == starts_at


def test_engine_tree_gives_cohorts_numbers():
    # the engine's integer tree and the readable CohortTree give the same available and levels
    pol = Policy.from_dict(KUEUE_LIMITS)
    fast = quota_tree(pol, ["gpu"])
    slow = CohortTree(pol.cohort_nodes(), pol.capacity, {"gpu": 1})
    for name, used in (("a", 20), ("b", 10), ("d", 6)):
        fast.add(fast.names.index(name), 0, used)
        slow.add_usage(name, "gpu", used)
    assert [fast.available(i, 0) for i in range(3)] == [slow.available(n, "gpu") for n in "abd"] == [4, 2, 4]
    fast.remove(0, 0, 20)
    slow.remove_usage("a", "gpu", 20)
    assert fast.usage[fast.root] == slow.usage[""]["gpu"] == 11


def test_borrowing_level_is_the_height_of_the_node_not_the_distance():
    # org holds team (which holds a) and b: org's height is 2 (to a), though b is one edge below it.
    # With a using 3, b's 5 more spill 5 into org, whose SQ 0 + 6 + 4 covers 3 + 5: level 2
    pol = Policy.from_dict(policy(20, [cohort("org"), cohort("team", 2, "org")],
                                  [share("a", 4, "team"), share("b", 4, "org")]))  # fmt: skip
    slow = CohortTree(pol.cohort_nodes(), pol.capacity, {"gpu": 1})
    fast = quota_tree(pol, ["gpu"])
    slow.add_usage("a", "gpu", 3)
    fast.add(0, 0, 3)
    assert slow.borrowing_level("b", {"gpu": 5}) == fast.level(1, 0, 5, fast.usage) == 2
    assert slow.borrowing_level("a", {"gpu": 3}) == fast.level(0, 0, 3, fast.usage) == 1  # team covers 6
    assert slow.borrowing_level("b", {"gpu": 2}) == fast.level(1, 0, 2, fast.usage) == 0
    assert fast.level(1, 0, 30, fast.usage) == 3  # nothing covers it: the root's height (Kueue)


# --- the round order: borrowing levels ------------------------------------------------------------

# root (height 3) > org (own 0, height 2) > team (own 1, height 1) > a (1); b (1) in org; c (2) at the
# root. The pool has 5. c holds 2; a1 (2 instances) spills 1 to team, whose SQ 1 + 1 covers it: level
# 1; b1 (2) spills 1 to org: level 2. Only 3 are free: a1 first although b1 has the higher priority.
LEVELS = policy(
    5,
    [cohort("org"), cohort("team", 1, "org")],
    [share("a", 1, "team", reclaim="never"), share("b", 1, "org", reclaim="never"),
     share("c", 2, reclaim="never")],
)  # fmt: skip
LEVELS_JOBS = """
job_id submit_time share duration priority instance_count
c1     0           c     1000     0        2
a1     10          a     100      0        2
b1     10          b     100      5        2
"""


def test_round_order_lower_borrowing_level_first(engine_run):
    r = engine_run(LEVELS, LEVELS_JOBS)
    assert r.at(10) == [(10, "a1", "start", None, None)]
    assert r.job("b1")["first_start"] == 110  # once a1 ends


def test_round_order_level_then_priority_under_strict_fifo(engine_run):
    r = engine_run({**LEVELS, "queueing": "strict_fifo"}, LEVELS_JOBS)
    assert r.at(10) == [(10, "a1", "start", None, None)]


def test_without_the_tree_priority_decides(engine_run):
    # the same shares without cohorts: both borrow (level 1), so b1's priority puts it first
    flat = {"capacity": {"gpu": 5}, "shares": [share("a", 2, reclaim="never"), share("b", 1, reclaim="never"),
                                               share("c", 2, reclaim="never")]}  # fmt: skip
    r = engine_run(flat, LEVELS_JOBS.replace("a1     10          a     100      0        2",
                                             "a1     10          a     100      0        3"))  # fmt: skip
    assert r.at(10) == [(10, "b1", "start", None, None)]


# --- reclaim across subtrees: hierarchical advantage ---------------------------------------------------

# X (own 3) holds p (0); Y (own 0) holds q1 (1) and q2 (1); z (1) at the root; the pool has 6. q1 runs
# three jobs (Y borrows 1 at the root), z two (borrows 1). p1 (3 instances, beyond p's quota 0) fits in
# X's subtree quota 3: at the root it has hierarchical advantage over the borrowing subtrees.
ADVANTAGE = policy(
    6,
    [cohort("Y"), cohort("X", 3)],
    [share("q1", 1, "Y"), share("q2", 1, "Y"), share("z", 1), share("p", 0, "X", reclaim="{reclaim}")],
)
ADVANTAGE_JOBS = """
job_id submit_time share duration priority instance_count
q1a    0           q1    1000     0        1
q1b    1           q1    1000     0        1
q1c    2           q1    1000     0        1
z1     3           z     1000     5        1
z2     4           z     1000     5        1
p1     10          p     100      {priority} {count}
"""


def advantage_case(engine_run, reclaim="any", priority=0, count=3):
    pol = {**ADVANTAGE, "shares": [{**s, "reclaim": reclaim} if s["name"] == "p" else s
                                   for s in ADVANTAGE["shares"]]}  # fmt: skip
    return engine_run(pol, ADVANTAGE_JOBS.format(priority=priority, count=count))


def test_hierarchical_advantage_reclaims_any_priority(engine_run):
    r = advantage_case(engine_run, priority=0)
    # victim order: q1's latest (priority 0) first; then Y is back within its quota (U 2 = SQ 2), so
    # q1's other jobs stop being candidates although q1 still borrows (2 > 1): z's latest goes next,
    # priority 5 above p1's 0 (a reclaim takes any priority that ``any`` allows)
    assert r.at(10) == [
        (10, "q1c", "preempt", "cross_share", "p1"),
        (10, "z2", "preempt", "cross_share", "p1"),
        (10, "p1", "start", None, None),
    ]


def test_hierarchical_reclaim_lower_priority_spares_higher(engine_run):
    # lower_priority: only q1's jobs (0 < 3) are candidates; once Y is within quota none is left
    r = advantage_case(engine_run, reclaim="lower_priority", priority=3)
    assert r.preempts() == []
    # at 1000 q1a ends: the root holds Y's 2 and z's 2 of 6, 2 free; at 1001 q1b ends: 3 free
    assert r.job("p1")["first_start"] == 1001


def test_no_advantage_no_reclaim(engine_run):
    # 4 instances do not fit in X's subtree quota 3 (nor in the root's): p borrows, no advantage anywhere
    r = advantage_case(engine_run, count=4)
    assert r.preempts() == []
    assert r.job("p1")["first_start"] == 1002  # free: 2 at 1000, 3 at 1001, 4 at 1002


def test_shares_within_quota_are_spared(engine_run):
    # q2 runs within its quota: never a candidate, though Y borrows through q1
    pol = {**ADVANTAGE, "shares": [{**s, "reclaim": "any"} for s in ADVANTAGE["shares"]]}
    jobs = ADVANTAGE_JOBS.format(priority=0, count=2).replace(
        "q1c    2           q1    1000     0        1", "q2a    2           q2    1000     0        1"
    )
    r = engine_run(pol, jobs + "z3     5           z     1000     5        1\n")
    # q1 2 (> 1) and Y 3 (> 2) borrow; z 3 borrows; free 0; p1 needs 2: q1b (priority 0) then z3
    assert [e[1] for e in r.preempts()] == ["q1b", "z3"]


def test_in_share_first_walk_spares_unneeded(engine_run):
    # p in-share preemption as in section 4 stands with cohorts: p1 (priority 5) preempts p0 (priority
    # 1) in its own share when no other subtree borrows
    pol = policy(3, [cohort("X", 3)], [share("p", 0, "X", in_share_preemption="lower_priority")])
    r = engine_run(
        pol,
        """
job_id submit_time share duration priority instance_count
p0     0           p     1000     1        3
p1     10          p     100      5        2
""",
    )
    assert r.preempts() == [(10, "p0", "preempt", "in_share", "p1")]


# --- section 12: a type's borrowing level comes from the tree -----------------------------------------


def test_flavor_scan_prefers_the_lower_borrowing_level(engine_run):
    # s (0 of both) is in team, which holds 1 of gpu-b only: on gpu-b s borrows from team (level 1),
    # on gpu-a from the root (level 2). TryNextFlavor on borrowing scans both; both fit, gpu-b's level
    # is lower. (Without the tree both would be level 1 and the earlier type, gpu-a, would win.)
    pol = {
        "instance_types": {"gpu-a": {"gpus": 1}, "gpu-b": {"gpus": 1}},
        "capacity": {"gpu-a": 2, "gpu-b": 2},
        "cohorts": [{"name": "team", "capacity": {"gpu-b": 1}}],
        "shares": [{"name": "s", "capacity": {}, "strategy": "LEND_AND_BORROW", "cohort": "team",
                    "flavor_fungibility": {"when_can_borrow": "TryNextFlavor"}}],
    }  # fmt: skip
    r = engine_run(pol, "job_id submit_time share duration instance_type\n j 0 s 10 gpu-a|gpu-b")
    assert r.job("j")["instance_type"] == "gpu-b"


# --- section 6: unschedulable, with the tree's limits ---------------------------------------------------


@pytest.mark.parametrize(
    ("count", "reason"),
    [(4, None), (5, "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"), (11, "SERVICE_ENVIRONMENT_MAX_RESOURCE")],
)
def test_unschedulable_beyond_the_trees_potential(engine_run, count, reason):
    # c (own 0, borrowing limit 2) holds s (2): s can never hold more than SQ(c) 2 + 2 = 4 of the 10
    pol = policy(10, [cohort("c", borrowing_limit={"gpu": 2})], [share("s", 2, "c")])
    r = engine_run(
        pol,
        f"""
job_id submit_time share duration instance_count
j      0           s     10       {count}
""",
    )
    assert r.job("j")["reason"] == reason
    assert r.job("j")["state"] == ("SUCCEEDED" if reason is None else "UNSCHEDULABLE")


# --- section 9: the tree's quotas follow the calendar -----------------------------------------------------


def test_raised_reserve_quota_breaks_the_trees_invariant(engine_run):
    # pool 4: r RESERVE 1, b 1 in team; b runs three jobs (2 borrowed from the unassigned 2). At 100 r's
    # quota is 3: the root's SQ falls to 4 - 3 = 1 while b stores 3 there: b's two latest jobs go
    pol = policy(4, [cohort("team")], [share("r", 1, strategy="RESERVE"), share("b", 1, "team")])
    pol["changes"] = [{"time": 100, "share": "r", "capacity": {"gpu": 3}}]
    r = engine_run(
        pol,
        """
job_id submit_time share duration
b1     0           b     1000
b2     1           b     1000
b3     2           b     1000
r1     150         r     10
r2     150         r     10
r3     150         r     10
""",
    )
    assert r.preempts() == [
        (100, "b3", "preempt", "capacity", None),
        (100, "b2", "preempt", "capacity", None),
    ]
    assert r.job("r3")["first_start"] == 150  # r's own quota, all of it
    assert r.job("b2")["first_start"] == 1  # and ran again only once r's jobs ended: b's first start


def test_job_that_fits_only_under_a_later_tree_waits(engine_run):
    # s in c (borrowing limit 0): 3 instances exceed its quota 2 until it is raised at 500
    pol = policy(6, [cohort("c", borrowing_limit={"gpu": 0})], [share("s", 2, "c")])
    pol["changes"] = [{"time": 500, "share": "s", "capacity": {"gpu": 3}}]
    r = engine_run(
        pol,
        """
job_id submit_time share duration instance_count
j      0           s     10       3
""",
    )
    assert r.job("j")["first_start"] == 500


# --- fair sharing over the tree (section 8 with 13) -------------------------------------------------------

# Cohort x holds p (1) and q (5), cohort y holds t (6); the pool has 12. t runs t1 (6) and t2 (3, lowest
# priority): y stores 9 of its 6, value 3 / 12 (root's potential 12); p's job of 4 would make p borrow 3
# (3 / 12) but x stays within its 6 (value 0). The target walk enters y (x has no candidate), and
# LessThanOrEqualToFinalShare compares the lowest common ancestor's children, x (0) with y without t2 (0):
# it passes. Between the shares (section 8 on one level) p's 3 / 12 against t's 0 would fail.
FAIR_TREE = policy(
    12,
    [cohort("x"), cohort("y")],
    [share("p", 1, "x"), share("q", 5, "x"), share("t", 6, "y")],
    fair_sharing={"preemption_strategies": ["LessThanOrEqualToFinalShare"]},
)
FAIR_TREE_JOBS = """
job_id submit_time share duration priority instance_count
t1     0           t     100      5        6
t2     0           t     100      0        3
p1     10          p     10       1        4
"""


def test_fair_strategy_compares_the_children_of_the_common_ancestor(engine_run):
    r = engine_run(FAIR_TREE, FAIR_TREE_JOBS)
    assert r.at(10) == [(10, "t2", "preempt", "fair_sharing", "p1"), (10, "p1", "start", None, None)]


def test_fair_sharing_without_the_tree_keeps_section_8(engine_run):
    # The same shares at the root: p's value with its job (3 borrowed) is above t's without t2 (0).
    flat = {**FAIR_TREE, "cohorts": [], "shares": [share("p", 1), share("q", 5), share("t", 6)]}
    r = engine_run(flat, FAIR_TREE_JOBS)
    assert r.at(10) == [] and r.job("p1")["first_start"] == 100


def test_fair_round_compares_subtrees_by_the_value_the_job_would_give_them(engine_run):
    # Cohort x holds a (6), y holds b (6); the root keeps 3 of the pool's 15. At 10 the pool has 1 free
    # and y already borrows 2. a1 would take x to 1 over its 6 (value 1 / 15, root's potential), b1 y
    # to 3 over (3 / 15): a1 goes first despite its lower priority, and b1 no longer fits.
    pol = policy(
        15,
        [cohort("x"), cohort("y")],
        [share("a", 6, "x"), share("b", 6, "y")],
        fair_sharing={},
    )
    r = engine_run(
        pol,
        """
job_id submit_time share duration priority instance_count
a0     0           a     100      0        6
b0     0           b     100      0        6
b2     0           b     100      0        2
a1     10          a     10       0        1
b1     10          b     10       9        1
""",
    )
    assert r.at(10) == [(10, "a1", "start", None, None)]


@pytest.mark.parametrize("memo", ["on", "off"])
def test_a_release_lowering_a_cohort_on_the_jobs_path_ends_its_no_passing_room_refusal(
    engine_run, monkeypatch, memo
):
    # Section 8 over 13, and the refusal memo (scheduling.replay.refusals). Pool 12: cohort training
    # holds research (4) and prod (4), nlp (4) is at the root; no lending limits, so every share's
    # usage is stored in its parent, and every lendable is the root's 12. At 0 research runs r1 (2,
    # high priority: no candidate), prod p_big (2) and p1 (2), nlp n1..n5 (1 each: 1 borrowed, value
    # 1/12); 1 free. At 10 j (research, 4): reclaiming nlp's jobs (prod does not borrow) would make
    # room, but with j admitted training holds 2 + 4 + 4 = 10, 2 over its 8: 2/12 > nlp's 1/12, so no
    # candidate of nlp can pass either strategy; 1 free: refused before the search (NO_ROOM_PASSING, 3
    # short). At 100 p_big ends: 2 released, fewer than the 3 it lacked, but training now holds 6, 8
    # with j: 0 <= nlp's 1/12 without one job (0). j takes 3 free and nlp's newest job (section 4's
    # victim order), cause fair_sharing. The memo may not keep the refusal: the release lowered a
    # cohort on j's path, the side of the common ancestor with nlp that the strategies compare.
    monkeypatch.setenv("SCHEDULING_REFUSAL_MEMO", memo)
    pol = policy(
        12,
        [cohort("training")],
        [share("research", 4, "training", reclaim="any"), share("prod", 4, "training", reclaim="never"),
         share("nlp", 4, reclaim="never")],
        fair_sharing={},
    )  # fmt: skip
    r = engine_run(
        pol,
        """
job_id submit_time share    duration priority instance_count
r1     0           research 1000     9        2
p_big  0           prod     100      0        2
p1     0           prod     1000     0        2
n1     0           nlp      1000     0        1
n2     0           nlp      1000     0        1
n3     0           nlp      1000     0        1
n4     0           nlp      1000     0        1
n5     0           nlp      1000     0        1
j      10          research 10       0        4
""",
    )
    assert r.at(10) == []
    assert r.at(100) == [
        (100, "p_big", "finish", None, None),
        (100, "n5", "preempt", "fair_sharing", "j"),
        (100, "j", "start", None, None),
    ]


@pytest.mark.parametrize("memo", ["on", "off"])
def test_a_start_raising_a_cohorts_value_ends_a_no_passing_room_refusal(engine_run, monkeypatch, memo):
    # Section 8 over 13, and the refusal memo. Pool 12: cohort training (fair weight 0.25) holds
    # research (4) and prod (4), nlp (4) is at the root; every usage is stored in the parent, every
    # lendable is 12. At 0 research runs r1 (1), prod p_big (3, priority 0) and p1..p4 (1 each, priority
    # 1): prod 3 over its 4, training 8, at its 8 (value 0); nlp n1..n3; 1 free. At 10 j (nlp, 3): with j
    # nlp is 2 over (2/12), above training's 0, so no candidate of prod can pass: refused before the
    # search (NO_ROOM_PASSING). At 20 r2 (research, 1) and j: the round tries j first (2/12 below
    # training's 9 - 8 = 1 over, 1 / 12 / 0.25 = 4/12, with r2), refused as the tree is; r2 starts (within
    # research's quota, stored in training: 4/12). The next round tries j again: 2/12 < 4/12 now, so
    # LessThanInitialShare takes p_big (first in section 4's victim order: lowest priority), which
    # leaves training at 0 but frees 3: j starts. The memo may not keep the refusal: the start raised
    # training's value, the target side that j's strategies compare.
    monkeypatch.setenv("SCHEDULING_REFUSAL_MEMO", memo)
    pol = policy(
        12,
        [cohort("training", fair_weight=0.25)],
        [share("research", 4, "training", reclaim="never"), share("prod", 4, "training", reclaim="never"),
         share("nlp", 4, reclaim="any")],
        fair_sharing={},
    )  # fmt: skip
    r = engine_run(
        pol,
        """
job_id submit_time share    duration priority instance_count
r1     0           research 1000     0        1
p_big  0           prod     1000     0        3
p1     0           prod     1000     1        1
p2     0           prod     1000     1        1
p3     0           prod     1000     1        1
p4     0           prod     1000     1        1
n1     0           nlp      1000     0        1
n2     0           nlp      1000     0        1
n3     0           nlp      1000     0        1
j      10          nlp      10       0        3
r2     20          research 1000     0        1
""",
    )
    assert r.at(10) == []
    assert r.at(20) == [
        (20, "r2", "start", None, None),
        (20, "p_big", "preempt", "fair_sharing", "j"),
        (20, "j", "start", None, None),
    ]


# --- one level: the tree gives section 4's outcomes -----------------------------------------------------


def test_aws_example_in_one_cohort_replays_as_without(engine_run):
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "samples"
    flat = json.loads((root / "policies" / "aws-example.json").read_text())
    trace = json.loads((root / "traces" / "aws-example.json").read_text())
    wrapped = {**flat, "cohorts": [{"name": "all", "capacity": {}}],
               "shares": [{**s, "cohort": "all"} for s in flat["shares"]]}  # fmt: skip
    jobs, updates = trace["jobs"], trace["priority_updates"]
    assert engine_run(wrapped, jobs, updates).events == engine_run(flat, jobs, updates).events


@pytest.mark.parametrize("fair", [False, True])
@pytest.mark.parametrize("queueing", ["best_effort_fifo", "strict_fifo"])
def test_shares_at_the_root_of_a_tree_replay_as_without_cohorts(queueing, fair):
    # an empty cohort beside the shares makes the policy a tree, the shares still children of the root:
    # section 13 reduces to sections 3-4 (and 8, with fair sharing: the root's potential is section 8's
    # L), event for event (a lending limit and a lower_priority reclaim too), on a synthetic trace of the
    # demo pool
    from scheduling.replay.engine import replay
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    trace = generate(1500, seed=1)
    flat = demo_policy_dict(demo_pool_gpus(trace))
    flat["queueing"] = queueing
    if fair:
        flat["fair_sharing"] = {}
        flat["shares"][1]["fair_weight"] = 2
    flat["shares"][2]["lending_limit"] = {"gpu": flat["shares"][2]["capacity"]["gpu"] // 2}
    flat["shares"][0]["reclaim"] = "lower_priority"
    tree = {**flat, "cohorts": [{"name": "empty", "capacity": {}}]}
    events = [replay(Policy.from_dict(p), trace, record_events=True).events for p in (flat, tree)]
    assert len(events[0]) > 3000
    assert events[0] == events[1]


# --- why a job waits, with a tree ------------------------------------------------------------------


def waited(r, share_name: str) -> dict:
    reasons = next(s for s in r.raw["shares"] if s["name"] == share_name)["waited_by_reason_seconds"]
    return {reason: seconds for reason, seconds in reasons.items() if seconds}


def test_held_back_by_a_cohorts_borrowing_limit_waits_for_nothing_lendable(engine_run):
    # c (own 0, borrowing limit 0) holds s (1): the pool's 3 free instances are out of s's reach, and
    # neither s's own limits nor the pool are what stops a2: section 4's last reason
    pol = policy(4, [cohort("c", borrowing_limit={"gpu": 0})], [share("s", 1, "c")])
    r = engine_run(
        pol,
        """
job_id submit_time share duration
a1     0           s     100
a2     0           s     100
""",
    )
    assert r.job("a2")["first_start"] == 100
    assert waited(r, "s") == {"nothing_lendable": 100}


# --- the engine's integer tree against the readable one, on random trees --------------------------


def random_tree(rng) -> tuple[list[dict], list[dict], int]:
    """Cohorts (up to four, nested up to four deep) with own quotas and limits, shares in them, and a
    pool that holds their quotas and a little more."""
    cohorts = []
    for i in range(rng.randint(0, 4)):
        parent = rng.choice([None, *[c["name"] for c in cohorts]])
        c = cohort(f"c{i}", rng.randint(0, 3), parent)
        if rng.random() < 0.4:
            c["borrowing_limit"] = {"gpu": rng.randint(0, 4)}
        if rng.random() < 0.4:
            c["lending_limit"] = {"gpu": rng.randint(0, 4)}
        cohorts.append(c)
    shares = []
    for i in range(rng.randint(1, 5)):
        quota = rng.randint(0, 4)
        options = {}
        if rng.random() < 0.3:
            options["borrowing_limit"] = {"gpu": rng.randint(0, 3)}
        if rng.random() < 0.3:
            options["lending_limit"] = {"gpu": rng.randint(0, quota)}
        shares.append(share(f"s{i}", quota, rng.choice([None, *[c["name"] for c in cohorts]]), **options))
    claimed = sum(c["capacity"]["gpu"] for c in cohorts) + sum(s["capacity"]["gpu"] for s in shares)
    return cohorts, shares, claimed + rng.randint(0, 5)


@pytest.mark.parametrize("seed", range(40))
def test_quota_tree_matches_cohort_tree_on_random_trees(seed):
    # random trees, random starts and stops: the two implementations agree on usage, available,
    # potential available and borrowing level throughout
    import random

    rng = random.Random(seed)
    cohorts, shares, capacity = random_tree(rng)
    pol = Policy.from_dict(policy(capacity, cohorts, shares))
    slow = CohortTree(pol.cohort_nodes(), pol.capacity, {"gpu": 1})
    fast = quota_tree(pol, ["gpu"])
    held = [0] * len(shares)
    for _ in range(60):
        s = rng.randrange(len(shares))
        name = shares[s]["name"]
        if held[s] and rng.random() < 0.4:
            count = rng.randint(1, held[s])
            held[s] -= count
            slow.remove_usage(name, "gpu", count)
            fast.remove(s, 0, count)
        else:
            count = rng.randint(1, 3)
            held[s] += count
            slow.add_usage(name, "gpu", count)
            fast.add(s, 0, count)
        for i, node in enumerate(fast.names):
            assert fast.usage[i] == slow.usage[node]["gpu"]
        for i, sh in enumerate(shares):
            assert fast.available(i, 0) == slow.available(sh["name"], "gpu")
            assert fast.potential(i, 0) == slow.potential_available(sh["name"], "gpu")
            level = slow.borrowing_level(sh["name"], {"gpu": 2})
            assert fast.level(i, 0, 2, fast.usage) == (fast.height[fast.root] if level is None else level)
        # available_with (the victim search's fit, nothing written) against the readable tree with the
        # change made and undone, for every share and every change from giving all back to 3 more
        for i, sh in enumerate(shares):
            for delta in range(-held[i], 4):
                usage = list(fast.usage)
                if delta > 0:
                    slow.add_usage(sh["name"], "gpu", delta)
                elif delta < 0:
                    slow.remove_usage(sh["name"], "gpu", -delta)
                expected = slow.available(sh["name"], "gpu")
                if delta > 0:
                    slow.remove_usage(sh["name"], "gpu", delta)
                elif delta < 0:
                    slow.add_usage(sh["name"], "gpu", -delta)
                assert fast.available_with(i, 0, delta) == expected
                assert list(fast.usage) == usage
        # shift_usage (a refusal's question: several shares' usage taken out, the job put in, nothing
        # written) against the readable tree with those changes made and undone
        outs = [rng.randint(0, h) for h in held]
        j = rng.randrange(len(shares))
        count = rng.randint(1, 3)
        changes = [(sh["name"], -out) for sh, out in zip(shares, outs, strict=True) if out]
        changes.append((shares[j]["name"], count))
        usage, changed_at = list(fast.usage), list(fast.changed_at)
        fast.clear_shift()
        for i, out in enumerate(outs):
            if out:
                fast.shift_usage(i, 0, -out)
        fast.shift_usage(j, 0, count)
        for name, delta in changes:
            (slow.add_usage if delta > 0 else slow.remove_usage)(name, "gpu", abs(delta))
        for i, node in enumerate(fast.names):
            assert fast.usage[i] + fast.shift[i] == slow.usage[node]["gpu"]
        for i, sh in enumerate(shares):
            assert fast.shifted_available(i, 0) == slow.available(sh["name"], "gpu")
        for name, delta in reversed(changes):
            (slow.remove_usage if delta > 0 else slow.add_usage)(name, "gpu", abs(delta))
        fast.shift_usage(j, 0, -count)  # one shift undoes another
        for i, out in enumerate(outs):
            if out:
                fast.shift_usage(i, 0, out)
        assert list(fast.shift) == [0] * fast.n_nodes
        assert (list(fast.usage), list(fast.changed_at)) == (usage, changed_at)


@pytest.mark.parametrize("seed", range(40))
def test_tree_values_match_the_readable_tree_on_random_trees(seed):
    # Section 8 over 13: the compiled round's and search's node values (TreeValues: value, value_with,
    # path_values_with; their climbs written out for speed) against CohortTree.value with the job's
    # usage added to its share and taken back, on random trees with random fair weights (0: infinite)
    # and random usage: the same exact fraction (the engine leaves out the common factor 1000).
    import random
    from fractions import Fraction

    from scheduling.replay.fair_tree import TreeValues
    from scheduling.replay.rules import value_equal
    from scheduling.replay.state import KeptValue

    rng = random.Random(seed)
    cohorts, shares, capacity = random_tree(rng)
    for node in cohorts + shares:
        node["fair_weight"] = rng.choice([0, 0.5, 1, 1, 2, 1.5])
    pol = Policy.from_dict(policy(capacity, cohorts, shares))
    slow = CohortTree(pol.cohort_nodes(), pol.capacity, {"gpu": 1})
    fast = quota_tree(pol, ["gpu"])
    weights = {node["name"]: node["fair_weight"] for node in cohorts + shares}
    values = TreeValues(fast, [weights.get(name, 1.0) for name in fast.names], [1])

    def readable(name: str, share: str, count: int) -> tuple[bool, Fraction]:
        slow.add_usage(share, "gpu", count)
        value = slow.value(name)
        slow.remove_usage(share, "gpu", count)
        return value

    def exact(value: tuple[bool, int, int]) -> tuple[bool, Fraction]:
        return value[0], Fraction(1000 * value[1], value[2])

    for _ in range(25):
        s = rng.randrange(len(shares))
        count = rng.randint(1, 3)
        slow.add_usage(shares[s]["name"], "gpu", count)
        fast.add(s, 0, count)
        for i, sh in enumerate(shares):
            path = fast.paths[i]
            for count in range(4):
                out = [KeptValue() for _ in range(len(path) - 2)]
                values.path_values_with(i, 0, count, out, True)
                for place, node in enumerate(path[:-1]):  # (the root has no value)
                    expected = readable(fast.names[node], sh["name"], count)
                    assert exact(values.value_with(node, i, 0, count)) == expected
                    if count == 0:
                        assert exact(values.value(node)) == expected
                    if place > 0:
                        assert value_equal(out[place - 1].v, values.value_with(node, i, 0, count))


@pytest.mark.parametrize("seed", range(60))
def test_reopening_shortcuts_change_no_outcome(seed, monkeypatch):
    # The engine keeps refused queue groups closed until a release or a start could help them
    # (Refusals._tree_released, Refusals._tree_started). Reopening every group at every release and
    # start instead must give the same replay, event for event, on random trees and traces (pure Python
    # only: the compiled engine's methods cannot be replaced).
    import random

    from scheduling.replay import engine_kind, refusals

    if engine_kind() != "python":
        pytest.skip("the compiled engine is in use")
    rng = random.Random(seed)
    cohorts, shares, capacity = random_tree(rng)
    for s in shares:
        s["in_share_preemption"] = rng.choice(["never", "lower_priority", "lower_or_newer_equal_priority"])
        s["reclaim"] = rng.choice(["any", "lower_priority", "never"])
    pol = policy(capacity, cohorts, shares, queueing=rng.choice(["best_effort_fifo", "strict_fifo"]))
    jobs = [
        {"job_id": f"j{i:03d}", "submit_time": rng.randint(0, 300), "share": rng.choice(shares)["name"],
         "duration": rng.randint(5, 200), "priority": rng.randint(0, 3), "instance_count": rng.randint(1, 3)}
        for i in range(80)
    ]  # fmt: skip
    shortcut = engine_run_events(pol, jobs)

    def reopen_all(self, pool, *_):
        for account in pool.accounts:
            for g in account.groups:
                if g.jobs:
                    self.reopen(g)
        for share_state in self.shares:
            share_state.refused = False

    monkeypatch.setattr(refusals.Refusals, "_tree_released", reopen_all)
    monkeypatch.setattr(refusals.Refusals, "_tree_started", lambda self, a: reopen_all(self, a.pool))
    assert engine_run_events(pol, jobs) == shortcut


def engine_run_events(pol: dict, jobs: list[dict]) -> list:
    from conftest import make_trace

    from scheduling.replay.engine import replay

    return replay(Policy.from_dict(pol), make_trace(jobs), record_events=True).events
