"""Lent attribution over a tree of cohorts (scheduling.tree_lending): nearest first, each cohort's own
quota before its children's lendable instances, in proportion to what each offers, and never more
than a cohort's lending limit up to its parent. Expected values worked out by hand."""

from __future__ import annotations

import numpy as np
import pytest

from scheduling.metrics import attribute_lent
from scheduling.model import Policy
from scheduling.tree_lending import attribute_lent_in_tree, lending_tree


def two_cohorts(b_lending_limit: int | None = None) -> Policy:
    """root (own 2) holds cohort A (own 0: a1 and a2, quota 4 each) and cohort B (own 1: b1 quota 4,
    b2 quota 2): 17 instances."""
    b = {"name": "B", "capacity": {"gpu": 1}}
    if b_lending_limit is not None:
        b["lending_limit"] = {"gpu": b_lending_limit}
    return Policy.from_dict(
        {
            "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1}},
            "capacity": {"gpu": 17},
            "cohorts": [{"name": "A"}, b],
            "shares": [
                {"name": "a1", "capacity": {"gpu": 4}, "cohort": "A"},
                {"name": "a2", "capacity": {"gpu": 4}, "cohort": "A"},
                {"name": "b1", "capacity": {"gpu": 4}, "cohort": "B"},
                {"name": "b2", "capacity": {"gpu": 2}, "cohort": "B"},
            ],
        }
    )


def attribute(policy: Policy, usage: list[int]) -> tuple[float, list[float]]:
    quota = np.array([s.quota("gpu") for s in policy.shares], dtype=float)
    used = np.array([usage], dtype=float)
    borrowed = np.maximum(used - quota, 0)
    lendable = np.minimum(np.maximum(quota - used, 0), [s.lend_limit("gpu") for s in policy.shares])
    root_own = np.array([policy.unassigned("gpu") - 1.0])  # (B's own quota is not the root's)
    from_own, lent = attribute_lent_in_tree(lending_tree(policy, "gpu"), borrowed, lendable, root_own)
    return float(from_own[0]), lent[0].tolist()


def test_a_borrower_draws_on_its_own_cohort_first():
    # a1 borrows 4: a2 lends its 3 idle, the last one comes from the root's own 2 (not from B)
    assert attribute(two_cohorts(), [8, 1, 4, 0]) == (1.0, [0.0, 3.0, 0.0, 0.0])


def test_beyond_its_cohort_a_cohorts_own_quota_lends_before_its_shares():
    # a1 borrows 7: a2's 3, the root's 2, then 2 from B: its own 1 first, then 1 of b2's idle 2
    assert attribute(two_cohorts(), [11, 1, 4, 0]) == (3.0, [0.0, 3.0, 0.0, 1.0])


def test_a_cohorts_lending_limit_caps_what_leaves_it():
    # B lends at most 1 to the root: its own 1; b2 lends nothing (1 instance stays unattributed)
    assert attribute(two_cohorts(b_lending_limit=1), [11, 1, 4, 0]) == (3.0, [0.0, 3.0, 0.0, 0.0])


def test_lenders_of_one_cohort_share_in_proportion_to_what_they_offer():
    # b1 borrows 3 in B: B's own 1 first, then... B has no other lender (b2 is busy): 2 from the root.
    assert attribute(two_cohorts(), [4, 4, 7, 2]) == (3.0, [0.0, 0.0, 0.0, 0.0])
    # a1 borrows 3; a2 idle 4 lends 3 of them; within A nothing else offers
    assert attribute(two_cohorts(), [7, 0, 4, 2]) == (0.0, [0.0, 3.0, 0.0, 0.0])
    # b1 borrows 3 with a2 (4 idle) and b2 (2 idle): B's own 1 and b2's 2 first (nearest)
    assert attribute(two_cohorts(), [4, 0, 7, 0]) == (1.0, [0.0, 0.0, 0.0, 2.0])
    # a1 borrows 9 of 17: a2's 4 in A, then at the root its own 2, then B's offer (own 1 + b2 2 + b1 2)
    # gives the last 3: B's own 1 first, then b1 and b2 in proportion to their idle 2 and 2: 1 each
    assert attribute(two_cohorts(), [13, 0, 2, 0]) == (3.0, [0.0, 4.0, 1.0, 1.0])


@pytest.mark.parametrize("seed", range(5))
def test_without_cohorts_it_is_the_one_cohort_attribution(seed):
    rng = np.random.default_rng(seed)
    policy = Policy.from_dict(
        {
            "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1}},
            "capacity": {"gpu": 40},
            "shares": [{"name": f"s{k}", "capacity": {"gpu": 8}} for k in range(4)],
        }
    )
    quota = np.full(4, 8.0)
    usage = rng.integers(0, 14, size=(50, 4)).astype(float)
    lendable = np.maximum(quota - usage, 0)
    borrowed = np.maximum(usage - quota, 0)
    # (only instants the engine could reach: what is borrowed was free to borrow)
    ok = borrowed.sum(axis=1) <= 8 + lendable.sum(axis=1)
    borrowed, lendable = borrowed[ok], lendable[ok]
    unassigned = np.full(len(borrowed), 8.0)
    want_own, want_lent = attribute_lent(borrowed.sum(axis=1), unassigned, lendable)
    got_own, got_lent = attribute_lent_in_tree(lending_tree(policy, "gpu"), borrowed, lendable, unassigned)
    np.testing.assert_allclose(got_own, want_own)
    np.testing.assert_allclose(got_lent, want_lent)
