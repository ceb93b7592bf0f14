"""Section 8 over section 13's tree (Kueue ``pkg/scheduler/preemption/fairsharing``): a value for
every node, the round's tournament from the root down, and the victim search whose target is
found by walking down from the root and whose strategies compare the two children of the lowest
common ancestor. ``scheduling.replay.fair`` is the one-cohort case; a policy without cohorts never comes
here (its replay stays section 8's, byte for byte).

Values are exact triples, as ``rules.share_value``'s, compared by ``rules.value_below``; unlike one
cohort, each node has its own denominator, so it is carried in the triple.
"""

from __future__ import annotations

from librt.vecs import vec
from mypy_extensions import i64

from scheduling.model import Policy
from scheduling.replay.fair import (
    NO_ROOM_AT_ALL,
    NO_ROOM_PASSING,
    SEARCH_NEEDED,
    FairValues,
    _Candidates,
    _may_pass,
    note_preemptible,
)
from scheduling.replay.quota_tree import QuotaTree
from scheduling.replay.rules import (
    NO_KEY,
    ZERO_VALUE,
    exact_number,
    value_below,
    value_equal,
)
from scheduling.replay.state import Account, Group, Job, KeptValue, ShareState, TypePool


class Weight:
    """A node's fair weight as the fraction its decimal text says (``rules.exact_number``)."""

    __slots__ = ("num", "den")

    def __init__(self, weight: float) -> None:
        self.num, self.den = exact_number(weight)


class TreeValues:
    """The tree's node values, read from the ``QuotaTree``'s usage as it is (a search's tentative
    shifts included). ``lendable[n]``: the GPU units n's parent could lend with nothing used, its
    potential available summed over types (Kueue's calculateLendable of the parent); it changes only
    with the calendar (``refresh``)."""

    __slots__ = (
        "tree", "units", "weights", "lendable", "children", "known", "known_at", "play", "first",
        "seats", "lowest",
    )  # fmt: skip

    def __init__(self, tree: QuotaTree, weights: list[float], units: list[int]) -> None:
        self.tree = tree
        self.units = vec[i64](units)  # GPU units per instance of each type (``fair.count_gpus_exactly``)
        self.weights = vec[Weight]([Weight(weight) for weight in weights])
        self.children: list[vec[i64]] = [
            vec[i64]([child for child in range(tree.n_nodes) if tree.parent[child] == node])
            for node in range(tree.n_nodes)
        ]
        self.lendable = vec[i64]([0] * tree.n_nodes)
        # Each node's value as last computed, and the tree's change count then (``value``).
        self.known = vec[KeptValue]([KeptValue() for _ in range(tree.n_nodes)])
        self.known_at = vec[i64]([-1] * tree.n_nodes)
        # Scratch of ``_target``, cleared at each call (it runs at every step of a victim search).
        self.play = vec[bool]([False] * tree.n_nodes)
        self.first = vec[_Candidates | None]([None] * tree.n_nodes)
        # Scratch of the round's tournament (``round_pick``), run at every pick: one seat per node.
        self.seats = vec[Seat]([Seat() for _ in range(tree.n_nodes)])
        # Scratch of ``refusal_before_search``: per other share of a pool, the job's side's lowest value.
        self.lowest: list[KeptValue] = [KeptValue() for _ in range(tree.n_shares)]
        self.refresh()

    def refresh(self) -> None:
        """Each node's denominator, after the quotas or the capacity changed (the root has none)."""
        tree = self.tree
        tree.touch_all()  # (the denominators change: no value kept holds)
        for node in range(tree.n_nodes):
            parent = tree.parent[node]
            total = 0
            if parent >= 0:
                for t in range(tree.n_types):
                    total += self.units[t] * tree.potential(parent, t)
            self.lendable[node] = total

    def value(self, node: i64) -> tuple[bool, int, int]:
        """The node's value as the tree is. A value depends only on the node's usage and SQ and on
        ``lendable``: it is kept until the node changes (``QuotaTree.changed_at``) or ``refresh``. A
        victim search's target walk reads the values of the nodes in play at each step (``_target``,
        with this test written out), and a step changes at most the nodes on one share's path."""
        tree = self.tree
        known = self.known
        if self.known_at[node] >= tree.changed_at[node]:
            return known[node].v
        value = self._value_changed(node, 0, 0)
        known[node].v = value
        self.known_at[node] = tree.changes
        return value

    def value_with(self, node: i64, share: i64, t: i64, count: i64) -> tuple[bool, int, int]:
        """The node's value were ``count`` more instances of type ``t`` used in ``share`` (a share at
        or below the node; count 0: as it is): U(node) changes by what the change stores in it as it
        climbs from the share past each node's local quota, max(0, U' - LQ) - max(0, U - LQ) at each
        (as ``QuotaTree._climb`` stores it for ``add`` and ``remove``). (Written out on i64 locals,
        the arrays read once: with int indexes, and a call per level returning an i64, each read
        converted and checked them.)"""
        tree = self.tree
        n_types: i64 = tree.n_types
        usage = tree.usage
        local_quota = tree.lq
        parent = tree.parent
        change = count
        i = share
        while i != node and change != 0:
            k = i * n_types + t
            used = usage[k]
            lq = local_quota[k]
            up: i64 = 0
            if used + change > lq:
                up = used + change - lq
            if used > lq:
                up -= used - lq
            change = up
            i = parent[i]
        return self._value_changed(node, t, change)

    def shifted_value(self, node: int, t: int) -> tuple[bool, int, int]:
        """The node's value with its usage of type t as shifted (``QuotaTree.shift_usage``)."""
        return self._value_changed(node, t, self.tree.shift[node])

    def path_values_with(self, share: i64, t: i64, count: i64, out: list[KeptValue], first: bool) -> None:
        """``value_with`` of every cohort on ``share``'s path below the root, by place on the path from
        its parent (``out[0]``), into ``out``, in one climb; unless ``first``, only where lower than what
        ``out`` holds (section 12's lowest over a job's types). (The share's own is ``Group.value``.)"""
        tree = self.tree
        # (The climb written out with the arrays read once, as ``QuotaTree._climb`` (see there): with
        # a call per level it took about 765 instructions a call, callgrind.)
        n_types: i64 = tree.n_types
        usage = tree.usage
        local_quota = tree.lq
        path = tree.paths[share]
        below: i64 = share
        delta: i64 = count
        for place in range(1, len(path) - 1):
            if delta != 0:
                # What the node below stores here changes by max(0, U' - LQ) - max(0, U - LQ)
                # (``QuotaTree._climb``: only what exceeds the local quota climbs).
                k = below * n_types + t
                used = usage[k]
                lq = local_quota[k]
                up: i64 = 0
                if used + delta > lq:
                    up = used + delta - lq
                if used > lq:
                    up -= used - lq
                delta = up
            below = path[place]
            value = self._value_changed(below, t, delta)
            kept = out[place - 1]
            if first or value_below(value, kept.v):
                kept.v = value

    def _value_changed(self, node: i64, t: i64, delta: i64) -> tuple[bool, int, int]:
        """The node's value were its usage of type t ``delta`` more: 1000 x B / L / weight, as a triple
        ``value_below`` compares, B the GPU units it holds above its subtree quota, L the lendable GPU
        units of its parent (``lendable``; the factor 1000 is common to all and left out); 0 when B or
        L is 0; infinite for weight 0 (compared by B / L)."""
        tree = self.tree
        # (i64 throughout, the vecs read once: with int indexes each read converted and checked
        # them, about 220 instructions a call where this takes about 80, callgrind)
        n_types: i64 = tree.n_types
        usage = tree.usage
        sq = tree.sq
        units = self.units
        row: i64 = node * n_types
        borrowed: i64 = 0
        for u in range(n_types):
            used = usage[row + u]
            if u == t:
                used += delta
            quota = sq[row + u]
            if used > quota:
                borrowed += units[u] * (used - quota)
        # (The triple made here, not by a call of a function of B and L: with its int arguments and
        # its returned tuple, about 220 instructions a call where this takes about 185, callgrind.)
        if borrowed <= 0:
            return ZERO_VALUE
        lendable: int = self.lendable[node]
        if lendable <= 0:
            return ZERO_VALUE
        b: int = borrowed  # (an int: the products are exact, whatever the weight's fraction)
        weight = self.weights[node]
        if weight.num == 0:
            return (True, b, lendable)
        return (False, b * weight.den, lendable * weight.num)


def tree_values(policy: Policy, tree: QuotaTree | None, pools: list[TypePool]) -> TreeValues | None:
    """The policy's node values when it has fair sharing and a tree (else None: section 8 as is):
    shares' and cohorts' fair weights by the tree's numbering (the root has no value), GPU units per
    type from the pools (after ``fair.count_gpus_exactly``)."""
    if policy.fair_sharing is None or tree is None:
        return None
    weights: dict[str, float] = {share.name: share.fair_weight for share in policy.shares}
    weights.update({cohort.name: cohort.fair_weight for cohort in policy.cohorts})
    units = [pool.gpu_units for pool in pools]
    return TreeValues(tree, [weights.get(name, 1.0) for name in tree.names], units)


# --- the round -----------------------------------------------------------------------------------


def _lowest_value_at(values: TreeValues, node: i64, g: Group) -> tuple[bool, int, int]:
    """The value the group's share, ``node``, would have with the group's next job admitted (as
    ``TreeValues.value_with`` at the share itself: its usage of the job's type ``g.count`` more);
    section 12 **(choice)**: for a job that accepts several types, the lowest over them."""
    if not g.flavors:
        return values._value_changed(node, g.account.type, g.count)
    best = ZERO_VALUE
    first = True
    for account in g.flavors:
        value = values._value_changed(node, account.type, g.count)
        if first or value_below(value, best):
            best = value
            first = False
    return best


def _values_on_path(values: TreeValues, g: Group, version: int) -> bool:
    """Sets the group's ``tree_values``: the values the cohorts on its share's path below the root would
    have with its next job admitted (section 12 **(choice)**: for a job that accepts several types, the
    lowest over them, at each level; its share's own is ``Group.value``). They are checked once per
    ``version``, so a round passing over job after job behind a refusal looks at them once; and they
    are computed again only when a node on the path changed since (``QuotaTree.changed_at``: its usage,
    or its quotas or the calendar, which touch every node), for they depend on nothing else. Returns
    whether they were computed again."""
    if g.tree_valued_at == version:
        return False
    g.tree_valued_at = version
    tree = values.tree
    share: i64 = g.share_node
    path = tree.paths[share]
    below_root: i64 = len(path) - 1
    read_at = g.tree_read_at
    if read_at >= 0:
        # (about a quarter of the checks in 10k-fairtree: an admission in the other cohort)
        changed_at = tree.changed_at
        place: i64 = 0
        while place < below_root and changed_at[path[place]] <= read_at:
            place += 1
        if place == below_root:
            return False
    kept = g.tree_values
    while len(kept) < below_root - 1:  # (a group's share, and its path, never change)
        kept.append(KeptValue())
    if not g.flavors:
        values.path_values_with(share, g.account.type, g.count, kept, True)
    first = True
    for account in g.flavors:
        values.path_values_with(share, account.type, g.count, kept, first)
        first = False
    g.tree_read_at = tree.changes
    return True


class Seat:
    """A node's place in the round's tournament (``round_pick``; a share's seat keeps its nominee
    through the round, ``TreeRound``): the group it offers up, the value and queue key that won it
    the node, and ``tie``, the smallest queue key among the offers beaten only in queue order (of
    equal value), ``NO_KEY`` when none, and ``tie_group``, the group that offered it: the winner's
    jobs up to that key keep winning the node while nothing changes. (Fields of a native object:
    lists of them would box every int and tuple.)"""

    def __init__(self) -> None:
        self.group: Group | None = None
        self.value: tuple[bool, int, int] = ZERO_VALUE
        # (i64 keys: a write of an int field checks and releases the old one; NO_KEY fits)
        self.queue: i64 = 0
        self.tie: i64 = NO_KEY
        self.tie_group: Group | None = None  # (read only while ``tie`` is not NO_KEY)
        # A share's seat: the version its nominee was found at (-1: to be found again).
        self.known_at: i64 = -1
        # A cohort's seat: the tournament (``TreeRound.picks``) that takes its children's offers again.
        self.redo_at: i64 = -1

    def offer(self, up: Group, value: tuple[bool, int, int], queue: i64) -> None:
        """``up``'s next job, of key ``queue``, with the value ``value`` at the child it comes from:
        it wins the seat when it is the first or comes before the winner (section 8's round order:
        the lower value, then queue order); the ties beaten in queue order are kept in ``tie``."""
        if self.group is None or value_below(value, self.value):
            self.group, self.value, self.queue, self.tie = up, value, queue, NO_KEY
        elif value_equal(value, self.value):
            if queue < self.queue:
                if self.queue < self.tie:
                    self.tie, self.tie_group = self.queue, self.group
                self.group, self.queue = up, queue
            elif queue < self.tie:
                self.tie, self.tie_group = queue, up


class TreeRound:
    """A round's tournament over the tree: the round's groups by share, and each share's nominee
    (its best group by the share's own value with the group's next job admitted, then queue order),
    kept in the share's seat while it holds. That value depends only on the share's usage (and the
    quotas and the calendar, which do not change within a round), so a nominee holds until the
    share's usage changes (``ShareState.usage_changed_at``) or one of its groups moves on
    (``moved``): a pick rescans one share's groups, not the round's. One object serves every round
    of a replay (``start``). ``picks`` counts its tournaments, ``picked_at`` is the version of the
    last one (``round_pick``)."""

    __slots__ = (
        "shares", "groups_of", "round_groups", "seats", "calendar_changed_at", "live", "last", "picks",
        "picked_at",
    )  # fmt: skip

    def __init__(self, shares: list[ShareState], seats: vec[Seat]) -> None:
        self.shares = shares
        self.groups_of: list[list[Group]] = [[] for _ in shares]
        self.round_groups: list[Group] = []  # the groups ``groups_of`` was sorted from
        self.seats = seats  # ``TreeValues.seats``: a share's seat is its node's (shares come first)
        self.calendar_changed_at = 0  # (the version of the calendar's last change)
        # The groups with a job left to offer, and the group picked last (only a picked group moves
        # on in a round over a tree): when none is left, the round ends without a tournament.
        self.live = 0
        self.last: Group | None = None
        self.picks: i64 = 0
        self.picked_at = -1

    def start(self, groups: list[Group], calendar_changed_at: int) -> None:
        """A new round of ``groups``: every share's nominee to be found. The groups are sorted by
        share again only when they are not the last round's (more than half of the rounds in
        10k-fairtree have the same groups: a group's share never changes)."""
        self.calendar_changed_at = calendar_changed_at
        self.live = 0
        self.last = None
        seats = self.seats
        n: i64 = len(self.shares)
        for s in range(n):
            seats[s].known_at = -1
        # (Groups compared by identity, as ``!=`` would (a Group has no ``__eq__``), in a loop: the
        # list comparison went through PyObject_RichCompare for each pair, about 144 instructions a
        # round more, callgrind.)
        old = self.round_groups
        same = len(groups) == len(old)
        if same:
            for i in range(len(groups)):
                if groups[i] is not old[i]:
                    same = False
                    break
        if not same:
            self.round_groups = groups
            groups_of = self.groups_of
            for s in range(n):
                groups_of[s].clear()
            for g in groups:
                groups_of[g.share_node].append(g)
        for g in groups:
            if g.ptr < g.end:
                self.live += 1

    def moved(self, g: Group) -> None:
        """The group, just picked, moves on (its cursor or jobs change): its share's nominee is found
        again at the next pick."""
        self.seats[g.share_node].known_at = -1
        self.last = g

    def passed(self, g: Group) -> None:
        """The group, not the pick, moved on (passed over with it, ``fair_round._pass_over_tied``): its
        share's nominee is found again, and it is counted out when it has no job left."""
        self.seats[g.share_node].known_at = -1
        if g.ptr >= g.end:
            self.live -= 1

    def nominate(self, values: TreeValues, s: i64, version: int) -> None:
        """Share ``s``'s nominee at ``version`` and its ties, into its seat. A group's share value
        (``Group.value``, its share's node value with its next job admitted) changes only with the
        share's usage and the calendar, as in one cohort (``fair.cohort_pick``); the values further
        up its path are computed for the nominee only (``round_pick``)."""
        changed_at = max(self.shares[s].usage_changed_at, self.calendar_changed_at)
        # ``Seat.offer``'s rule on locals, the seat written once: the winner is the lowest value,
        # then the first in queue order; ``tie`` the smallest key among those beaten only in queue
        # order. (A ``Seat.offer`` call per group, each writing the seat's fields: about 20
        # instructions an offer more, callgrind.)
        best: Group | None = None
        best_value = ZERO_VALUE
        best_queue: i64 = 0
        tie: i64 = NO_KEY
        tie_group: Group | None = None
        for g in self.groups_of[s]:
            if g.ptr >= g.end:
                continue
            if g.valued_at < changed_at or g.valued_at < 0:
                g.value = _lowest_value_at(values, s, g)
                g.valued_at = version
            value = g.value
            queue: i64 = g.jobs[g.ptr]
            if best is None or value_below(value, best_value):
                best, best_value, best_queue, tie = g, value, queue, NO_KEY
            elif value_equal(value, best_value):
                if queue < best_queue:
                    if best_queue < tie:
                        tie, tie_group = best_queue, best
                    best, best_queue = g, queue
                elif queue < tie:
                    tie, tie_group = queue, g
        seat = self.seats[s]
        seat.group = best
        seat.value = best_value
        seat.queue = best_queue
        seat.tie = tie
        seat.tie_group = tie_group
        seat.known_at = version


def round_pick(values: TreeValues, tr: TreeRound, version: int) -> Group | None:
    """The round's next candidate (Kueue's fair_sharing_iterator): a tournament from the leaves up,
    each share sending up its best next job by the value the share would have with it admitted,
    then queue order (``TreeRound.nominate``); each cohort its children's nominees compared by
    the value the child would have with its nominee admitted. ``version``: the engine's state
    version (the groups' values are kept while it stands). The seats stay as the pick left them
    (``lead_seat``).

    Only what may have changed since the last tournament is done again: the nominees of the shares
    whose groups moved on (``TreeRound.moved``, ``passed``) and, at a new version, of the shares
    whose usage changed; then, at the cohorts above a share whose nominee or its values may have
    changed, the children's offers (a cohort's seat is a function of its children's offers: the
    others are left as they are, as the same offers would leave them)."""
    last = tr.last
    if last is not None:
        tr.last = None
        if last.ptr >= last.end:
            tr.live -= 1
    if tr.live == 0:
        return None
    tree = values.tree
    seats = values.seats
    shares = tr.shares
    parents = tree.parent
    n_shares: i64 = tree.n_shares  # (i64 indexes: a vec read with an int converts it each time)
    tr.picks += 1
    pick = tr.picks
    # Usage changes only with the version (``Refusals.on_usage_change``): at the version of the last
    # tournament, only the shares whose nominee is to be found again are looked at (at that
    # tournament every nominee's values were checked at this version). 130k of 152k picks in
    # 10k-fairtree.
    new_version = version != tr.picked_at
    tr.picked_at = version
    for node in range(n_shares):
        # (the seat read for its field alone, borrowed: the skip takes no reference)
        known_at = seats[node].known_at
        if known_at >= 0 and not new_version:
            continue
        seat = seats[node]
        offer_changed = False
        if known_at < 0 or shares[node].usage_changed_at > known_at:
            tr.nominate(values, node, version)
            offer_changed = True
        g = seat.group
        if g is not None and g.tree_valued_at != version and _values_on_path(values, g, version):
            offer_changed = True
        if offer_changed and seats[parents[node]].redo_at != pick:  # (else all above are, ``_redo_above``)
            _redo_above(seats, parents, node, pick)
    # Children before parents: a cohort's nominee is settled before it is offered to its parent.
    # The value a node's nominee offers: the node's with its job admitted: a share's, its group's value;
    # a cohort's, at the cohort's place on the path of the nominee's share (``_values_on_path``); its
    # key: the one that won it the node.
    depth = tree.depth
    for node in tree.bottom_up:
        parent = parents[node]
        if parent < 0:
            continue
        if seats[parent].redo_at != pick:
            continue  # (the seat read for its field alone, borrowed)
        to = seats[parent]
        seat = seats[node]
        up = seat.group
        if up is None:
            continue
        if node < n_shares:
            value = seat.value
        else:
            place: i64 = depth[up.share_node] - depth[node]
            value = up.tree_values[place - 1].v
        if to.group is None:
            # (``Seat.offer``'s first offer, which wins, written out: 340k of its 433k offers in
            # 10k-fairtree; the replay took 1,215.8M instructions with a call each, 1,197.0M so, callgrind)
            to.group, to.value, to.queue, to.tie = up, value, seat.queue, NO_KEY
        else:
            to.offer(up, value, seat.queue)
    return seats[tree.root].group


def _redo_above(seats: vec[Seat], parents: vec[i64], node: i64, pick: i64) -> None:
    """The seats of the cohorts above ``node`` take their children's offers again at tournament
    ``pick``: cleared now, before the first offer."""
    parent = parents[node]
    while parent >= 0:
        if seats[parent].redo_at == pick:
            return  # (and every seat above it)
        seat = seats[parent]
        seat.redo_at = pick
        # (cleared here, no longer by a ``Seat.clear`` call: about 17 instructions a seat less, callgrind)
        seat.group = None
        seat.tie = NO_KEY
        parent = parents[parent]


def lead_seat(values: TreeValues, g: Group) -> int:
    """The seat that bounds the lead of ``g``, picked by the last ``round_pick``: g stays the pick
    while the state is as it is and only g moves on, its jobs winning the tournament one after
    another, up to the smallest tie of the seats on its path (``Seat.tie``), for at every node on its
    path it beats the other offers by value, or ties and comes first in queue order (the others'
    offers do not depend on g). The first seat from g's share up with that tie; -1 when no seat on
    the path has a tie (no bound). (One walk serves ``lead_bound`` and ``tied_seat``.)"""
    bound = NO_KEY
    at: i64 = -1
    seats = values.seats
    for node in values.tree.paths[g.account.share.index]:
        tie = seats[node].tie
        if tie < bound:
            bound = tie
            at = node
    return at


def lead_bound(values: TreeValues, g: Group, at: int) -> int:
    """The queue key below which g's jobs behind its refusal are passed over at once: its lead
    (``lead_seat`` ``at``'s tie, NO_KEY when -1) and the first of its jobs the refusal does not speak
    for (``Group.same_until``), whichever comes first."""
    bound = g.same_until
    if at >= 0 and values.seats[at].tie < bound:
        bound = values.seats[at].tie
    return bound


def tied_seat(values: TreeValues, g: Group, at: int) -> int:
    """``at``, the seat whose tie stops the round's pick ``g`` (``lead_seat``, before its
    ``same_until``), when the runs of g and of the group that offered the tie, its partner
    (``Seat.tie_group``), can be passed over together (``tied_run_end``): a seat with two children,
    g's side and the partner's (so the partner won the seats below it on its side, and the seat sees
    no other offer), where the two groups' values are equal at every cohort from the seat up (so that
    the partner, when its key comes first, wins every seat above that g won). -1 otherwise."""
    tree = values.tree
    seats = values.seats
    if at < tree.n_shares or seats[at].tie >= g.same_until or len(values.children[at]) != 2:
        return -1  # (at < 0: no tie on the path; a tie at or past same_until: that bounds the run)
    partner = seats[at].tie_group
    assert partner is not None
    mine = g.tree_values
    theirs = partner.tree_values
    depth = tree.depth
    node: i64 = at
    while node != tree.root:
        if not value_equal(
            mine[depth[g.share_node] - depth[node] - 1].v,
            theirs[depth[partner.share_node] - depth[node] - 1].v,
        ):
            return -1
        node = tree.parent[node]
    return at


def tied_run_end(values: TreeValues, g: Group, partner: Group, at: int) -> int:
    """Where the run of jobs passed over one after another ends when the round's pick ``g``, behind its
    refusal, was stopped by a tie at seat ``at`` with ``partner`` (``tied_seat``), itself behind its
    refusal: from there the jobs of the two win in turn in queue order, each passed over, as long as
    each side offers its group at the seat and no other offer wins above it: up to the first tie
    above the seat, the groups' ``same_until``, and the end of each side's run (``_side_end``). Every
    job of either before the returned key is passed over."""
    seats = values.seats
    end = min(g.same_until, partner.same_until)
    for node in values.tree.paths[at]:
        if node != at and seats[node].tie < end:
            end = seats[node].tie
    return _side_end(values, partner, at, _side_end(values, g, at, end))


def _side_end(values: TreeValues, g: Group, at: int, end: int) -> int:
    """``end`` bounded by where ``g``'s side of seat ``at`` stops offering g: past a tie at a seat below
    ``at`` on g's path, or past g's last job. When g's share is a child of the seat, what its share
    offers next has at least g's value there (a tie of the share's seat: the same), so only that
    tie bounds the run; with a cohort between them, the next offer of the side has some other value
    at the seat, so the run ends with g's last job before such a tie."""
    tree = values.tree
    seats = values.seats
    share = g.account.share.index
    below = NO_KEY
    for node in tree.paths[share]:
        if node == at:
            break
        if seats[node].tie < below:
            below = seats[node].tie
    if tree.parent[share] == at:
        return min(end, below)
    i = g.first_from(below, g.ptr, g.end)
    if i == g.ptr:
        return -NO_KEY  # (g no longer wins the seats below: nothing is passed over together)
    return min(end, g.jobs[i - 1] + 1)


# --- the victim search ---------------------------------------------------------------------------


def _first_before(pool: _Candidates, other: _Candidates | None, own: ShareState) -> bool:
    """``pool``'s next candidate comes before ``other``'s in section 4's whole victim order:
    ``rules.target_tie_before`` on the two ``rules.victim_key``s, compared field by field (the keys
    are tuples holding a float: two allocations and a tuple comparison at every call)."""
    if other is None:
        return True
    a, b = pool.next, other.next
    assert a is not None and b is not None
    a_own = pool.share is own
    b_own = other.share is own
    if a_own != b_own:
        return b_own  # other shares' candidates first
    if a.priority != b.priority:
        return a.priority < b.priority
    if a.start_time != b.start_time:
        return a.start_time > b.start_time  # (the key holds -start: the most recently started first)
    return a.rank > b.rank  # (and -rank)


def _target(pools: list[_Candidates], own: ShareState, values: TreeValues) -> _Candidates | None:
    """Section 13's target (Kueue's target.go nextTarget): from the root down, at each cohort the
    child with the highest value among those in play, a cohort winning a tie with a share, between
    two shares or two cohorts the one whose next candidate comes first in section 4's whole victim
    order. A share is in play with candidates left and, unless it is the job's own, a value above
    0; a cohort with a share in play below it and a value above 0 or on the job's share's path.

    Only the values the walk reads are brought up to date (``TreeValues.value``'s test, written out
    here: a call per node cost more than the test): those of the shares with candidates left and of
    the cohorts with a share in play below them; the root's (it has none) and the others', never.
    A search's step changes the values on one share's path."""
    tree = values.tree
    n: i64 = tree.n_nodes  # (i64 indexes throughout: a vec read with an int converts it each time)
    n_shares: i64 = tree.n_shares
    value = values.known
    known_at = values.known_at
    changed_at = tree.changed_at
    changes: i64 = tree.changes
    play = values.play
    first = values.first  # the pool in play at or below the node whose next comes first (None: none)
    for node in range(n):
        play[node] = False
        first[node] = None
    # (A value is above 0 when infinite or its numerator is above 0: ``value_below(ZERO_VALUE, v)``
    # without the call.)
    for pool in pools:
        if pool.next is None:
            continue
        s: i64 = pool.share.index
        if known_at[s] < changed_at[s]:
            value[s].v = values._value_changed(s, 0, 0)
            known_at[s] = changes
        v = value[s].v
        if pool.share is own or v[0] or v[1] > 0:
            play[s] = True
            first[s] = pool
    on_path = tree.on_path
    row: i64 = own.index * n
    parents = tree.parent
    for node in tree.bottom_up:
        offered = first[node]
        parent = parents[node]
        if offered is None or parent < 0:
            continue  # (a cohort with no share in play below it is out)
        if node >= n_shares:
            if known_at[node] < changed_at[node]:
                value[node].v = values._value_changed(node, 0, 0)
                known_at[node] = changes
            v = value[node].v
            if not (v[0] or v[1] > 0 or on_path[row + node] != 0):
                continue
            play[node] = True
        if _first_before(offered, first[parent], own):
            first[parent] = offered
    at: i64 = tree.root
    while True:
        share: i64 = -1
        cohort: i64 = -1
        for child in values.children[at]:
            if not play[child]:
                continue
            if child < n_shares:
                if share < 0 or _ranks_before(child, share, value, first, own):
                    share = child
            elif cohort < 0 or _ranks_before(child, cohort, value, first, own):
                cohort = child
        if cohort >= 0 and (share < 0 or not value_below(value[cohort].v, value[share].v)):
            at = cohort
            continue
        if share < 0:
            return None
        return first[share]


def _ranks_before(
    a: i64, b: i64, value: vec[KeptValue], first: vec[_Candidates | None], own: ShareState
) -> bool:
    """Node a before node b as a target: the higher value, then the first next candidate."""
    if value_below(value[b].v, value[a].v):
        return True
    if value_below(value[a].v, value[b].v):
        return False
    pool = first[a]
    assert pool is not None
    return _first_before(pool, first[b], own)


class TreeFairValues(FairValues):
    """``fair.FairValues`` over section 13's tree: the target from ``_target``, the strategies on
    the values of the two children of the lowest common ancestor (Kueue's almost LCAs), the
    target's side's value without a candidate following the change up its path."""

    def __init__(self, values: TreeValues) -> None:
        super().__init__()
        self.values = values
        self.theirs: i64 = 0  # the target's side (``compare``)

    def target(self, pools: list[_Candidates], own: ShareState) -> _Candidates | None:
        return _target(pools, own, self.values)

    def compare(self, own: ShareState, other: ShareState) -> None:
        # The children of the two shares' lowest common ancestor on the way to each (Kueue's almost
        # LCAs), read straight from the tree's table (``QuotaTree.side_of_first``).
        values = self.values
        tree = values.tree
        k: i64 = own.index * tree.n_shares + other.index
        theirs = tree.side_of_second[k]
        self.theirs = theirs
        self.new = values.value(tree.side_of_first[k])
        self.old = values.value(theirs)

    def old_without(self, account: Account, count: int) -> tuple[bool, int, int]:
        return self.values.value_with(self.theirs, account.share.index, account.type, -count)


def refusal_before_search(job: Job, values: TreeValues, final: bool, initial: bool) -> int:
    """``fair.refusal_before_search`` over the tree: NO_ROOM_AT_ALL when the job would not fit even
    were every candidate preempted (``fair.no_room_at_all``'s rule), NO_ROOM_PASSING when it would
    not fit were every candidate preempted that could pass a strategy, else SEARCH_NEEDED; sets
    ``job.room_deficit`` when it refuses.

    A candidate of another share passes only if the value of the job's side of their lowest common
    ancestor is at most (LessThanOrEqualToFinalShare) or below (LessThanInitialShare) the target
    side's: in a search the target side's value only falls (its usage only falls) and the job's
    side's is never below its value with the job admitted and every candidate preempted (values
    grow with usage), so a share whose candidates fail that comparison has none that could be
    taken. The candidates are taken out, and the job put in, as the tree's ``shift``: the tree and
    the values kept from it stay as they are."""
    account = job.account
    pool = account.pool
    tree = values.tree
    t = account.type
    own = account.share.index
    accounts = pool.accounts
    note_preemptible(job)
    tree.clear_shift()
    used = pool.used
    for other in accounts:
        if other.preemptible:
            tree.shift_usage(other.share.index, t, -other.preemptible)
            used -= other.preemptible
    outcome = _room_refusal(job, pool.capacity - used, tree.shifted_available(own, t), NO_ROOM_AT_ALL)
    if outcome != SEARCH_NEEDED:
        return outcome
    # The job's side's lowest value against each other share's target side's value as it is.
    lowest = values.lowest
    tree.shift_usage(own, t, job.count)
    row: i64 = own * tree.n_shares
    i = 0
    for other in accounts:
        if other.preemptible and other is not account:
            lowest[i].v = values.shifted_value(tree.side_of_first[row + other.share.index], t)
            i += 1
    tree.shift_usage(own, t, -job.count)
    dropped = False
    i = 0
    for other in accounts:
        if other.preemptible and other is not account:
            theirs = values.value(tree.side_of_second[row + other.share.index])
            if not _may_pass(final, initial, lowest[i].v, theirs):
                tree.shift_usage(other.share.index, t, other.preemptible)  # back: none could be taken
                used += other.preemptible
                other.preemptible = 0
                dropped = True
            i += 1
    if dropped:
        outcome = _room_refusal(job, pool.capacity - used, tree.shifted_available(own, t), NO_ROOM_PASSING)
    return outcome


def _room_refusal(job: Job, free: int, available: int, refusal: int) -> int:
    """``refusal`` when the job does not fit in the room left (section 13's fit: the tree's
    available within the pool's free instances), its deficit noted; else SEARCH_NEEDED."""
    room = free if free < available else available
    if job.count > room:
        job.room_deficit = job.count - room
        return refusal
    return SEARCH_NEEDED
