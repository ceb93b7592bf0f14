"""The pending jobs' queues (section 4): each share's queue order kept as queue groups of one share,
type and size (``state.Group``), strict FIFO's per-share queue, and why the jobs in them wait
(job-seconds per share and WaitReason, added up whenever a queue changes). The queues only store;
the rounds (``scheduling.replay.engine``) decide, and ``scheduling.replay.refusals`` is told of new heads.
"""

from __future__ import annotations

import bisect
from typing import Final

from librt.vecs import vec
from mypy_extensions import i64

from scheduling.outcomes import WaitHistory
from scheduling.replay.records import Records
from scheduling.replay.refusals import Refusals
from scheduling.replay.rules import BEHIND_QUEUE_HEAD, wait_reason
from scheduling.replay.state import RUNNABLE, Account, Group, Job, ShareState

insort: Final = bisect.insort
bisect_left: Final = bisect.bisect_left


class Queues:
    def __init__(
        self,
        n_jobs: int,
        strict: bool,
        by_arrival: list[Job | None],
        flavor_set_of: vec[i64],
        flavor_sets: list[list[int]],
        refusals: Refusals,
        history: WaitHistory,
        pending_log: Records,
    ):
        self.n_jobs = n_jobs
        self.strict = strict
        self.by_arrival = by_arrival  # the replay's waiting jobs by arrival place (shared, not copied)
        self.flavor_set_of = flavor_set_of
        self.flavor_sets = flavor_sets
        self.refusals = refusals
        self.history = history
        self.reasons_log: Records = history.reasons
        self.pending_log = pending_log  # (time, share * n_types + type, instances)
        self.groups: list[Group] = []
        self.multi_groups: dict[tuple[int, int], Group] = {}  # section 12: by (set, count)
        # By set (a list, not a dict: a lookup by an i64 key boxed it), made at the set's first job.
        self.flavor_accounts: list[list[Account] | None] = [None] * len(flavor_sets)
        self.pending_jobs = 0

    def job_of(self, key: int) -> Job:
        """The job of a queue key (queue keys are of waiting jobs: never one that ended)."""
        job = self.by_arrival[key % self.n_jobs]
        assert job is not None
        return job

    def group_of(self, job: Job) -> Group:
        """Its queue group, made at the first submit of a job of its share, type and size."""
        if job.group is not None:
            return job.group
        account = job.account
        if job.flavored:
            return self._multi_group_of(job)
        for g in account.groups:
            if g.count == job.count:
                job.group = g
                return g
        g = Group(account, job.count, index=len(self.groups))
        self.groups.append(g)
        self.history.groups.add3(account.share.index, account.type, job.count)
        account.groups.append(g)
        account.groups.sort(key=lambda g: g.count)
        account.every_group = account.groups + account.multi_groups
        job.group = g
        return g

    def _multi_group_of(self, job: Job) -> Group:
        """Section 12: the queue group of jobs of one share, set of types and size, with the accounts
        of its types (it is reopened by changes in any of their pools)."""
        key = (self.flavor_set_of[job.index], job.count)
        g = self.multi_groups.get(key)
        if g is None:
            flavors = self.flavors_of(job)
            g = Group(flavors[0], job.count, index=len(self.groups))
            g.flavors = flavors
            self.groups.append(g)
            # In the wait history its type is minus the mask of its types (scheduling.pending), so
            # that it is told from the group of jobs of its first type alone.
            mask = 0
            for account in flavors:
                mask |= 1 << account.type
            self.history.groups.add3(flavors[0].share.index, -float(mask), job.count)
            for account in flavors:
                account.multi_groups.append(g)
                account.every_group = account.groups + account.multi_groups
            self.multi_groups[key] = g
        job.group = g
        return g

    def flavors_of(self, job: Job) -> list[Account]:
        """The accounts of the types a job accepts, in its share's flavor order (section 12)."""
        key = self.flavor_set_of[job.index]
        accounts = self.flavor_accounts[key]
        if accounts is None:  # (a set belongs to one share: the job's, whose first type it holds)
            share = job.account.share
            accounts = [share.accounts[t] for t in self.flavor_sets[key]]
            self.flavor_accounts[key] = accounts
        return accounts

    def enqueue(self, job: Job, now: float) -> None:
        key = job.queue_key
        group = self.group_of(job)
        if not self.strict:
            self.add_waiting_time(group, now)
        insort(group.jobs, key)
        if group.jobs[0] == key:
            self.refusals.on_new_head(group)
        if self.strict:
            share = job.account.share
            self.add_share_waiting_time(share, now)
            insort(share.queue, key)
            if share.queue[0] == key:
                share.refused = False
        self.count_pending(job, now, +1)

    def requeue(self, jobs: list[Job], now: float) -> None:
        """Preempted jobs rejoin their queues at their original submit time's position."""
        for job in jobs:
            if job.state == RUNNABLE:
                self.enqueue(job, now)
                self.count_pending(job, now, -1)  # counted as pending when preempted

    def dequeue(self, job: Job, now: float) -> None:
        key = job.queue_key
        group = self.group_of(job)
        if not self.strict:
            self.add_waiting_time(group, now)
        del group.jobs[bisect_left(group.jobs, key)]  # the jobs behind a refused head stay refused
        if not group.jobs:
            self.refusals.close(group)
        if self.strict:
            share = job.account.share
            self.add_share_waiting_time(share, now)
            index = bisect_left(share.queue, key)
            del share.queue[index]
            if index == 0:  # a new head, of another size or type: nothing is known about it
                share.refused = False
        self.count_pending(job, now, -1)

    def leave_queue(self, job: Job, now: float) -> None:
        """An admitted job leaves the strict queue (the best-effort round removes it from its
        group itself, at the position it already knows)."""
        if self.strict:
            key = job.queue_key
            share = job.account.share
            self.add_share_waiting_time(share, now)
            del share.queue[bisect_left(share.queue, key)]
            jobs = self.group_of(job).jobs
            del jobs[bisect_left(jobs, key)]
        self.count_pending(job, now, -1)

    def wait_reason(self, job: Job) -> int:
        account = job.account
        if job.flavored:
            account = self.group_of(job).account  # section 12 **(choice)**: its first type's reason
        return wait_reason(
            job.count,
            account.usage,
            account.quota,
            account.borrow_limit,
            account.share.borrows,
            account.pool.used,
            account.pool.capacity,
        )

    def note_group_reason(self, g: Group, job: Job, now: float) -> None:
        """best_effort_fifo: the group's head ``job`` was refused; its jobs wait for that reason
        from now (the time so far goes to the old one)."""
        reason = self.wait_reason(job)
        if reason != g.reason or not g.reason_logged:
            self.add_waiting_time(g, now)
            self.settle_waiting_time(g)
            g.reason = reason
            g.reason_logged = True
            self.reasons_log.add4(now, g.index, reason, -1)

    def note_head_reason(self, share: ShareState, job: Job, now: float) -> None:
        """strict_fifo: the share's head ``job`` was refused; it waits for that reason from now."""
        self.add_share_waiting_time(share, now)
        share.reason = self.wait_reason(job)
        self.reasons_log.add4(now, share.index, share.reason, job.index)

    def add_waiting_time(self, g: Group, now: float) -> None:
        """best_effort_fifo: every job of a group waits for the reason its head was refused."""
        if g.jobs:
            g.waited += len(g.jobs) * (now - g.since)
        g.since = now

    def settle_waiting_time(self, g: Group) -> None:
        """A group's waiting time so far goes to its share's totals, by its reason (when the
        reason changes and at the end)."""
        g.account.share.waited[g.reason] += g.waited
        g.waited = 0.0

    def add_share_waiting_time(self, share: ShareState, now: float) -> None:
        """strict_fifo: the head of a share's queue waits for its own reason, the rest behind it."""
        waiting = len(share.queue)
        if waiting:
            elapsed = now - share.since
            share.waited[share.reason] += elapsed
            share.waited[BEHIND_QUEUE_HEAD] += (waiting - 1) * elapsed
        share.since = now

    def count_pending(self, job: Job, now: float, sign: int) -> None:
        account = job.account
        self.pending_jobs += sign
        account.pending_instances += job.count if sign > 0 else -job.count
        self.pending_log.change3(now, account.key, account.pending_instances)
