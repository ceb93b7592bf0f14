"""The replay's state as small classes whose fields the compiled engine keeps unboxed: each job,
each (share, type) account, each type's pool and each share, with the section-3 sums kept
incrementally as usage changes; and the indexes that make a scheduling pass fast without changing
its rules: queue groups (pending jobs of one share, type and size in queue order) and running
levels (an account's running jobs in victim order).

Jobs, accounts and shares are ``__slots__`` classes: mypyc compiles them to C structs, so reading
or writing a field costs no list lookup and no new float object. They refer to each other (a job
to its account, an account to its groups and running levels, those to their jobs and account), so
they are one module: mypyc lays a field out natively only when it knows the class.

Pending jobs live in groups of identical (share, type, size), each kept in queue order, so a round
looks only at the head of each group (the candidates in a heap, see ``scheduling.replay.rounds``),
and a group whose head was refused stays closed until a change that could help it. Running jobs
sit in priority levels in start order, so victims are read from the end.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterator
from typing import Final

from mypy_extensions import i64

from scheduling.model import (
    Cause,
    FlavorPreference,
    InSharePreemption,
    Reclaim,
    Share,
    WaitReason,
    WhenCan,
)
from scheduling.outcomes import State
from scheduling.replay.quota_tree import QuotaTree
from scheduling.replay.rules import NO_KEY, POOL_FULL, exact_number, headroom, lendable, victim_key

# Job states as module constants (native ints).
PENDING_SUBMIT: Final[int] = int(State.PENDING_SUBMIT)
RUNNABLE: Final[int] = int(State.RUNNABLE)
RUNNING: Final[int] = int(State.RUNNING)
SUCCEEDED: Final[int] = int(State.SUCCEEDED)
FAILED: Final[int] = int(State.FAILED)
UNSCHEDULABLE: Final[int] = int(State.UNSCHEDULABLE)
CANCELLED: Final[int] = int(State.CANCELLED)


class ShareState:
    """A share's policy choices as plain booleans (the hot loop tests these, not enum members),
    its accounts (one per instance type), and what is added up per share while the replay runs."""

    __slots__ = (
        "index", "lends", "borrows", "preempts_in_share", "preempts_equal_too", "may_reclaim",
        "reclaims_any", "accounts", "queue", "refused", "reason", "since", "waited",
        "cross_share_preemptions", "in_share_preemptions", "fair_sharing_preemptions", "capacity_preemptions",
        "fair_weight", "weight_num", "weight_den", "reopened_at", "usage_changed_at", "passing_reopened_at",
        "try_next_on_borrow", "try_next_on_preempt", "preemption_first",
    )  # fmt: skip

    def __init__(self, index: int, share: Share) -> None:
        self.index = index
        self.lends = share.strategy.lends
        self.borrows = share.strategy.borrows
        self.preempts_in_share = share.in_share_preemption is not InSharePreemption.NEVER
        self.preempts_equal_too = share.in_share_preemption is InSharePreemption.LOWER_OR_NEWER_EQUAL_PRIORITY
        self.may_reclaim = share.reclaim is not Reclaim.NEVER
        self.reclaims_any = share.reclaim is Reclaim.ANY
        self.accounts: list[Account] = []  # by instance type
        # strict_fifo: the share's one queue (queue keys), whether its head was refused, and why.
        self.queue: list[int] = []
        self.refused = False
        self.reason = POOL_FULL
        self.since = 0.0
        self.waited: list[float] = [0.0] * len(WaitReason)  # job-seconds by WaitReason
        self.cross_share_preemptions = 0  # of its jobs
        self.in_share_preemptions = 0
        self.fair_sharing_preemptions = 0
        self.capacity_preemptions = 0
        self.fair_weight = float(share.fair_weight)
        # The weight as an exact fraction: share values compare exactly (rules.share_value).
        self.weight_num, self.weight_den = exact_number(share.fair_weight)
        # Fair sharing: the version of the last change that could turn a refusal of its jobs
        # into an admission (see Refusals.on_usage_change).
        self.reopened_at = 0
        self.usage_changed_at = 0  # the version of its last change of usage (its value may change)
        self.passing_reopened_at = 0  # of its last release (see Refusals._fair_room_changed)
        # Section 12's flavorFungibility, for its jobs that accept several types.
        fungibility = share.flavor_fungibility
        self.try_next_on_borrow = fungibility.when_can_borrow is WhenCan.TRY_NEXT_FLAVOR
        self.try_next_on_preempt = fungibility.when_can_preempt is WhenCan.TRY_NEXT_FLAVOR
        self.preemption_first = fungibility.preference is FlavorPreference.PREEMPTION_OVER_BORROWING


class TypePool:
    """One instance type's capacity and the sums of section 3 over all shares, kept incrementally."""

    __slots__ = (
        "index", "gpus", "capacity", "unassigned", "used", "borrowed", "lendable", "accounts", "released",
        "gpu_units", "tree",
    )  # fmt: skip

    def __init__(self, index: int, gpus: float, capacity: int, unassigned: int) -> None:
        self.index = index
        self.tree: QuotaTree | None = None  # section 13: the policy's tree of cohorts, if it has one
        self.gpus = gpus  # per instance: share values (section 8) are counted in GPUs
        self.gpu_units = 0  # the same in units of all types' common denominator (fair.count_gpus_exactly)
        self.capacity = capacity
        self.unassigned = unassigned
        self.used = 0
        self.borrowed = 0  # sum over shares of usage above quota
        self.lendable = 0  # sum over shares of what they may lend now
        self.accounts: list[Account] = []  # by share
        self.released = 0  # fair sharing: instances released so far (see Refusals._fair_room_changed)


class Account:
    """One share's quota and usage of one instance type (section 3), with its running jobs in
    victim order and its queue groups."""

    __slots__ = (
        "share", "pool", "type", "key", "quota", "borrow_limit", "lend_limit", "borrowable_ever", "usage",
        "round", "usage_at_round_start", "pending_instances", "running",
        "groups", "startup", "lost", "rerun_startup", "room_released", "released", "preemptible",
        "multi_groups", "every_group",
    )  # fmt: skip

    def __init__(
        self,
        share: ShareState,
        pool: TypePool,
        type_: int,
        n_types: int,
        quota: int,
        borrow_limit: int,
        lend_limit: int,
    ) -> None:
        self.share = share
        self.pool = pool
        self.type = type_
        self.key = share.index * n_types + type_  # its key in the usage logs
        self.quota = quota
        self.borrow_limit = borrow_limit
        self.lend_limit = lend_limit
        self.borrowable_ever = 0  # everything it could borrow if every other share were idle
        self.usage = 0
        # Its usage when the round ``round`` started; kept at its first change in a round.
        self.round = -1
        self.usage_at_round_start = 0
        self.pending_instances = 0
        self.running = Running()
        self.groups: list[Group] = []  # its queue groups, smallest jobs first
        # Section 12: the groups of its share's jobs that accept this type and others.
        self.multi_groups: list[Group] = []
        # Both, groups first: what a change in its pool may reopen (kept, not concatenated per change).
        self.every_group: list[Group] = []
        # Instance-seconds of startup (every attempt), lost work, and startup of preempted attempts.
        self.startup = 0.0
        self.lost = 0.0
        self.rerun_startup = 0.0
        # Fair sharing: instances released so far that could add room for its NO_ROOM refusals.
        self.room_released = 0
        self.released = 0  # all instances it released so far
        # Scratch for fair.refusal_before_search: its instances a job's search could preempt.
        self.preemptible = 0

    def lendable(self, usage: int) -> int:
        return lendable(self.share.lends, self.quota, usage, self.lend_limit)

    def shift(self, delta: int) -> None:
        """Usage changes by ``delta``, with the pool's used, borrowed and lendable sums."""
        new_u = self.usage + delta
        pool = self.pool
        pool.borrowed += self.borrowed_change(new_u)
        pool.lendable += self.lendable_change(new_u)
        pool.used += delta
        self.usage = new_u

    def borrowed_change(self, new_u: int) -> int:
        """How the pool's borrowed sum would change were its usage ``new_u``."""
        u = self.usage
        q = self.quota
        if u > q or new_u > q:
            return (new_u - q if new_u > q else 0) - (u - q if u > q else 0)
        return 0

    def lendable_change(self, new_u: int) -> int:
        """How the pool's lendable sum would change were its usage ``new_u``."""
        u = self.usage
        q = self.quota
        if self.share.lends and (u < q or new_u < q):
            return self.lendable(new_u) - self.lendable(u)
        return 0

    def headroom(self) -> int:
        """The most instances the share could start now without preemption (``rules.headroom``)."""
        pool = self.pool
        return self._headroom_at(self.usage, pool.capacity - pool.used, pool.lendable, pool.borrowed)

    def headroom_with(self, delta: int) -> int:
        """``headroom`` were its usage ``delta`` more, without changing it: the pool's sums as
        ``shift`` would change them."""
        new_u = self.usage + delta
        pool = self.pool
        return self._headroom_at(
            new_u, pool.capacity - (pool.used + delta), pool.lendable + self.lendable_change(new_u),
            pool.borrowed + self.borrowed_change(new_u),
        )  # fmt: skip

    def headroom_if_preempted(self) -> int:
        """``headroom`` were every account of its pool ``preemptible`` instances lighter (their
        scratch field), without changing them: the pool's sums as ``shift`` would change them. (One
        cohort's: over a tree, ``fair_tree.refusal_before_search`` reads the tree's available.)"""
        pool = self.pool
        used = pool.used
        borrowed = pool.borrowed
        lendable_sum = pool.lendable
        for other in pool.accounts:
            count = other.preemptible
            if count:
                new_u = other.usage - count
                used -= count
                borrowed += other.borrowed_change(new_u)
                lendable_sum += other.lendable_change(new_u)
        return self._headroom_at(self.usage - self.preemptible, pool.capacity - used, lendable_sum, borrowed)

    def _headroom_at(self, usage: int, free: int, lendable_sum: int, borrowed: int) -> int:
        """``rules.headroom`` for this account at ``usage``, with the pool's free instances and its
        lendable and borrowed sums as given."""
        idle = self.quota - usage
        unlendable = idle - self.lendable(usage) if idle > 0 else 0
        pool = self.pool
        return headroom(
            self.quota, usage, self.borrow_limit, unlendable, free, pool.unassigned, lendable_sum, borrowed
        )

    def borrows_now(self) -> bool:
        return self.usage > self.quota

    def still_reclaimable_by(self, preemptor: Account) -> bool:
        """A reclaim candidate of this account stays one while its share borrows (section 4)."""
        return self.usage > self.quota


class TreeAccount(Account):
    """An account of a share in a tree of cohorts (section 13): its usage also bubbles up the tree,
    and what fits is the tree's available, within the pool's physical capacity."""

    def __init__(
        self,
        share: ShareState,
        pool: TypePool,
        type_: int,
        n_types: int,
        quota: int,
        borrow_limit: int,
        lend_limit: int,
        tree: QuotaTree,
    ) -> None:
        super().__init__(share, pool, type_, n_types, quota, borrow_limit, lend_limit)
        self.tree = tree
        self.node = share.index  # (shares are the tree's first nodes)

    def shift(self, delta: int) -> None:
        if delta > 0:
            self.tree.add(self.node, self.type, delta)
        elif delta < 0:
            self.tree.remove(self.node, self.type, -delta)
        super().shift(delta)

    def headroom(self) -> int:
        """Section 13's fit: at most available(share), and the pool's free instances."""
        pool = self.pool
        free = pool.capacity - pool.used
        available = self.tree.available(self.node, self.type)
        return free if free < available else available

    def headroom_with(self, delta: int) -> int:
        """``headroom`` were its usage ``delta`` more, without changing it: the same number as the
        shift, ``headroom`` and the undo (the tree's usage climbs past local quotas:
        ``QuotaTree.available_with`` follows it without writing; the pool's used sum as ``shift``
        would change it). Unlike the shift and its undo, it leaves
        ``QuotaTree.last_top`` as it is (read only by section 4's reopening after a real release,
        never between a fair search's tries)."""
        pool = self.pool
        free = pool.capacity - (pool.used + delta)
        available = self.tree.available_with(self.node, self.type, delta)
        return free if free < available else available

    def still_reclaimable_by(self, preemptor: Account) -> bool:
        """Section 13: while its share, and each of its ancestors below the lowest common ancestor
        with the preemptor's share, borrow."""
        tree = self.tree
        lca = tree.lca[self.node * tree.n_shares + preemptor.share.index]
        return tree.borrows_below(self.node, lca, self.type)


class Job:
    """A job's description and its replay state in one object: the compiled engine keeps these
    fields unboxed, so reading or writing one is a field access rather than a list lookup and a
    new float object."""

    __slots__ = (
        "index", "account", "count", "submit", "duration", "checkpoint", "retries", "priority", "rank",
        "arrival", "queue_key", "group", "state", "start_time", "saved", "first_start", "end", "queued_since",
        "queued", "preemptions", "lost", "planned_end", "run", "deadline", "refused_at", "preempted_at",
        "preempted_here", "no_room", "room_deficit", "room_released_at", "no_passing_room",
        "passing_released_at", "flavored",
    )  # fmt: skip

    def __init__(
        self,
        index: int,
        account: Account,
        count: int,
        submit: float,
        duration: float,
        checkpoint: float,
        retries: int,
        priority: int,
        rank: int,
    ) -> None:
        self.index = index  # its row in the trace
        self.account = account  # its share's account of its instance type
        self.count = count
        self.submit = submit
        self.duration = duration
        self.checkpoint = checkpoint  # 0: no checkpoints
        self.retries = retries
        self.priority = priority
        self.rank = rank  # its place in job_id order
        self.arrival = 0  # its place in (submit time, job_id) order
        self.queue_key = 0  # its key in its queues, set with its arrival place and its priority
        self.group: Group | None = None  # its queue group, found at its first submit
        self.state = PENDING_SUBMIT
        self.start_time = 0.0  # of the current attempt
        self.saved = 0.0  # work kept from checkpoints
        self.first_start = math.nan
        self.end = math.nan
        self.queued_since = 0.0
        self.queued = 0.0
        self.preemptions = 0
        self.lost = 0.0
        self.planned_end = math.nan  # when its current attempt will end unless preempted
        self.run = -1  # the number of its current run in its account's Running, -1 while not running
        self.deadline = math.inf  # section 10: cancelled at this instant if still RUNNABLE
        self.refused_at = -1  # fair sharing: the state version it was last refused at
        self.no_room = False  # and whether it was NO_ROOM (engine): no candidates could make room
        self.room_deficit = 0  # then the instances it lacked (fair.refusal_before_search)
        self.room_released_at = 0  # and its account's room_released at that try
        self.no_passing_room = False  # or NO_PASSING_ROOM, with the instances it lacked,
        self.passing_released_at = 0  # and the instances other shares had released in its pool
        self.preempted_at = math.nan  # the instant of its last preemption
        self.preempted_here = 0  # how often it was preempted at that instant
        # Section 12: it accepts several types (its group's ``flavors``); ``account`` is then the
        # one it runs or last ran on (while it waits: the one it waited on when it was queued).
        self.flavored = False


class Totals:
    """Per (share, type) sums that the usage log cannot give: preemptions and rerun cost."""

    def __init__(self, shares: list[ShareState]):
        # Instance-seconds: startup of every attempt, lost work, startup of preempted attempts.
        self.startup = [[a.startup for a in share.accounts] for share in shares]
        self.lost = [[a.lost for a in share.accounts] for share in shares]
        self.rerun_startup = [[a.rerun_startup for a in share.accounts] for share in shares]
        self.preemptions = [
            {
                Cause.CROSS_SHARE: share.cross_share_preemptions,
                Cause.IN_SHARE: share.in_share_preemptions,
                Cause.FAIR_SHARING: share.fair_sharing_preemptions,
                Cause.CAPACITY: share.capacity_preemptions,
            }
            for share in shares
        ]
        self.waited = [share.waited for share in shares]  # job-seconds by WaitReason


# --- the indexes ------------------------------------------------------------------------------

insort: Final = bisect.insort


class Level:
    """The running jobs of one priority in (start time, job_id) order, with the number of the run
    each entry was made for: an entry whose job has since stopped (or started again, further
    on) is left in place and skipped until the list is compacted."""

    __slots__ = ("jobs", "runs", "live", "instances")

    def __init__(self) -> None:
        self.jobs: list[Job] = []
        self.runs: list[int] = []
        self.live = 0  # entries whose job is still in the run they were made for
        self.instances = 0

    def add(self, job: Job) -> None:
        """Appends, or inserts after the last live entry that starts before it: a start is the
        latest, so only a priority update or a same-instant start of a lower job_id goes back."""
        jobs, runs = self.jobs, self.runs
        place = len(jobs)
        while place > 0:
            other = jobs[place - 1]
            if other.run == runs[place - 1] and (
                other.start_time < job.start_time
                or (other.start_time == job.start_time and other.rank < job.rank)
            ):
                break
            place -= 1
        jobs.insert(place, job)
        runs.insert(place, job.run)
        self.live += 1
        self.instances += job.count

    def remove(self, job: Job) -> None:
        """Its entry goes stale (the job's run number changes). Stale entries at the end are
        dropped at once (victims are taken from the end, and a start looks back from it); the
        list is compacted when most entries are stale."""
        self.live -= 1
        self.instances -= job.count
        jobs, runs = self.jobs, self.runs
        while jobs and jobs[-1].run != runs[-1]:
            jobs.pop()
            runs.pop()
        if len(jobs) > 2 * self.live + 16:
            kept = [(other, run) for other, run in zip(self.jobs, self.runs, strict=True) if other.run == run]
            self.jobs = [other for other, _ in kept]
            self.runs = [run for _, run in kept]


class Running:
    """An account's running jobs in victim order (``victim_key``) without a sorted list of keys:
    levels by priority, each in start order, so a start appends and a stop marks an entry
    stale, and victims are read from the lowest level up, each level from its end."""

    __slots__ = ("levels", "priorities", "runs")

    def __init__(self) -> None:
        self.levels: dict[int, Level] = {}
        self.priorities: list[int] = []  # of the levels, ascending
        self.runs = 0  # runs numbered so far

    def __bool__(self) -> bool:
        return bool(self.priorities)

    def add(self, job: Job) -> None:
        level = self.levels.get(job.priority)
        if level is None:
            level = self.levels[job.priority] = Level()
            insort(self.priorities, job.priority)
        job.run = self.runs
        self.runs += 1
        level.add(job)

    def remove(self, job: Job) -> None:
        level = self.levels[job.priority]
        job.run = -1
        level.remove(job)
        if not level.live:
            del self.levels[job.priority]
            self.priorities.remove(job.priority)

    def lowest_priority(self) -> int:
        return self.priorities[0]

    def instances_below(self, priority: int) -> int:
        """Instances of its running jobs with a priority below ``priority``."""
        total = 0
        for p in self.priorities:
            if p >= priority:
                break
            total += self.levels[p].instances
        return total

    def newer_instances_at(self, priority: int, submit: float) -> int:
        """Instances of its running jobs of ``priority`` submitted after ``submit``."""
        level = self.levels.get(priority)
        if level is None:
            return 0
        total = 0
        jobs, runs = level.jobs, level.runs
        for place in range(len(jobs)):
            job = jobs[place]
            if job.run == runs[place] and job.submit > submit:
                total += job.count
        return total

    def in_victim_order(self, below: int) -> Iterator[Job]:
        """Its running jobs with a priority below ``below``, in victim order."""
        for p in self.priorities:
            if p >= below:
                break
            level = self.levels[p]
            jobs, runs = level.jobs, level.runs
            for place in range(len(jobs) - 1, -1, -1):
                job = jobs[place]
                if job.run == runs[place]:
                    yield job


def job_id_order(job: Job) -> int:
    return job.rank


def victim_order(job: Job) -> tuple:
    return victim_key(job.priority, job.start_time, job.rank)


class KeptValue:
    """A share or node value kept in a list (fair sharing over a tree): a native field, where a list
    of tuples would allocate a tuple and its ints at every write."""

    __slots__ = ("v",)

    def __init__(self) -> None:
        self.v: tuple[bool, int, int] = (False, 0, 1)


class Group:
    """Pending jobs of one share with one instance type and one size, in queue order.

    All of them fit, or can preempt, under exactly the same conditions except priority and
    submit time, and the head has the highest priority and the earliest submit: if the head
    cannot be admitted, no job behind it can be in the same state. A round therefore asks
    only the first job past its cursor, and a refused group stays ``refused`` until a change
    that could help it (see ``Refusals.on_release`` and ``Refusals.on_start``). Section 8's
    search is the exception: fewer candidates can succeed where more failed, so there a refusal
    speaks only for the jobs behind it with the same candidates (``same_until``)."""

    # Why the group was last refused. REFUSED and NO_VICTIMS speak for the head and so for the
    # whole group; NO_VICTIMS survives releases that cannot help it. BEHIND: a job past the
    # round's cursor was refused, which says nothing about the jobs before it (next round).
    OPEN: Final = 0
    REFUSED: Final = 1
    NO_VICTIMS: Final = 2
    BEHIND: Final = 3

    def __init__(self, account: Account, count: int, index: int):
        self.index = index  # its number in the wait history
        self.account = account
        self.share_node: i64 = account.share.index  # (its share's node in a tree: shares come first)
        self.count = count
        self.jobs: list[int] = []  # queue keys
        self.level = 0  # its borrowing level as the round started (section 4 / 13's round order)
        self.ptr = 0
        self.refused = Group.OPEN
        self.open = False  # counted in Refusals.open_groups: its head may be admissible
        self.round = -1  # the round that last set ptr and level
        self.candidate = False  # its job at ptr is in the round's candidates
        # Reopened only because it fitted after a release: it still has no preemption candidate.
        self.fit_only = False
        self.reason = POOL_FULL  # why its jobs wait, a WaitReason (set when its head is refused)
        self.reason_logged = False
        self.reason_noted_at = -1  # fair sharing: the state version its reason was last looked at
        # Fair sharing: the state version and queue key of its last refusal, and the queue key of
        # its first job behind that refusal that has other preemption candidates (``NO_KEY``: none),
        # for which the refusal does not speak (``fair.same_candidates_until``).
        self.refused_at = -1
        self.refused_key = 0
        self.same_until = NO_KEY
        # Fair sharing, in a round: the last job it offers (past ptr) and the version it was
        # refused at in the round (asleep); its share's value with its job admitted, and the
        # version that value was computed at.
        self.end = 0
        self.asleep_at = -1
        self.wake = 0  # asleep: the place of its job at ``same_until`` (from there it is offered again)
        self.value: tuple[bool, int, int] = (False, 0, 1)
        self.valued_at = -1
        # Fair sharing over a tree: the values each cohort of its share's path (the root aside) would
        # have with its job admitted, the version they were last checked at (``fair_tree.round_pick``),
        # and the tree's change count (``QuotaTree.changes``) they were computed at (-1: never).
        self.tree_values: list[KeptValue] = []
        self.tree_valued_at = -1
        self.tree_read_at: i64 = -1
        self.since = 0.0  # when its waiting time was last added up
        self.waited = 0.0  # job-seconds waited for ``reason`` not yet added to its share's totals
        # Section 12: for jobs that accept several types, their share's accounts of those types in
        # its flavor order (``account`` is the first); empty for jobs of one type.
        self.flavors: list[Account] = []

    def first_from(self, key: int, lo: int, hi: int) -> int:
        """The place of its first job at or after queue key ``key`` among ``jobs[lo:hi]`` (``hi`` when
        none): ``bisect.bisect_left`` written out, for the compiled engine calls the C one as a
        Python object, its arguments boxed (a fair round asks it at every jump past a refusal)."""
        jobs = self.jobs
        low: i64 = lo
        high: i64 = hi
        while low < high:
            middle = (low + high) >> 1
            if jobs[middle] < key:
                low = middle + 1
            else:
                high = middle
        return low
