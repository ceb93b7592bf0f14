"""Section 13 in the replay: a policy's tree of cohorts as flat native integer arrays, node x type, kept up
to date as jobs start and stop (the compiled engine reads native ints, not dicts of names).

The arithmetic is ``scheduling.cohorts``' (Kueue's ``resource_node.go``), written once more for
speed: ``CohortTree`` is the readable statement, tested against Kueue's cases; this class gives the
same numbers (tests/scheduling/test_rules_cohorts_engine.py checks them side by side). Nodes are
numbered shares first (a share's node is its index), then cohorts, then the root.
"""

from __future__ import annotations

from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from scheduling.cohorts import ROOT, Node
from scheduling.model import Policy

NONE: Final = 1 << 60  # no borrowing or lending limit (more than any pool holds)


class QuotaTree:
    """SQ, LQ and U per node and type, the limits, the parents and heights; ``usage`` of a share
    is its usage, of a cohort what its children store in it (past their local quotas)."""

    __slots__ = (
        "n_types", "n_nodes", "n_shares", "root", "parent", "height", "own", "borrowing_limit",
        "lending_limit", "sq", "lq", "usage", "bottom_up", "lca", "side_of_first", "side_of_second",
        "names", "depth", "paths", "on_path", "last_top", "changes", "path_change", "changed_at", "shift",
    )  # fmt: skip

    def __init__(self, nodes: list[Node], shares: list[str], capacity: list[int], types: list[str]) -> None:
        n_types = len(types)
        # Bumped by every change of usage or quotas (``add``, ``remove``, ``recompute``): what was
        # read from the tree at the same count is still true (``fair_tree.TreeValues.value``).
        self.changes = 0
        cohorts = [n for n in nodes if not n.is_share]
        by_name = {n.name: n for n in nodes}
        self.names: list[str] = [*shares, *[c.name for c in cohorts], ROOT]
        index = {name: i for i, name in enumerate(self.names)}
        n = len(self.names)
        self.n_types = n_types
        self.n_nodes = n
        self.path_change = vec[i64]([0] * n)  # scratch of ``available_with`` (a path has at most n)
        # Each node's ``changes`` count when its usage (of any type) or quotas last changed: what was
        # read from a node at a later count is still true of it (``fair_tree.TreeValues``).
        self.changed_at = vec[i64]([0] * n)
        # A question's usage change per node, of one type, beside the usage (``shift_usage``).
        self.shift = vec[i64]([0] * n)
        self.n_shares = len(shares)
        self.root = n - 1
        # Native arrays (``vec[i64]``): the compiled engine reads them without boxing an int.
        self.parent = vec[i64]([index[by_name[name].parent] for name in self.names[:-1]] + [-1])
        self.own = vec[i64]([0] * (n * n_types))
        self.borrowing_limit = vec[i64]([NONE] * (n * n_types))
        self.lending_limit = vec[i64]([NONE] * (n * n_types))
        claimed = [0] * n_types
        for i, name in enumerate(self.names[:-1]):
            node = by_name[name]
            for t, type_name in enumerate(types):
                self.own[i * n_types + t] = int(node.quota.get(type_name, 0))
                claimed[t] += int(node.quota.get(type_name, 0))
                if type_name in node.borrowing_limit:
                    self.borrowing_limit[i * n_types + t] = int(node.borrowing_limit[type_name])
                if type_name in node.lending_limit:
                    self.lending_limit[i * n_types + t] = int(node.lending_limit[type_name])
        for t in range(n_types):  # the root holds what no node claims
            self.own[self.root * n_types + t] = capacity[t] - claimed[t]
        # Children before parents: SQ and U add up bottom-up in this order.
        depth = [0] * n
        for i in range(n):
            j = i
            while self.parent[j] >= 0:
                j = self.parent[j]
                depth[i] += 1
        self.bottom_up = vec[i64](sorted(range(n), key=lambda i: -depth[i]))
        self.depth = vec[i64](depth)  # edges up to the root
        self.paths: list[vec[i64]] = [vec[i64](self.path(i)) for i in range(n)]
        # on_path[a * n + b]: 1 when node b is node a or one of its ancestors, else 0
        self.on_path = vec[i64]([0] * (n * n))
        for i in range(n):
            for j in self.paths[i]:
                self.on_path[i * n + j] = 1
        self.last_top = -1  # the highest node whose usage the last ``remove`` changed
        # Kueue's node height (getNodeHeight): the distance to the furthest leaf below; a share's
        # is 0, and so is a cohort's without children.
        self.height = vec[i64]([0] * n)
        for i in self.bottom_up:
            p = self.parent[i]
            if p >= 0:
                self.height[p] = max(self.height[p], self.height[i] + 1)
        self.lca = vec[i64]([0] * (self.n_shares * self.n_shares))
        for a in range(self.n_shares):
            above = self.path(a)
            for b in range(self.n_shares):
                j = self.parent[b]
                while j not in above:
                    j = self.parent[j]
                self.lca[a * self.n_shares + b] = j
        # Kueue's almost LCAs of two shares a and b: the children of their lowest common ancestor on
        # the way to a (``side_of_first``) and to b (``side_of_second``), at [a * n_shares + b]: the
        # nodes whose values a fair-sharing strategy compares (asked at every candidate's turn).
        self.side_of_first = vec[i64]([0] * (self.n_shares * self.n_shares))
        self.side_of_second = vec[i64]([0] * (self.n_shares * self.n_shares))
        for a in range(self.n_shares):
            for b in range(self.n_shares):
                below = depth[self.lca[a * self.n_shares + b]] + 1
                self.side_of_first[a * self.n_shares + b] = self.paths[a][depth[a] - below]
                self.side_of_second[a * self.n_shares + b] = self.paths[b][depth[b] - below]
        self.sq = vec[i64]([0] * (n * n_types))
        self.lq = vec[i64]([0] * (n * n_types))
        self.usage = vec[i64]([0] * (n * n_types))
        self.recompute()

    def path(self, node: int) -> list[int]:
        """The node and its ancestors up to the root."""
        out = [node]
        while self.parent[node] >= 0:
            node = self.parent[node]
            out.append(node)
        return out

    def set_quota(self, share: int, t: int, quota: int, borrowing_limit: int) -> None:
        """Section 9: a share's quota (and its borrow limit, which may follow it) from now on."""
        self.own[share * self.n_types + t] = quota
        self.borrowing_limit[share * self.n_types + t] = borrowing_limit

    def set_capacity(self, t: int, capacity: int) -> None:
        """Section 9: the pool's capacity of a type from now on; the root holds what no node claims."""
        claimed = 0
        for i in range(self.root):
            claimed += self.own[i * self.n_types + t]
        self.own[self.root * self.n_types + t] = capacity - claimed

    def recompute(self) -> None:
        """SQ(n) = own + sum over children of (SQ(c) - LQ(c)); LQ(n) = max(0, SQ(n) - lending
        limit) with a limit, else 0; U(cohort) = sum over children of max(0, U(c) - LQ(c)); shares'
        usage as it is (after a change of quotas, as Kueue's updateCohortTreeResources)."""
        n_types = self.n_types
        self.touch_all()
        for i in range(self.n_shares, self.n_nodes):
            for t in range(n_types):
                self.sq[i * n_types + t] = 0
                self.usage[i * n_types + t] = 0
        for i in range(self.n_shares):
            for t in range(n_types):
                self.sq[i * n_types + t] = 0
        for i in self.bottom_up:
            p = self.parent[i]
            for t in range(n_types):
                k = i * n_types + t
                sq = self.sq[k] + self.own[k]
                self.sq[k] = sq
                limit = self.lending_limit[k]
                lq = 0 if limit == NONE else max(0, sq - limit)
                self.lq[k] = lq
                if p >= 0:
                    self.sq[p * n_types + t] += sq - lq
                    self.usage[p * n_types + t] += max(0, self.usage[k] - lq)

    # --- usage, bubbled as Kueue's addUsage / removeUsage ---------------------------------------

    def add(self, node: int, t: i64, count: int) -> None:
        """What does not fit in a node's local quota is stored in its parent too, and so on up."""
        self._climb(node, t, count)

    def within_local_quota(self, node: int, t: int) -> bool:
        """The node's usage of type t fits in its local quota: nothing of it is stored above."""
        k = node * self.n_types + t
        return self.usage[k] <= self.lq[k]

    def remove(self, node: int, t: i64, count: int) -> None:
        """The parent gets back what the node had stored in it."""
        self.last_top = self._climb(node, t, -count)

    def _climb(self, node: int, t: i64, delta: i64) -> i64:
        """The node's usage of type t ``delta`` more, and each ancestor's by what its child stores in
        it past the child's local quota, max(0, U' - LQ) - max(0, U - LQ), up to the first whose
        stored amount is unchanged (Kueue's addUsage / removeUsage: only what exceeds the local quota
        climbs). The highest node changed. The climbs of the questions asked without writing
        (``shift_usage``, ``available_with``, ``fair_tree.TreeValues.value_with`` and
        ``path_values_with``) write this rule out again, each on i64 locals with the arrays read
        once: a helper called per level, returning an i64, cost its error check, and each read of a
        vec field its reference count (one shared climb with a second loop per question cost 5% of
        10k-fairtree, callgrind). tests/scheduling/test_rules_cohorts_engine.py holds every one of
        them to the readable ``scheduling.cohorts.CohortTree``."""
        n_types: i64 = self.n_types
        usage = self.usage
        local_quota = self.lq
        parent = self.parent
        changed_at = self.changed_at
        self.changes += 1
        changes: i64 = self.changes
        i: i64 = node
        change: i64 = delta
        while True:
            k = i * n_types + t
            used = usage[k]
            lq = local_quota[k]
            up: i64 = 0
            if used + change > lq:
                up = used + change - lq
            if used > lq:
                up -= used - lq
            usage[k] = used + change
            changed_at[i] = changes
            top = i
            i = parent[i]
            if i < 0 or up == 0:
                return top
            change = up

    def touch_all(self) -> None:
        """Every node changed (its quotas, or what is read with them): nothing read before holds."""
        self.changes += 1
        for i in range(self.n_nodes):
            self.changed_at[i] = self.changes

    # --- questions asked with usage shifted, nothing written ------------------------------------

    def clear_shift(self) -> None:
        """No usage shifted: ``shifted_available`` reads the tree as it is."""
        shift = self.shift
        n: i64 = self.n_nodes  # (an i64 index: a vec written with an int converts it each time)
        for i in range(n):
            shift[i] = 0

    def shift_usage(self, node: int, t: i64, delta: int) -> None:
        """As ``add`` (delta > 0) or ``remove`` (delta < 0) of a share's usage, into ``shift`` and not
        the usage: a question asked with some usage taken out or put in (a fair search's candidates,
        the job) leaves the tree, its change counts and the values kept from it as they are. The
        tree's usage is a function of the shares' usages alone, so shifts add up in any order and
        one undoes another."""
        n_types: i64 = self.n_types
        shift = self.shift
        usage = self.usage
        local_quota = self.lq
        parent = self.parent
        i: i64 = node
        change: i64 = delta
        while True:
            k = i * n_types + t
            # What the node stores in its parent changes by max(0, U' - LQ) - max(0, U - LQ), as in
            # ``_climb`` (written out: see there why)
            used = usage[k] + shift[i]
            lq = local_quota[k]
            up: i64 = 0
            if used + change > lq:
                up = used + change - lq
            if used > lq:
                up -= used - lq
            shift[i] += change
            i = parent[i]
            if i < 0 or up == 0:
                return
            change = up

    def shifted_available(self, node: int, t: i64) -> int:
        """``available`` with each node's usage of type t ``shift`` more (``available``'s walk written
        out again, on i64 locals with the arrays read once: see there)."""
        n_types: i64 = self.n_types
        path = self.paths[node]
        sq = self.sq
        usage = self.usage
        shift = self.shift
        local_quota = self.lq
        limits = self.borrowing_limit
        root: i64 = self.root
        k: i64 = root * n_types + t
        p = sq[k] - (usage[k] + shift[root])
        if p < 0:
            p = 0
        place: i64 = len(path) - 2
        while place >= 0:
            i = path[place]
            k = i * n_types + t
            used = usage[k] + shift[i]
            lq = local_quota[k]
            limit = limits[k]
            if limit != NONE:  # the cap: (SQ - LQ) - max(0, U - LQ) + limit
                cap = sq[k] - lq + limit
                if used > lq:
                    cap -= used - lq
                if cap < p:
                    p = cap
            if lq > used:  # max(0, LQ - U) + p
                p += lq - used
            if p < 0:
                p = 0
            place -= 1
        return p

    def release_reaches(self, released: int, share: int) -> bool:
        """Whether the last ``remove`` (of a job of ``released``) lowered the usage of a node below the
        root on ``share``'s path: only then can ``share``'s jobs gain hierarchical advantage from it
        (section 13's reclaim; what fits may grow for anyone, through the root)."""
        n = self.n_nodes
        for node in self.paths[released]:
            if node == self.root:
                return False
            if self.on_path[share * n + node]:
                return True
            if node == self.last_top:
                return False
        return False

    # --- the questions of section 13 --------------------------------------------------------------

    def available(self, node: int, t: i64) -> int:
        """available(root) = SQ - U; available(n) = max(0, LQ - U) + p with p = available(parent),
        capped by a borrowing limit at (SQ - LQ) - max(0, U - LQ) + limit; never below 0. (From the
        root down the node's path, without recursion, on i64 locals with the arrays read once: a
        helper called per level, returning an i64, cost its error check, and each read of a vec field
        its reference count. ``available_with`` and ``shifted_available`` write this walk out again,
        for the same reason: tests/scheduling/test_rules_cohorts_engine.py holds each to the readable
        ``scheduling.cohorts.CohortTree``.)"""
        n_types: i64 = self.n_types
        path = self.paths[node]
        sq = self.sq
        usage = self.usage
        local_quota = self.lq
        limits = self.borrowing_limit
        k: i64 = self.root * n_types + t
        p = sq[k] - usage[k]
        if p < 0:
            p = 0
        place: i64 = len(path) - 2
        while place >= 0:
            k = path[place] * n_types + t
            used = usage[k]
            lq = local_quota[k]
            limit = limits[k]
            if limit != NONE:  # the cap: (SQ - LQ) - max(0, U - LQ) + limit
                cap = sq[k] - lq + limit
                if used > lq:
                    cap -= used - lq
                if cap < p:
                    p = cap
            if lq > used:  # max(0, LQ - U) + p
                p += lq - used
            if p < 0:
                p = 0
            place -= 1
        return p

    def available_with(self, node: int, t: i64, delta: int) -> int:
        """``available`` were the node's usage of type t ``delta`` more (a share: ``add`` or
        ``remove`` of it), without changing the usage: the change climbs past each local quota as
        those store it (the parent's change is max(0, U' - LQ) - max(0, U - LQ), as ``_climb``),
        then the walk from the root down reads the changed usage (``available``'s formula). The
        same number as the change, ``available`` and the undo, with nothing written. (Both written
        out with the arrays read once, as ``available``.)"""
        n_types: i64 = self.n_types
        path = self.paths[node]
        sq = self.sq
        usage = self.usage
        local_quota = self.lq
        limits = self.borrowing_limit
        changed = self.path_change  # the usage change of each node on the path, bottom-up
        top: i64 = len(path) - 1
        change: i64 = delta
        place: i64 = 0
        while place <= top:
            changed[place] = change
            if change != 0:  # as ``_climb``: max(0, U + change - LQ) - max(0, U - LQ)
                k = path[place] * n_types + t
                used = usage[k]
                lq = local_quota[k]
                up: i64 = 0
                if used + change > lq:
                    up = used + change - lq
                if used > lq:
                    up -= used - lq
                change = up
            place += 1
        k = path[top] * n_types + t
        p = sq[k] - (usage[k] + changed[top])
        if p < 0:
            p = 0
        place = top - 1
        while place >= 0:
            k = path[place] * n_types + t
            used = usage[k] + changed[place]
            lq = local_quota[k]
            limit = limits[k]
            if limit != NONE:  # the cap: (SQ - LQ) - max(0, U - LQ) + limit
                cap = sq[k] - lq + limit
                if used > lq:
                    cap -= used - lq
                if cap < p:
                    p = cap
            if lq > used:  # max(0, LQ - U) + p
                p += lq - used
            if p < 0:
                p = 0
            place -= 1
        return p

    def potential(self, node: int, t: int) -> int:
        """The most the node could take were nothing used anywhere (Kueue's potentialAvailable)."""
        parent = self.parent[node]
        k = node * self.n_types + t
        if parent < 0:
            return self.sq[k]
        out = self.lq[k] + self.potential(parent, t)
        limit = self.borrowing_limit[k]
        if limit != NONE and self.sq[k] + limit < out:
            out = self.sq[k] + limit
        return out

    def over_quota(self, node: int, t: int) -> bool:
        """Its usage is above its subtree quota: it borrows (not IsWithinNominalInResources)."""
        k = node * self.n_types + t
        return self.usage[k] > self.sq[k]

    def level(self, share: int, t: int, count: int, usage: vec[i64]) -> int:
        """The borrowing level of ``count`` more instances in ``share``: 0 within its quota, else the
        height of the lowest ancestor whose subtree quota covers what spills up to it, the root's
        when none does (Kueue's FindHeightOfLowestSubtreeThatFits), with ``usage`` as given."""
        n_types = self.n_types
        node = share
        remaining = count
        while True:
            k = node * n_types + t
            if usage[k] + remaining <= self.sq[k] or self.parent[node] < 0:
                return self.height[node]
            free = self.lq[k] - usage[k]
            if free > 0:
                remaining -= free
            node = self.parent[node]

    def advantage_at(self, share: int, t: int, count: int, lca: int) -> bool:
        """Section 13's reclaim (Kueue's hierarchical advantage): ``count`` more instances in
        ``share`` fit within the subtree quota of some node of its path below ``lca`` (what spills up
        to it counted, as Kueue's QuantitiesFitInQuota), so that the jobs of other subtrees that
        borrow at ``lca`` are reclaim candidates. (Without it, a candidate there would come under
        section 4's rule, which asks the job to be within its share's quota: the advantage at every
        level; so there is none.)"""
        n_types = self.n_types
        node = share
        remaining = count
        while node != lca:
            k = node * n_types + t
            used = self.usage[k]
            if used + remaining <= self.sq[k]:
                return True
            free = self.lq[k] - used
            if free >= remaining:
                remaining = 0
            elif free > 0:
                remaining -= free
            node = self.parent[node]
        return False

    def advantage_limit(self, share: int, t: int, lca: int) -> int:
        """The most instances with which ``advantage_at`` holds at ``lca`` (it only fails as the count
        grows), -1 when none: a node j below ``lca`` fits c when its usage is within its quota and
        c <= F + SQ - U, F being the local quota left free below j."""
        n_types = self.n_types
        node = share
        free_below = 0
        best = -1
        while node != lca:
            k = node * n_types + t
            used = self.usage[k]
            room = self.sq[k] - used
            if room >= 0 and free_below + room > best:
                best = free_below + room
            free = self.lq[k] - used
            if free > 0:
                free_below += free
            node = self.parent[node]
        return best

    def borrows_below(self, share: int, lca: int, t: int) -> bool:
        """A reclaim candidate of ``share`` found at its lowest common ancestor ``lca`` with the
        preemptor stays one while its share and each of its ancestors below ``lca`` borrow."""
        node = share
        while node != lca:
            if not self.over_quota(node, t):
                return False
            node = self.parent[node]
        return True

    def holds(self, t: int) -> bool:
        """The tree's borrowing invariant for a type (section 3's, over the tree): the root stores no
        more than its subtree quota."""
        return not self.over_quota(self.root, t)


def quota_tree(policy: Policy, types: list[str]) -> QuotaTree:
    """The policy's tree (``Policy.cohort_nodes``) in the engine's numbering."""
    return QuotaTree(
        policy.cohort_nodes(),
        [share.name for share in policy.shares],
        [int(policy.capacity.get(name, 0)) for name in types],
        types,
    )


def tree_limit(limit: int) -> int:
    """An account's borrow limit (``rules.NO_LIMIT`` when unlimited) as the tree's."""
    return NONE if limit >= NONE else limit


def is_tree_policy(policy: Policy) -> bool:
    """Section 13 applies: the policy has cohorts or a share names one. Otherwise sections 3-4."""
    return bool(policy.cohorts) or any(share.cohort is not None for share in policy.shares)
