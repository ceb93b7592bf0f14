"""The victim search, written once: take candidates in order until the condition holds, then walk
the taken list backwards dropping every victim not needed (Kueue's ``fillBackWorkloads``). Used by
section 4's classic search (``find_victims``, its candidates here too), section 8's fair search
(``fair.victims_needed``) and section 9's capacity preemptions (``calendar.capacity_victims``).

A search only shifts usage (``Account.shift``) to try what a preemption would free; it leaves
usage as it found it, and the caller preempts the victims for real.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from itertools import chain

from scheduling.replay.quota_tree import QuotaTree
from scheduling.replay.rules import NO_LIMIT, invariant_holds, within_quota_once_admitted
from scheduling.replay.state import Account, Job, TypePool, victim_order


class Fit:
    """What the search makes hold, and which candidates it may still take."""

    def holds(self) -> bool:
        raise NotImplementedError

    def takes(self, victim: Job) -> bool:
        return True


class Headroom(Fit):
    """Sections 4 and 8: ``count`` instances fit in the account's headroom."""

    def __init__(self, account: Account, count: int):
        self.account = account
        self.count = count

    def holds(self) -> bool:
        return self.count <= self.account.headroom()

    def takes(self, victim: Job) -> bool:
        # A reclaim candidate stops being one once its share no longer borrows (section 4).
        owner = victim.account
        return owner.share is self.account.share or owner.still_reclaimable_by(self.account)


class PoolValid(Fit):
    """Section 9: the pool holds no more than its capacity and the borrowing invariant holds
    (section 13: the tree's)."""

    def __init__(self, pool: TypePool):
        self.pool = pool

    def holds(self) -> bool:
        pool = self.pool
        tree = pool.tree
        if tree is not None:
            return pool.used <= pool.capacity and tree.holds(pool.index)
        return invariant_holds(pool.used, pool.capacity, pool.unassigned, pool.lendable, pool.borrowed)


def take_until_fits(candidates: Iterator[Job], fit: Fit, taken: list[Job]) -> bool:
    """Take (shift out) candidates in order into ``taken`` until ``fit`` holds; whether it does."""
    for victim in candidates:
        if not fit.takes(victim):
            continue
        victim.account.shift(-victim.count)
        taken.append(victim)
        if fit.holds():
            return True
    return False


def drop_unneeded(taken: list[Job], fit: Fit, last_needed: bool) -> list[Job]:
    """``taken`` shifted out and ``fit`` holding: walk them backwards, giving back each victim
    without which it still holds (``last_needed``: the last one taken made it hold, so it is
    needed). The victims kept, in the order taken, their usage given back too."""
    needed = [True] * len(taken)
    for index in range(len(taken) - (2 if last_needed else 1), -1, -1):
        victim = taken[index]
        victim.account.shift(victim.count)
        if fit.holds():
            needed[index] = False
        else:
            victim.account.shift(-victim.count)
    victims = [victim for index, victim in enumerate(taken) if needed[index]]
    for victim in victims:  # the caller preempts them for real
        victim.account.shift(victim.count)
    return victims


def give_back(taken: list[Job]) -> None:
    for victim in taken:
        victim.account.shift(victim.count)


def find_victims(job: Job, candidates: Iterator[Job]) -> list[Job] | None:
    """Kueue's classic victim search (section 4): the victims that make the job fit, or None."""
    fit = Headroom(job.account, job.count)
    taken: list[Job] = []
    if not take_until_fits(candidates, fit, taken):
        give_back(taken)
        return None
    return drop_unneeded(taken, fit, last_needed=True)


def victim_candidates(job: Job) -> Iterator[Job] | None:
    """Section 4's candidates: other shares' borrowing jobs (cross-share reclaim) first, then the
    share's own lower-priority jobs (in-share preemption); None when there is none. An empty
    iterator when they could not free enough even all together."""
    account = job.account
    share = account.share
    n = job.count
    priority = job.priority
    cross: list[Iterator[Job]] = []
    freeable = 0
    if share.may_reclaim and within_quota_once_admitted(account.usage, n, account.quota):
        for other in account.pool.accounts:
            running = other.running
            if other is account or not running or not other.borrows_now():
                continue
            freeable += _add_reclaimable(other, share.reclaims_any, priority, cross)
    own, own_freeable = own_candidates(job)
    return _merged(job, cross, own, freeable + own_freeable)


def tree_victim_candidates(job: Job, tree: QuotaTree) -> Iterator[Job] | None:
    """Section 13's candidates (Kueue's hierarchical preemption): other shares' jobs that borrow
    at the level of their lowest common ancestor with the job's share, where the job has
    hierarchical advantage (it fits within the subtree quota just below that ancestor), in
    victim order; then the share's own, as section 4. None when there is none; an empty
    iterator when they could not free enough even all together."""
    account = job.account
    share = account.share
    n = job.count
    t = account.type
    priority = job.priority
    cross: list[Iterator[Job]] = []
    freeable = 0
    if share.may_reclaim:
        n_shares = tree.n_shares
        for other in account.pool.accounts:
            running = other.running
            if other is account or not running:
                continue
            lca = tree.lca[other.share.index * n_shares + share.index]
            if not tree.borrows_below(other.share.index, lca, t):
                continue
            if not tree.advantage_at(share.index, t, n, lca):
                continue
            freeable += _add_reclaimable(other, share.reclaims_any, priority, cross)
    own, own_freeable = own_candidates(job)
    return _merged(job, cross, own, freeable + own_freeable)


def _add_reclaimable(other: Account, reclaims_any: bool, priority: int, cross: list[Iterator[Job]]) -> int:
    """Section 4's reclaim rule (``rules.reclaim_allows``) over a borrowing account's running jobs,
    read off its priority levels: with ``any`` all of them, with ``lower_priority`` those below the
    preemptor's priority. Adds them, in victim order, to ``cross``; returns their instances."""
    running = other.running
    if reclaims_any:
        cross.append(running.in_victim_order(NO_LIMIT))
        return other.usage
    if running.lowest_priority() < priority:
        cross.append(running.in_victim_order(priority))
        return running.instances_below(priority)
    return 0


def own_candidates(job: Job) -> tuple[Iterator[Job], int]:
    """In-share candidates (section 4) in victim order, and their instances."""
    account = job.account
    share = account.share
    priority = job.priority
    running = account.running
    if not (share.preempts_in_share and running and running.lowest_priority() <= priority):
        return iter(()), 0
    if not share.preempts_equal_too:
        if running.lowest_priority() < priority:
            return running.in_victim_order(priority), running.instances_below(priority)
        return iter(()), 0
    submit = job.submit
    own = [
        other
        for other in running.in_victim_order(priority + 1)
        if other.priority < priority or other.submit > submit  # equal priority: newer only
    ]
    return iter(own), running.instances_below(priority + 1)


def _merged(job: Job, cross: list[Iterator[Job]], own: Iterator[Job], freeable: int) -> Iterator[Job] | None:
    """Other shares' candidates together in victim order (merging one share's would only slow it
    down), then the share's own; None without any, empty when all of them could not free enough."""
    if not freeable:
        return None
    pool = job.account.pool
    if pool.used - freeable + job.count > pool.capacity:
        return iter(())
    if not cross:
        return own
    others = cross[0] if len(cross) == 1 else heapq.merge(*cross, key=victim_order)
    return chain(others, own)


def level_after(tree: QuotaTree | None, account: Account, count: int, victims: list[tuple[Job, int]]) -> int:
    """Section 12 with cohorts: the borrowing level of ``count`` more instances in the account once
    its victims are gone (their usage taken out for the reading, and put back)."""
    assert tree is not None
    for victim, _ in victims:
        victim.account.shift(-victim.count)
    level = tree.level(account.share.index, account.type, count, tree.usage)
    for victim, _ in victims:
        victim.account.shift(victim.count)
    return level
