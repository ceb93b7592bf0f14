"""Lent attribution over a tree of cohorts (section 5's choice, read with section 13): who lent the
instances that shares borrowed.

In one cohort (``metrics.attribute_lent``) borrowed instances are drawn first from capacity no share
holds, then from the lenders in proportion to what each has lendable. Over a tree they are drawn
**nearest first**: a borrower's own cohort lends before its parent, as Kueue's available climbs the
tree. At each cohort, what its children borrow and could not get below it is drawn from the cohort's
own quota first (capacity no share holds, as in one cohort), then from its children's lendable
instances in proportion to what each offers: a share its idle lendable quota, a cohort what its
subtree has left to lend up (its own quota and its children's, at most its lending limit, which
is what Kueue keeps local). The root's own quota is the pool's capacity that no node claims. A
policy without cohorts is the root alone: the one-cohort attribution, number for number
(tests/scheduling/test_tree_lending.py).

Every quantity is an array over the instants of a block, so the walk is once per node, not per
instant.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduling.cohorts import ROOT
from scheduling.model import Policy


@dataclass
class LendingNode:
    """A cohort (or the root) for one type: its children, its own quota and its lending limit."""

    shares: list[int]  # its child shares, by their index in the policy
    cohorts: list[int]  # its child cohorts, by their place in ``LendingTree.cohorts``
    own: float  # its own quota of the type (the root: set per instant, see ``attribute_lent_in_tree``)
    lending_limit: float  # what its subtree may lend to its parent (inf: all)


@dataclass
class LendingTree:
    """The cohorts of a policy, children before parents, the root last."""

    cohorts: list[LendingNode]

    @property
    def root(self) -> int:
        return len(self.cohorts) - 1


def lending_tree(policy: Policy, type_name: str) -> LendingTree:
    """The policy's cohorts for one type (``Policy.cohorts``, shares by their ``cohort``)."""
    names = [c.name for c in policy.cohorts]
    place = {name: i for i, name in enumerate(names)}
    root = len(names)
    nodes = [
        LendingNode(
            [], [], float(c.capacity.get(type_name, 0)), float((c.lending_limit or {}).get(type_name, np.inf))
        )
        for c in policy.cohorts
    ]
    nodes.append(LendingNode([], [], 0.0, np.inf))
    for s, share in enumerate(policy.shares):
        nodes[place[share.cohort] if share.cohort else root].shares.append(s)
    for i, c in enumerate(policy.cohorts):
        parent = c.parent if c.parent and c.parent != ROOT else None
        nodes[place[parent] if parent else root].cohorts.append(i)
    order = _children_first(nodes, root)
    renumber = {old: new for new, old in enumerate(order)}
    return LendingTree(
        [
            LendingNode(
                nodes[old].shares,
                [renumber[c] for c in nodes[old].cohorts],
                nodes[old].own,
                nodes[old].lending_limit,
            )
            for old in order
        ]
    )


def _children_first(nodes: list[LendingNode], root: int) -> list[int]:
    order: list[int] = []

    def visit(i: int) -> None:
        for child in nodes[i].cohorts:
            visit(child)
        order.append(i)

    visit(root)
    return order


def attribute_lent_in_tree(
    tree: LendingTree, borrowed: np.ndarray, lendable: np.ndarray, root_own: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(lent from capacity no share holds, per instant; lent per share, instants x shares) for the
    ``borrowed`` and ``lendable`` instances of each share (instants x shares), ``root_own`` the
    root's own quota at each instant."""
    instants = borrowed.shape[0]
    left = lendable.astype(float).copy()  # what each share has left to lend
    lent = np.zeros_like(left)
    own_left = [np.full(instants, node.own) for node in tree.cohorts]
    own_left[tree.root] = root_own.astype(float).copy()
    own_used = np.zeros(instants)
    offer = [np.zeros(instants) for _ in tree.cohorts]  # what a cohort has left to lend up
    walk = _Draw(tree, left, lent, own_left, offer)
    for c, node in enumerate(tree.cohorts):
        need = borrowed[:, node.shares].sum(axis=1) + sum(
            (walk.unmet[x] for x in node.cohorts), np.zeros(instants)
        )
        from_own = np.minimum(need, own_left[c])
        own_left[c] -= from_own
        own_used += from_own
        rest = need - from_own
        offers = walk.child_offers(node)
        take = np.minimum(rest, offers.sum(axis=1))
        walk.from_children(node, offers, take)
        walk.unmet[c] = rest - take
        if c != tree.root:
            below = own_left[c] + walk.child_offers(node).sum(axis=1)
            offer[c] = np.minimum(below, node.lending_limit)
    return own_used + walk.own_drawn, lent


class _Draw:
    """Draws instances from a cohort's subtree: its own quota first, then its children in proportion
    to what each offers, down to the shares that lend them."""

    def __init__(self, tree: LendingTree, left, lent, own_left, offer) -> None:
        self.tree = tree
        self.left = left
        self.lent = lent
        self.own_left = own_left
        self.offer = offer
        self.unmet: dict[int, np.ndarray] = {}  # what a cohort's subtree borrowed and did not get below it
        self.own_drawn = np.zeros(left.shape[0])  # cohorts' own quota lent to their parents' subtrees

    def child_offers(self, node: LendingNode) -> np.ndarray:
        """What each child offers, instants x (child shares, then child cohorts)."""
        columns = [self.left[:, s] for s in node.shares] + [self.offer[x] for x in node.cohorts]
        return np.stack(columns, axis=1) if columns else np.zeros((self.left.shape[0], 0))

    def from_children(self, node: LendingNode, offers: np.ndarray, take: np.ndarray) -> None:
        """``take`` drawn from the node's children in proportion to ``offers``."""
        total = offers.sum(axis=1)
        with np.errstate(invalid="ignore", divide="ignore"):
            part = np.where(total[:, None] > 0, offers * (take / total)[:, None], 0.0)
        for k, s in enumerate(node.shares):
            self.left[:, s] -= part[:, k]
            self.lent[:, s] += part[:, k]
        for k, x in enumerate(node.cohorts):
            self.cohort(x, part[:, len(node.shares) + k])

    def cohort(self, c: int, amount: np.ndarray) -> None:
        """``amount`` drawn from cohort c's subtree by its parent: its own quota first."""
        node = self.tree.cohorts[c]
        self.offer[c] = self.offer[c] - amount
        own = np.minimum(amount, self.own_left[c])
        self.own_left[c] -= own
        self.own_drawn += own
        self.from_children(node, self.child_offers(node), amount - own)
