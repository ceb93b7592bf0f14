"""The rounds of a scheduling pass without fair sharing (section 4, and 13's levels): best-effort
FIFO (every pending job once, in round order, through the queue groups' candidates) and strict
FIFO (each share's head). Section 8's round is ``scheduling.replay.fair_round``. A round asks
``Admission.try_admit`` (the replay) for each candidate and ``scheduling.replay.refusals`` which groups
are open.
"""

from __future__ import annotations

import bisect
import heapq
from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from scheduling.replay.fair_tree import TreeRound, TreeValues
from scheduling.replay.queues import Queues
from scheduling.replay.quota_tree import QuotaTree
from scheduling.replay.refusals import Refusals
from scheduling.replay.rules import (
    ADMITTED,
    NO_LIMIT,
    NO_VICTIMS,
    borrowing_level,
    round_key,
)
from scheduling.replay.state import Account, Group, Job, ShareState

heappush: Final = heapq.heappush
heappop: Final = heapq.heappop
bisect_right: Final = bisect.bisect_right


def _first(candidate: tuple) -> tuple:
    return candidate[0]


class Admission:
    """What a round asks of the replay."""

    def try_admit(self, job: Job, now: float, preempted: list[Job], no_candidates: bool = False) -> int:
        """Fit, else preempt, else stay RUNNABLE (section 4, steps 1-3): a ``rules`` outcome."""
        raise NotImplementedError


class Rounds:
    def __init__(
        self,
        queues: Queues,
        refusals: Refusals,
        shares: list[ShareState],
        tree: QuotaTree | None,
        fair_tree: TreeValues | None,
        strict: bool,
        n_jobs: int,
    ):
        self.queues = queues
        self.refusals = refusals
        self.shares = shares
        self.tree = tree
        self.fair_tree = fair_tree
        # Section 8 over 13: the round's tournament (one for every round).
        self.tree_round = TreeRound(shares, fair_tree.seats) if fair_tree is not None else None
        self.strict = strict
        self.round_id = 0
        # The round's candidates (queue keys) and its cursor: the last admitted job's place.
        self.within_quota: list[int] = []
        self.borrowing: list[int] = []
        self.has_cursor = False
        self.cursor_level = 0
        self.cursor_key = 0
        # Section 13: the borrowing levels of a round are taken with the tree's usage as it started.
        self.round_usage = vec[i64]()
        # Borrowing levels above 1 share the round's second heap (``_add_candidate``): a multiple
        # of n_jobs wider than the queue keys' range (priorities 0-9999).
        self.level_stride = 10001 * max(1, n_jobs)

    def usage_at_round_start(self, account: Account) -> int:
        return account.usage_at_round_start if account.round == self.round_id else account.usage

    def best_effort(self, now: float, admission: Admission) -> bool:
        """Consider every pending job once, in round order; admit what fits or can preempt.

        Only open groups are looked at: a closed group's head was refused in the current state
        and so would be every job behind it. The round's candidates (each open group's first job
        past the cursor) are kept in two heaps of queue keys, jobs that need not borrow and jobs
        that do, which is ``round_key``'s order: an admission changes only its own group's
        candidate and those of the groups it reopened, which join in at the cursor, where the
        literal walk over all pending jobs would be."""
        self.round_id += 1
        self.has_cursor = False
        if self.tree is not None:
            self.round_usage = vec[i64](self.tree.usage)
        within_quota, borrowing = self.within_quota, self.borrowing
        for g in self.queues.groups:  # a flag per group: cheaper to walk than a set of the open ones
            if g.open:
                self._add_candidate(g)
        refusals = self.refusals
        refusals.reopened.clear()
        refusals.in_round = True
        preempted: list[Job] = []
        admitted = False
        while within_quota or borrowing:
            key = heappop(within_quota if within_quota else borrowing)
            job = self.queues.job_of(key)
            g = self.queues.group_of(job)
            g.candidate = False
            outcome = admission.try_admit(job, now, preempted, g.fit_only)
            if outcome == ADMITTED:
                self.queues.add_waiting_time(g, now)
                del g.jobs[g.ptr]
                if not g.jobs:
                    refusals.close(g)  # nothing left to admit
                admitted = True
                self.has_cursor = True
                self.cursor_level = g.level
                self.cursor_key = job.queue_key
                self._add_candidate(g)
                for other in refusals.reopened:
                    if not other.candidate:
                        self._add_candidate(other)
                refusals.reopened.clear()
            elif g.ptr:
                g.refused = Group.BEHIND
            else:
                g.refused = Group.NO_VICTIMS if outcome == NO_VICTIMS else Group.REFUSED
                refusals.close(g)
                self.queues.note_group_reason(g, job, now)
        refusals.in_round = False
        if preempted:
            self.queues.requeue(preempted, now)
        return admitted

    def strict_fifo(self, now: float, admission: Admission) -> bool:
        """strict_fifo: the round's candidates are each share's first pending job as the round
        starts, at most one per share (Kueue pops one head per ClusterQueue per cycle); a share
        whose head is admitted offers its next job in the next round. A head refused earlier
        stays refused (``ShareState.refused``) until something could help it, and is then
        considered at its place in the round's order."""
        self.round_id += 1
        candidates = []
        for share in self.shares:
            if share.queue:
                head = share.queue[0]
                job = self.queues.job_of(head)
                account = job.account
                flavors = self.queues.flavors_of(job) if job.flavored else [account]
                if self.tree is not None:
                    level = self._tree_level(flavors, job.count, self.tree.usage)
                elif job.flavored:
                    level = borrowing_level(self._every_flavor_borrows(flavors, job.count, False))
                else:
                    level = borrowing_level(account.usage + job.count > account.quota)
                candidates.append((round_key(level, head), share))
        candidates.sort(key=_first)
        preempted: list[Job] = []
        admitted = False
        for key, share in candidates:
            # Checked at its turn: a release earlier in the round may have reopened it.
            if share.refused:
                continue
            job = self.queues.job_of(key[1])
            if admission.try_admit(job, now, preempted) == ADMITTED:
                admitted = True
                continue
            share.refused = True
            self.queues.note_head_reason(share, job, now)
        self.queues.requeue(preempted, now)
        return admitted

    def _add_candidate(self, g: Group) -> None:
        """Its first job past the round's cursor, if any, becomes a candidate of the round."""
        if g.round != self.round_id:  # first look in this round
            g.round = self.round_id
            g.ptr = 0
            account = g.account
            if self.tree is not None:
                g.level = self._tree_level(g.flavors if g.flavors else [account], g.count, self.round_usage)
            elif g.flavors:
                g.level = borrowing_level(self._every_flavor_borrows(g.flavors, g.count, True))
            else:
                g.level = borrowing_level(self.usage_at_round_start(account) + g.count > account.quota)
            g.refused = Group.OPEN
        elif g.refused:
            return  # refused behind the cursor in this round and not reopened since
        if self.has_cursor:
            if g.level < self.cursor_level:
                return
            if g.level == self.cursor_level:
                g.ptr = bisect_right(g.jobs, self.cursor_key, g.ptr)
        if g.ptr < len(g.jobs):
            if g.level == 0:
                heappush(self.within_quota, g.jobs[g.ptr])
            else:
                # Levels above 1 (section 13) sort after level 1 in the one heap: a queue key plus a
                # multiple of n_jobs above every queue key's range (the job is still key % n_jobs).
                heappush(self.borrowing, (g.level - 1) * self.level_stride + g.jobs[g.ptr])
            g.candidate = True

    def _tree_level(self, flavors: list[Account], count: int, usage: vec[i64]) -> int:
        """Section 13's borrowing level, with the tree's ``usage`` as given; section 12 **(choice)**:
        for a job that accepts several types, the lowest over them (as ``_every_flavor_borrows``)."""
        tree = self.tree
        assert tree is not None
        best = NO_LIMIT
        for account in flavors:
            level = tree.level(account.share.index, account.type, count, usage)
            if level < best:
                best = level
        return best

    def _every_flavor_borrows(self, flavors: list[Account], count: int, at_round_start: bool) -> bool:
        """Section 12 **(choice)**: a job that accepts several types needs to borrow, for the round's
        order, only when it would on every one of them."""
        for account in flavors:
            usage = self.usage_at_round_start(account) if at_round_start else account.usage
            if usage + count <= account.quota:
                return False
        return True
