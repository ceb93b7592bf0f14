"""Section 13 of SEMANTICS.md: the quota arithmetic of a tree of cohorts (Kueue KEP-79).

Kueue keeps, for every node of a cohort tree (a ClusterQueue, here a share, or a Cohort) and every
resource, a subtree quota SQ, a local quota LQ (what a lending limit keeps out of the parent's
sight) and a usage U that counts against SQ (`pkg/cache/scheduler/resource_node.go`). Whether a
job fits, how far up it borrows and its fair-sharing value all follow from those three numbers.
This module holds exactly that arithmetic, per instance type, apart from the replay's indexes:
the policy's tree is checked here (``tree_errors``) and a ``CohortTree`` answers the questions
the rules ask of it.

Without ``cohorts`` a policy is one root cohort holding the unassigned capacity, and these
formulas give section 3's numbers: SQ(root) = unassigned + what the lenders may lend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction

ROOT = ""  # the implicit root cohort: the pool's capacity that no node's own quota claims


@dataclass(frozen=True)
class Node:
    """A share or a cohort as the tree sees it: its own quota and limits per type, its parent.

    ``parent`` is ``ROOT`` for a top-level node. A type missing from ``borrowing_limit`` or
    ``lending_limit`` has no limit (Kueue: the field is unset)."""

    name: str
    parent: str
    is_share: bool
    quota: Mapping[str, int] = field(default_factory=dict)
    borrowing_limit: Mapping[str, int] = field(default_factory=dict)
    lending_limit: Mapping[str, int] = field(default_factory=dict)
    fair_weight: float = 1.0


@dataclass(frozen=True)
class TreeProblem:
    """One thing wrong with a tree: the node (None for the pool as a whole), the field, the message."""

    node: str | None
    is_share: bool
    field: str
    message: str

    def __str__(self) -> str:
        if self.node is None:
            return f"{self.field}: {self.message}"
        return f"{'share' if self.is_share else 'cohort'} {self.node}: {self.field}: {self.message}"


def tree_errors(nodes: list[Node], capacity: Mapping[str, int]) -> list[str]:
    """What is wrong with a tree, each message naming the node and the field (``tree_problems``)."""
    return [str(problem) for problem in tree_problems(nodes, capacity)]


def tree_problems(nodes: list[Node], capacity: Mapping[str, int]) -> list[TreeProblem]:
    """What is wrong with a tree: an unknown parent, a parent that is a share, a cycle, a lending
    limit above a share's quota (Kueue's webhook refuses `lendingLimit` above `nominalQuota`), a type
    the pool lacks, a negative number, and own quotas adding up to more than the pool has."""
    problems: list[TreeProblem] = []
    by_name = {n.name: n for n in nodes}
    for n in nodes:
        parent_field = "cohort" if n.is_share else "parent"
        if n.parent != ROOT and n.parent not in by_name:
            problems.append(TreeProblem(n.name, n.is_share, parent_field, f"no cohort {n.parent!r}"))
        elif n.parent != ROOT and by_name[n.parent].is_share:
            problems.append(
                TreeProblem(n.name, n.is_share, parent_field, f"{n.parent!r} is a share, not a cohort")
            )
        for label, table in (("capacity", n.quota), ("borrowing_limit", n.borrowing_limit),
                             ("lending_limit", n.lending_limit)):  # fmt: skip
            for t, value in table.items():
                if t not in capacity:
                    problems.append(
                        TreeProblem(n.name, n.is_share, f"{label}.{t}", f"the pool has no type {t!r}")
                    )
                elif value < 0:
                    problems.append(TreeProblem(n.name, n.is_share, f"{label}.{t}", f"{value} is negative"))
        # A share lends from its own quota only (Kueue's webhook refuses a lendingLimit above the
        # nominalQuota); a cohort's limit is over its whole subtree, which its own quota need not cover.
        for t, limit in n.lending_limit.items() if n.is_share else ():
            quota = n.quota.get(t, 0)
            if limit > quota:
                problems.append(
                    TreeProblem(n.name, True, f"lending_limit.{t}", f"{limit} is above its capacity {quota}")
                )
    problems.extend(_cycles(nodes, by_name))
    for t, total in capacity.items():
        claimed = sum(n.quota.get(t, 0) for n in nodes)
        if claimed > total:
            problems.append(
                TreeProblem(
                    None,
                    False,
                    f"capacity.{t}",
                    f"shares and cohorts claim {claimed}, more than the pool's {total}",
                )  # fmt: skip
            )
    return problems


def _cycles(nodes: list[Node], by_name: dict[str, Node]) -> list[TreeProblem]:
    """Every cohort on a cycle of parents, named once with the cycle (Kueue refuses such a tree:
    ErrCohortHasCycle)."""
    problems: list[TreeProblem] = []
    reported: set[str] = set()
    for start in nodes:
        seen: list[str] = []
        name = start.name
        while name != ROOT and name in by_name and name not in seen:
            seen.append(name)
            name = by_name[name].parent
        if name in seen and name not in reported:
            cycle = seen[seen.index(name) :]
            reported.update(cycle)
            problems.append(TreeProblem(name, False, "parent", f"a cycle ({' -> '.join([*cycle, name])})"))
    return problems


class CohortTree:
    """SQ, LQ and U per node and type for one policy's tree, with usage kept up to date as jobs
    start and stop (``add_usage`` / ``remove_usage`` bubble up past each node's local quota, as
    Kueue's do). Build it only from a tree without ``tree_errors``."""

    def __init__(self, nodes: list[Node], capacity: Mapping[str, int], gpus: Mapping[str, int]):
        self.types = list(capacity)
        self.gpus = dict(gpus)
        unassigned = {t: capacity[t] - sum(n.quota.get(t, 0) for n in nodes) for t in self.types}
        self.nodes: dict[str, Node] = {ROOT: Node(ROOT, ROOT, False, unassigned)}
        self.nodes.update((n.name, n) for n in nodes)
        self.children: dict[str, list[str]] = {name: [] for name in self.nodes}
        for n in nodes:
            self.children[n.parent].append(n.name)
        self.sq: dict[str, dict[str, int]] = {}
        self.lq: dict[str, dict[str, int]] = {}
        self._accumulate(ROOT)
        self.usage: dict[str, dict[str, int]] = {name: dict.fromkeys(self.types, 0) for name in self.nodes}

    def _accumulate(self, name: str) -> None:
        """SQ(n) = own quota + sum over children of (SQ(c) - LQ(c)); LQ(n) = max(0, SQ(n) -
        lending_limit(n)) when a lending limit is set, else 0."""
        node = self.nodes[name]
        sq = {t: node.quota.get(t, 0) for t in self.types}
        for child in self.children[name]:
            self._accumulate(child)
            for t in self.types:
                sq[t] += self.sq[child][t] - self.lq[child][t]
        self.sq[name] = sq
        self.lq[name] = {
            t: max(0, sq[t] - node.lending_limit[t]) if t in node.lending_limit else 0 for t in self.types
        }

    # --- the path of a node to the root -------------------------------------------------------

    def ancestors(self, name: str) -> list[str]:
        """The node's parent, its parent's parent, ... up to and including the root."""
        out: list[str] = []
        while name != ROOT:
            name = self.nodes[name].parent
            out.append(name)
        return out

    def height_below(self, ancestor: str, name: str) -> int:
        """How many edges up from ``name`` to ``ancestor`` (1 for its parent)."""
        return self.ancestors(name).index(ancestor) + 1

    # --- usage, bubbled as Kueue's addUsage / removeUsage -----------------------------------------

    def local_available(self, name: str, t: str) -> int:
        """Quota of this node's own that its usage leaves free and its parent cannot see."""
        return max(0, self.lq[name][t] - self.usage[name][t])

    def add_usage(self, share: str, t: str, count: int) -> None:
        """A job of ``share`` starts on ``count`` instances of ``t``: what does not fit in the
        node's local quota counts in its parent too, and so on up."""
        name = share
        while True:
            spill = count - self.local_available(name, t)
            self.usage[name][t] += count
            if name == ROOT or spill <= 0:
                return
            name, count = self.nodes[name].parent, spill

    def remove_usage(self, share: str, t: str, count: int) -> None:
        """A job of ``share`` stops: the parent gets back what the node stored in it."""
        name = share
        while True:
            stored_in_parent = self.usage[name][t] - self.lq[name][t]
            self.usage[name][t] -= count
            if name == ROOT or stored_in_parent <= 0:
                return
            name, count = self.nodes[name].parent, min(count, stored_in_parent)

    # --- the questions the rules ask ----------------------------------------------------------

    def available(self, name: str, t: str) -> int:
        """How many more instances of ``t`` the node can take: its free local quota plus what its
        parent has available, the latter capped by its borrowing limit (what it stores in the
        parent, less what it already uses there, plus the limit). Never below 0 (Kueue's can be
        after over-admission; a replay only needs "does it fit")."""
        node = self.nodes[name]
        if name == ROOT:
            return max(0, self.sq[name][t] - self.usage[name][t])
        from_parent = self.available(node.parent, t)
        if t in node.borrowing_limit:
            stored = self.sq[name][t] - self.lq[name][t]
            used = max(0, self.usage[name][t] - self.lq[name][t])
            from_parent = min(from_parent, stored - used + node.borrowing_limit[t])
        return max(0, self.local_available(name, t) + from_parent)

    def potential_available(self, name: str, t: str) -> int:
        """The most the node could take with nothing used anywhere: Kueue's potentialAvailable,
        the lendable capacity that fair sharing divides by."""
        node = self.nodes[name]
        if name == ROOT:
            return self.sq[name][t]
        out = self.lq[name][t] + self.potential_available(node.parent, t)
        if t in node.borrowing_limit:
            out = min(out, self.sq[name][t] + node.borrowing_limit[t])
        return out

    def fits(self, share: str, request: Mapping[str, int]) -> bool:
        """A request fits in the share's tree when every type of it is at most available."""
        return all(count <= self.available(share, t) for t, count in request.items())

    def height(self, name: str) -> int:
        """Kueue's node height (getNodeHeight): the distance to the furthest leaf below it; a share's
        is 0, and so is a cohort's without children."""
        return max((self.height(child) + 1 for child in self.children[name]), default=0)

    def borrowing_level(self, share: str, request: Mapping[str, int]) -> int | None:
        """0 when the share's own quota covers the request; else the height (``height``) of the
        lowest ancestor whose subtree quota covers what spills up to it (Kueue's
        FindHeightOfLowestSubtreeThatFits, with QuantitiesFitInQuota's walk); None when not even the
        root's does (Kueue then gives the root's height: the engine's round order does the same)."""
        remaining = dict(request)
        name = share
        while True:
            if all(self.usage[name][t] + n <= self.sq[name][t] for t, n in remaining.items()):
                return 0 if name == share else self.height(name)
            if name == ROOT:
                return None
            remaining = {t: max(0, n - self.local_available(name, t)) for t, n in remaining.items()}
            name = self.nodes[name].parent

    def value(self, name: str, request: Mapping[str, int] | None = None) -> tuple[bool, Fraction]:
        """Section 8's share value for any node below the root, exactly: borrowed GPUs above its
        subtree quota (with ``request`` added) over the lendable GPUs of its parent (what the
        parent could potentially give it), times 1000, over its fair weight. As a pair that
        compares like the value: (True, 1000 x B / L) stands for +infinity (weight 0), ordered
        among infinities by the ratio, as Kueue's CompareDRS does."""
        request = request or {}
        node = self.nodes[name]
        if name == ROOT:
            return (False, Fraction(0))
        usage, sq = self.usage[name], self.sq[name]
        borrowed = sum(self.gpus[t] * max(0, usage[t] + request.get(t, 0) - sq[t]) for t in self.types)
        if borrowed == 0:
            return (False, Fraction(0))
        lendable = sum(self.gpus[t] * self.potential_available(node.parent, t) for t in self.types)
        if lendable <= 0:
            return (False, Fraction(0))  # section 8: nothing lendable, value 0
        ratio = Fraction(1000 * borrowed, lendable)
        if node.fair_weight == 0:
            return (True, ratio)
        return (False, ratio / Fraction(node.fair_weight))
