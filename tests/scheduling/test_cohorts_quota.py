"""Section 13's quota arithmetic (scheduling/cohorts.py), each case computed by hand.

Kueue's own cases are restated from `pkg/cache/scheduler/resource_test.go` and
`fair_sharing_test.go` (our numbers, our words); the one-level cases check that the tree gives
section 3's numbers, as section 13 says it must.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scheduling.cohorts import ROOT, CohortTree, Node, tree_errors
from scheduling.replay.rules import headroom, lendable

G = "gpu"


def share(name, parent, quota, borrowing=None, lending=None, weight=1.0):
    return Node(name, parent, True, {G: quota}, {} if borrowing is None else {G: borrowing},
                {} if lending is None else {G: lending}, weight)  # fmt: skip


def cohort(name, parent, quota=0, borrowing=None, lending=None, weight=1.0):
    return Node(name, parent, False, {G: quota}, {} if borrowing is None else {G: borrowing},
                {} if lending is None else {G: lending}, weight)  # fmt: skip


def tree(nodes, capacity, usage=None):
    t = CohortTree(nodes, {G: capacity}, {G: 1})
    for name, count in (usage or {}).items():
        t.add_usage(name, G, count)
    return t


def test_kueue_lending_and_borrowing_limits_respected():
    # resource_test.go: a cohort of 10 with shares of 10, 10 (borrowing limit 2) and 10 (lending
    # limit 5); usage 20, 10, 6. SQ(cohort) = 10 + 10 + 10 + (10 - 5) = 35; U(cohort) = 20 + 10 +
    # max(0, 6 - 5) = 31, so 4 are left: cq1 4; cq2 min(4, 10 - 10 + 2) = 2; cq3 max(0, 5 - 6) + 4.
    nodes = [cohort("cohort", ROOT, 10), share("cq1", "cohort", 10), share("cq2", "cohort", 10, borrowing=2),
             share("cq3", "cohort", 10, lending=5)]  # fmt: skip
    t = tree(nodes, 40, {"cq1": 20, "cq2": 10, "cq3": 6})
    assert t.sq["cohort"][G] == 35
    assert t.usage["cohort"][G] == 31
    assert [t.available(n, G) for n in ("cq1", "cq2", "cq3")] == [4, 2, 4]
    # With nothing used: cq1 reaches 35 (40 less cq3's kept 5), cq2 12, cq3 40 (Kueue's comment).
    empty = tree(nodes, 40)
    assert [empty.potential_available(n, G) for n in ("cq1", "cq2", "cq3")] == [35, 12, 40]


def test_three_levels_usage_bubbles_past_local_quota_and_back():
    # pool 40 (10 unassigned): org (own 0, lending limit 4) > team (own 2) > share a (6, lending limit 1);
    # share b (10) under org; share c (12) at the root.
    # LQ(a) = 6 - 1 = 5; SQ(team) = 2 + (6 - 5) = 3; SQ(org) = 0 + 3 + 10 = 13, LQ(org) = 13 - 4 = 9.
    nodes = [cohort("org", ROOT, lending=4), cohort("team", "org", 2), share("a", "team", 6, lending=1),
             share("b", "org", 10), share("c", ROOT, 12)]  # fmt: skip
    t = tree(nodes, 40)
    assert (t.lq["a"][G], t.sq["team"][G], t.sq["org"][G], t.lq["org"][G]) == (5, 3, 13, 9)
    assert t.sq[ROOT][G] == 10 + (13 - 9) + 12  # unassigned 10, org lends 4, c lends all 12
    t.add_usage("a", G, 7)  # 5 stay in a's local quota, 2 go up to team, then to org
    assert (t.usage["a"][G], t.usage["team"][G], t.usage["org"][G], t.usage[ROOT][G]) == (7, 2, 2, 0)
    t.add_usage("b", G, 8)  # org: 10 used of its local 9: 1 reaches the root
    assert (t.usage["org"][G], t.usage[ROOT][G]) == (10, 1)
    # a: its local quota is used up; team has 3 - 2 = 1 of its own... available(a) = 0 + available(team)
    # = max(0, 0 - 2) + available(org) = max(0, 9 - 10) + (SQ(root) - U(root)) = 26 - 1 = 25.
    assert t.available("a", G) == 25
    t.remove_usage("b", G, 8)
    t.remove_usage("a", G, 7)
    assert all(t.usage[n][G] == 0 for n in t.nodes)


def test_borrowing_level_is_the_height_that_covers_the_request():
    nodes = [cohort("org", ROOT), cohort("team", "org", 2), share("a", "team", 4), share("b", "org", 4)]
    t = tree(nodes, 20, {"a": 3})
    assert t.borrowing_level("a", {G: 1}) == 0  # 3 + 1 <= 4
    assert t.borrowing_level("a", {G: 3}) == 1  # 2 spill to team, whose SQ 2 + 4 = 6 covers 3 + 3
    assert t.borrowing_level("a", {G: 6}) == 2  # team's 6 does not cover 9; org's 10 covers 5 + 0
    assert t.borrowing_level("a", {G: 12}) == 3  # only the root (20) does
    assert t.borrowing_level("a", {G: 21}) is None


def test_kueue_drs_usage_above_nominal():
    # fair_sharing_test.go "usage above nominal": cq 5 and lending-cq 5 GPUs; cq uses 7:
    # (7 - 5) x 1000 / 10 = 200; with a request of 4 more on top of 2 used: (2 + 4 - 5) x 1000 / 10.
    nodes = [
        cohort("test-cohort", ROOT),
        share("cq", "test-cohort", 5),
        share("lending-cq", "test-cohort", 5),
    ]
    assert tree(nodes, 10, {"cq": 7}).value("cq") == (False, Fraction(200))
    assert tree(nodes, 10, {"cq": 2}).value("cq", {G: 4}) == (False, Fraction(100))
    assert tree(nodes, 10, {"cq": 7}).value("lending-cq") == (False, Fraction(0))
    weighted = [cohort("test-cohort", ROOT), share("cq", "test-cohort", 5, weight=0.5),
                share("lending-cq", "test-cohort", 5)]  # fmt: skip
    assert tree(weighted, 10, {"cq": 7}).value("cq") == (False, Fraction(400))
    zero = [cohort("test-cohort", ROOT), share("cq", "test-cohort", 5, weight=0),
            share("lending-cq", "test-cohort", 10)]  # fmt: skip
    assert tree(zero, 15, {"cq": 7}).value("cq") == (True, Fraction(2000, 15))  # +inf, by 1000 B / L


def test_kueue_drs_cohort_has_a_share_and_a_borrowing_limit():
    # "cohort has resource share": cq (5) in child-cohort (weight 2) under root (45); cq uses 10.
    nodes = [cohort("root", ROOT, 45), cohort("child-cohort", "root", weight=2),
             share("cq", "child-cohort", 5)]  # fmt: skip
    t = tree(nodes, 50, {"cq": 10})
    assert t.value("cq") == (False, Fraction(100))  # (10 - 5) / 50 x 1000
    assert t.value("child-cohort") == (False, Fraction(50))  # (10 - 5) / 50 x 1000 / 2
    assert t.value("root") == (False, Fraction(0))
    # "resource share affected by borrowing limit": cq (0) in child-cohort (0, borrowing limit 10)
    # under root (50): from cq's view its parent can give 10, from child-cohort's the root gives 50.
    limited = [cohort("root", ROOT, 50), cohort("child-cohort", "root", 0, borrowing=10),
               share("cq", "child-cohort", 0)]  # fmt: skip
    t = tree(limited, 50, {"cq": 10})
    assert t.value("cq") == (False, Fraction(1000))
    assert t.value("child-cohort") == (False, Fraction(200))


def test_values_compare_exactly():
    # 1000 x 1 / 18 / 1 equals 1000 x 3 / 18 / 3 (section 8): as fractions they are one number.
    a = [cohort("c", ROOT), share("x", "c", 0), share("y", "c", 18)]
    b = [cohort("c", ROOT), share("x", "c", 0, weight=3), share("y", "c", 18)]
    assert tree(a, 18, {"x": 1}).value("x") == tree(b, 18, {"x": 3}).value("x")


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([share("a", "nowhere", 1)], "share a: cohort: no cohort 'nowhere'"),
        ([cohort("x", "y"), cohort("y", "x"), share("a", "x", 1)], "cohort x: parent: a cycle (x -> y -> x)"),
        ([share("a", ROOT, 4, lending=5)], "share a: lending_limit.gpu: 5 is above its capacity 4"),
        ([share("a", ROOT, 1), share("b", "a", 1)], "share b: cohort: 'a' is a share, not a cohort"),
        (
            [share("a", ROOT, 6), cohort("c", ROOT, 5)],
            "capacity.gpu: shares and cohorts claim 11, more than the pool's 10",
        ),
        ([cohort("c", ROOT, borrowing=-1)], "cohort c: borrowing_limit.gpu: -1 is negative"),
    ],
)
def test_tree_errors_name_the_node_and_the_field(nodes, message):
    assert message in tree_errors(nodes, {G: 10})


def test_a_valid_tree_has_no_errors():
    nodes = [cohort("org", ROOT, 2, lending=1), cohort("team", "org"), share("a", "team", 4, borrowing=2)]
    assert tree_errors(nodes, {G: 10}) == []


# --- one level: the tree and section 3 agree --------------------------------------------------------

_STRATEGIES = st.sampled_from(["RESERVE", "LEND", "LEND_AND_BORROW"])


@st.composite
def _one_level(draw):
    n = draw(st.integers(1, 4))
    quotas = [draw(st.integers(0, 6)) for _ in range(n)]
    capacity = sum(quotas) + draw(st.integers(0, 4))
    shares = []
    for i, q in enumerate(quotas):
        strategy = draw(_STRATEGIES)
        borrow = draw(st.one_of(st.none(), st.integers(0, 8))) if strategy == "LEND_AND_BORROW" else 0
        lend = 0 if strategy == "RESERVE" else draw(st.one_of(st.none(), st.integers(0, q)))
        shares.append((f"s{i}", q, strategy, borrow, lend))
    usage = [draw(st.integers(0, 12)) for _ in range(n)]
    return capacity, shares, usage


@settings(max_examples=300, deadline=None)
@given(_one_level())
def test_one_level_available_is_section_3_headroom(case):
    capacity, shares, usage = case
    # Usage that section 3 allows: within the pool, the limits and the borrowing invariant.
    unassigned = capacity - sum(q for _, q, *_ in shares)
    lend_sum = sum(lendable(st_ != "RESERVE", q, u, capacity if lend is None else lend)
                   for (_, q, st_, _, lend), u in zip(shares, usage, strict=True))  # fmt: skip
    borrowed = sum(max(0, u - q) for (_, q, *_), u in zip(shares, usage, strict=True))
    within_limits = all(
        u <= q + (capacity if b is None else b) for (_, q, _, b, _), u in zip(shares, usage, strict=True)
    )
    assume(sum(usage) <= capacity and borrowed <= unassigned + lend_sum and within_limits)
    nodes = [share(name, ROOT, q, borrowing=b, lending=lend) for name, q, _, b, lend in shares]
    t = tree(nodes, capacity, {name: u for (name, *_), u in zip(shares, usage, strict=True)})
    for (name, q, strategy, b, lend), u in zip(shares, usage, strict=True):
        unlendable = q - u - lendable(strategy != "RESERVE", q, u, capacity if lend is None else lend)
        section_3 = headroom(q, u, capacity if b is None else b, max(0, unlendable), capacity - sum(usage),
                             unassigned, lend_sum, borrowed)  # fmt: skip
        assert t.available(name, G) == max(0, section_3), (name, case)
