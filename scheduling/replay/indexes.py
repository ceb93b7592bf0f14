"""The indexes that make a scheduling pass fast without changing its rules: queue groups (pending
jobs of one share, type and size in queue order) and running levels (an account's running jobs
in victim order).

Pending jobs live in groups of identical (share, type, size), each kept in queue order, so a round
looks only at the head of each group (the candidates in a heap, see ``scheduling.replay.engine``), and a
group whose head was refused stays closed until a change that could help it. Running jobs sit in
priority levels in start order, so victims are read from the end.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import TYPE_CHECKING, Final

from scheduling.replay.rules import POOL_FULL, victim_key

if TYPE_CHECKING:
    from scheduling.replay.state import Account, Job

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


class Group:
    """Pending jobs of one share with one instance type and one size, in queue order.

    All of them fit, or can preempt, under exactly the same conditions except priority and
    submit time, and the head has the highest priority and the earliest submit: if the head
    cannot be admitted, no job behind it can be in the same state. A round therefore asks
    only the first job past its cursor, and a refused group stays ``refused`` until a change
    that could help it (see ``Refusals.on_release`` and ``Refusals.on_start``)."""

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
        # Fair sharing: the state version and queue key of its last refusal.
        self.refused_at = -1
        self.refused_key = 0
        # Fair sharing, in a round: the last job it offers (past ptr) and the version it was
        # refused at in the round (asleep); its share's value with its job admitted, and the
        # version that value was computed at.
        self.end = 0
        self.asleep_at = -1
        self.value: tuple[bool, int, int] = (False, 0, 1)
        self.valued_at = -1
        # Fair sharing over a tree: the values each node of its share's path (the root aside) would
        # have with its job admitted, and the version they were computed at (``fair_tree.round_pick``).
        self.tree_values: list[tuple[bool, int, int]] = []
        self.tree_valued_at = -1
        self.since = 0.0  # when its waiting time was last added up
        self.waited = 0.0  # job-seconds waited for ``reason`` not yet added to its share's totals
        # Section 12: for jobs that accept several types, their share's accounts of those types in
        # its flavor order (``account`` is the first); empty for jobs of one type.
        self.flavors: list[Account] = []
