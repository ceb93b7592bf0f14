"""The discrete-event replay of SEMANTICS.md sections 2-4: one event loop, one scheduling pass.

Speed comes from the data structures, not from shortcuts in the rules: pending jobs live in
groups of identical (share, type, size), each kept in queue order, so a round looks only at the
head of each group, and a group whose head was refused stays closed until a change that could
help it; usage, borrowed and lendable totals are kept incrementally. Every rule is checked
against a literal reference model (tests/scheduling/reference.py).
"""

from __future__ import annotations

import gc
import heapq
import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from itertools import chain, takewhile
from typing import Final

import numpy as np

from scheduling.binding import BoundTrace, bind
from scheduling.metrics import UsageLog, compute_metrics
from scheduling.model import (
    Cause,
    InSharePreemption,
    Policy,
    Queueing,
    Reclaim,
    UnschedulableReason,
    WaitReason,
)
from scheduling.records import Records
from scheduling.result import EventKind, JobOutcomes, ReplayResult, State, WaitHistory
from scheduling.trace import Trace

ProgressCallback = Callable[[float], None]

# What trying to admit a job gave.
ADMITTED: Final = 0
REFUSED: Final = 1  # there were preemption candidates, but freeing them would not make it fit
NO_VICTIMS: Final = 2  # there was no preemption candidate at all

# Job states as module constants: the compiled engine reads these as native ints instead of
# looking up enum members on every use.
PENDING_SUBMIT: Final[int] = int(State.PENDING_SUBMIT)
RUNNABLE: Final[int] = int(State.RUNNABLE)
RUNNING: Final[int] = int(State.RUNNING)
SUCCEEDED: Final[int] = int(State.SUCCEEDED)
FAILED: Final[int] = int(State.FAILED)
UNSCHEDULABLE: Final[int] = int(State.UNSCHEDULABLE)
END_OF_TIME: Final[float] = math.inf

# A limit of "unlimited" in the per-(share, type) tables: more instances than any pool has, so
# integer arithmetic (and the compiled engine's native ints) give the same answers as infinity.
NO_LIMIT: Final = 1 << 60


def instances(limit: float) -> int:
    """A borrow or lend limit as whole instances (limits are already whole or unlimited)."""
    return NO_LIMIT if math.isinf(limit) else int(limit)


def replay(
    policy: Policy,
    trace: Trace,
    *,
    record_events: bool = False,
    buckets: int = 200,
    progress: ProgressCallback | None = None,
) -> ReplayResult:
    """Replay ``trace`` under ``policy``; raises InputError when they do not fit together."""
    bound = bind(policy, trace)
    simulation = _Replay(policy, bound, record_events)
    simulation.run(progress)
    outcomes = simulation.outcomes()
    log, totals, events = simulation.log, simulation.totals, simulation.events
    del simulation  # its per-job lists are most of a replay's memory; the metrics need only the logs
    metrics = compute_metrics(policy, bound, outcomes, log, totals, buckets)
    return ReplayResult(policy, trace, outcomes, metrics, events if record_events else None)


# --- orderings: each (choice) of SEMANTICS.md section 4 lives in exactly one function ------------


def queue_key(priority: int, arrival: int, n_jobs: int) -> int:
    """A share's queue order: priority (higher first), then submit time, then job_id, as one
    integer. ``arrival`` is the job's place in (submit time, job_id) order, so comparing keys
    compares (-priority, submit time, job_id) without a tuple; the job is
    ``by_arrival[key % n_jobs]``."""
    return -priority * n_jobs + arrival


def round_key(needs_borrow: bool, queue: int) -> tuple:
    """A round's order: jobs that need not borrow first, then the queue order."""
    return (needs_borrow, queue)


def victim_key(priority: int, start: float, rank: int, job: int) -> tuple:
    """Victim order within one side (other shares / own share): lowest priority, then most
    recently started, then job_id descending."""
    return (priority, -start, -rank, job)


def unschedulable_reason(
    count: int, pool_capacity: int, quota: int, borrow_limit: float, borrowable: float
) -> UnschedulableReason | None:
    """Section 6: the AWS reason why a job can never run, or None. ``borrowable`` is everything
    the share could ever borrow (0 when it may not borrow)."""
    if count > pool_capacity:
        return UnschedulableReason.SERVICE_ENVIRONMENT_MAX_RESOURCE
    if count > quota + min(borrow_limit, borrowable):
        return UnschedulableReason.QUOTA_MANAGEMENT_LIMIT_EXCEEDED
    return None


def wait_reason(
    count: int, usage: int, quota: int, borrow_limit: float, borrows: bool, used: int, capacity: int
) -> WaitReason:
    """The first limit of section 4's fit test that a refused job runs into **(choice: the
    share's own limits first, then the pool, then the borrowing invariant)**."""
    if usage + count > quota and not borrows:
        return WaitReason.OVER_QUOTA_NO_BORROWING
    if usage + count > quota + borrow_limit:
        return WaitReason.BORROW_LIMIT
    if used + count > capacity:
        return WaitReason.POOL_FULL
    return WaitReason.NOTHING_LENDABLE


class _Group:
    """Pending jobs of one share with one instance type and one size, in queue order.

    All of them fit, or can preempt, under exactly the same conditions except priority and
    submit time, and the head has the highest priority and the earliest submit: if the head
    cannot be admitted, no job behind it can be in the same state. A round therefore asks
    only the first job past its cursor, and a refused group stays ``refused`` until a change
    that could help it (see ``_Replay._capacity_released`` and ``_Replay._started``)."""

    # Why the group was last refused. REFUSED and NO_VICTIMS speak for the head and so for the
    # whole group; NO_VICTIMS survives releases that cannot help it. BEHIND: a job past the
    # round's cursor was refused, which says nothing about the jobs before it (next round).
    OPEN: Final = 0
    REFUSED: Final = 1
    NO_VICTIMS: Final = 2
    BEHIND: Final = 3

    def __init__(self, share: int, type_: int, count: int, index: int):
        self.index = index  # its number in the wait history
        self.share = share
        self.type = type_
        self.count = count
        self.jobs: list[int] = []  # queue keys
        self.needs_borrow = False
        self.ptr = 0
        self.refused = _Group.OPEN
        self.round = -1  # the round that last set ptr and needs_borrow
        # Reopened only because it fitted after a release: it still has no preemption candidate.
        self.fit_only = False
        self.reason = WaitReason.POOL_FULL  # why its jobs wait (set when its head is refused)
        self.reason_logged = False
        self.since = 0.0  # when its waiting time was last added up


def _first(candidate: tuple) -> tuple:
    return candidate[0]


class _Replay:
    def __init__(self, policy: Policy, bound: BoundTrace, record_events: bool):
        trace = bound.trace
        self.policy = policy
        self.bound = bound
        self.record_events = record_events
        n_types = len(bound.type_names)
        shares = policy.shares
        self.n_shares = len(shares)
        self.n_types = n_types
        self.startup = float(policy.startup_seconds)
        self.strict = policy.queueing is Queueing.STRICT_FIFO

        # Policy in per (share, type) tables.
        types = bound.type_names
        self.capacity: list[int] = [int(policy.capacity.get(t, 0)) for t in types]
        self.unassigned: list[int] = [int(policy.unassigned(t)) for t in types]
        self.quota: list[list[int]] = [[int(s.quota(t)) for t in types] for s in shares]
        self.borrow_limit: list[list[int]] = [[instances(s.borrow_limit(t)) for t in types] for s in shares]
        self.lend_limit: list[list[int]] = [[instances(s.lend_limit(t)) for t in types] for s in shares]
        self.lends: list[bool] = [s.strategy.lends for s in shares]
        self.borrows: list[bool] = [s.strategy.borrows for s in shares]
        # Preemption choices as booleans (the hot loop tests these, not enum members).
        self.preempts_in_share = [s.in_share_preemption is not InSharePreemption.NEVER for s in shares]
        self.preempts_equal_too = [
            s.in_share_preemption is InSharePreemption.LOWER_OR_NEWER_EQUAL_PRIORITY for s in shares
        ]
        self.may_reclaim = [s.reclaim is not Reclaim.NEVER for s in shares]
        self.reclaims_any = [s.reclaim is Reclaim.ANY for s in shares]

        # Accounting, kept incrementally (section 3).
        self.usage: list[list[int]] = [[0] * n_types for _ in shares]
        self.used: list[int] = [0] * n_types
        self.borrowed_total: list[int] = [0] * n_types
        self.lendable_total: list[int] = [0] * n_types
        for s in range(self.n_shares):
            for t in range(n_types):
                self.lendable_total[t] += self._lendable(s, t, 0)

        # Jobs as Python lists: scalar access in the hot loop is faster than numpy's.
        self.n_jobs = len(trace)
        self.submit: list[float] = trace.submit_time.astype(np.float64).tolist()
        self.share: list[int] = bound.share.astype(np.int64).tolist()
        self.type: list[int] = bound.instance_type.astype(np.int64).tolist()
        self.count: list[int] = trace.instance_count.astype(np.int64).tolist()
        self.duration: list[float] = trace.duration.astype(np.float64).tolist()
        checkpoint = np.nan_to_num(trace.checkpoint_interval, nan=0.0)
        self.checkpoint: list[float] = checkpoint.astype(np.float64).tolist()
        self.retries: list[int] = trace.preemption_retries.astype(np.int64).tolist()
        self.priority: list[int] = trace.priority.astype(np.int64).tolist()
        self.rank: list[int] = bound.id_rank.astype(np.int64).tolist()

        n = self.n_jobs
        self.state: list[int] = [PENDING_SUBMIT] * n
        self.start_time: list[float] = [0.0] * n  # of the current attempt
        self.saved: list[float] = [0.0] * n  # work kept from checkpoints
        self.first_start: list[float] = [math.nan] * n
        self.end: list[float] = [math.nan] * n
        self.queued_since: list[float] = [0.0] * n
        self.queued: list[float] = [0.0] * n
        self.preemptions: list[int] = [0] * n
        self.lost: list[float] = [0.0] * n
        self.reason: dict[int, UnschedulableReason] = {}  # of UNSCHEDULABLE jobs
        self.attempt: list[int] = [0] * n
        # Arrival order, (submit time, job_id): the events' order and the queues' tie-break.
        self.by_arrival: list[int] = np.lexsort((bound.id_rank, trace.submit_time)).tolist()
        self.arrival: list[int] = [0] * n
        for place, job in enumerate(self.by_arrival):
            self.arrival[job] = place
        self.running_keys: list[tuple] = [()] * n  # () while not running

        self.groups: dict[tuple[int, int, int], _Group] = {}
        self.share_queue: list[list[int]] = [[] for _ in shares]  # strict_fifo: queue keys
        self.share_refused = [False] * self.n_shares  # strict_fifo: the head was refused
        self.share_reason = [WaitReason.POOL_FULL] * self.n_shares  # strict_fifo: why the head waits
        self.share_since = [0.0] * self.n_shares
        self.open_groups: set[_Group] = set()  # groups whose head may be admissible
        self.round_id = 0
        self.groups_of: list[list[list[_Group]]] = [[[] for _ in types] for _ in shares]
        self.pending_jobs = 0
        self.pending_instances = [[0] * n_types for _ in shares]
        self.running: list[list[list[tuple]]] = [[[] for _ in types] for _ in shares]
        self.running_by_priority: list[list[dict[int, int]]] = [[{} for _ in types] for _ in shares]
        self.finishes: list[tuple[float, int, int, int]] = []  # (end, job_id rank, attempt, job)
        self.events: list[tuple] = []
        self.log = UsageLog(self.n_shares, n_types)
        self.usage_log: Records = self.log.usage_changes  # (time, share * n_types + type, usage)
        self.pending_log: Records = self.log.pending_changes  # (time, share * n_types + type, instances)
        self.rerun_log: Records = self.log.rerun_costs  # (time, share * n_types + type, instance-seconds)
        self.history = WaitHistory.empty()  # per-job timelines: starts, preemptions, wait reasons
        self.starts_log: Records = self.history.starts
        self.preemptions_log: Records = self.history.preemptions
        self.reasons_log: Records = self.history.reasons
        self.totals = _Totals(self.n_shares, n_types)
        self.ignored_updates = 0
        self.borrowable_ever = [self._borrowable_ever(s) for s in range(self.n_shares)]

    # --- accounting -----------------------------------------------------------------------

    def _lendable(self, s: int, t: int, u: int) -> int:
        """Section 3: min(lending_limit, idle quota) for a lender, 0 for RESERVE."""
        if not self.lends[s]:
            return 0
        idle = self.quota[s][t] - u
        return 0 if idle <= 0 else min(self.lend_limit[s][t], idle)

    def _shift_usage(self, s: int, t: int, delta: int) -> None:
        u = self.usage[s][t]
        q = self.quota[s][t]
        new_u = u + delta
        if u > q or new_u > q:
            self.borrowed_total[t] += (new_u - q if new_u > q else 0) - (u - q if u > q else 0)
        if self.lends[s] and (u < q or new_u < q):
            self.lendable_total[t] += self._lendable(s, t, new_u) - self._lendable(s, t, u)
        self.used[t] += delta
        self.usage[s][t] = new_u

    def _change_usage(self, now: float, s: int, t: int, delta: int) -> None:
        """A real change (a start, finish or preemption), kept in the usage log for the metrics;
        victim searches try changes with _shift_usage alone."""
        self._shift_usage(s, t, delta)
        self.usage_log.change3(now, s * self.n_types + t, self.usage[s][t])

    def _borrowable_ever(self, s: int) -> list[int]:
        """Everything share s could borrow if every other share were idle."""
        out: list[int] = []
        for t in range(self.n_types):
            others = sum(self._lendable(o, t, 0) for o in range(self.n_shares) if o != s)
            out.append(self.unassigned[t] + others if self.borrows[s] else 0)
        return out

    def headroom(self, s: int, t: int) -> int:
        """The most instances of type t share s could start now without preemption.

        Three limits: the pool's free capacity; its quota plus borrow limit; and the borrowing
        invariant (sum of borrowed <= unassigned + sum of lendable), which in closed form says a
        share may take its idle quota that it cannot lend plus the invariant's current slack:
        every further instance either stops being lendable or is borrowed, costing one unit."""
        u = self.usage[s][t]
        q = self.quota[s][t]
        idle = q - u
        unlendable = 0
        if idle > 0:
            unlendable = idle - min(self.lend_limit[s][t], idle) if self.lends[s] else idle
        slack = self.unassigned[t] + self.lendable_total[t] - self.borrowed_total[t]
        # Two-argument min()s: the compiled engine turns them into plain comparisons.
        return min(min(self.capacity[t] - self.used[t], idle + self.borrow_limit[s][t]), unlendable + slack)

    def fits(self, s: int, t: int, n: int) -> bool:
        """Admission without preemption (section 4, step 1)."""
        return n <= self.headroom(s, t)

    # --- the event loop -------------------------------------------------------------------

    def run(self, progress: ProgressCallback | None) -> None:
        # The loop makes millions of long-lived tuples (victim keys, finish events) and no
        # reference cycles: the cycle collector would only walk them again and again (a third of
        # the time at a million jobs).
        collecting = gc.isenabled()
        gc.disable()
        try:
            self._events_in_order(progress)
        finally:
            if collecting:
                gc.enable()

    def _events_in_order(self, progress: ProgressCallback | None) -> None:
        submit_order = self.by_arrival
        updates = self.bound.trace.updates
        update_order: list[int] = np.argsort(updates.time, kind="stable").tolist()
        update_time: list[float] = updates.time.astype(np.float64).tolist()
        submit = self.submit
        n_jobs = self.n_jobs
        n_updates = len(update_order)
        next_submit = next_update = 0
        report_every = max(1, n_jobs // 100)
        next_report = report_every
        finishes = self.finishes
        while True:
            now = min(
                min(
                    submit[submit_order[next_submit]] if next_submit < n_jobs else END_OF_TIME,
                    update_time[update_order[next_update]] if next_update < n_updates else END_OF_TIME,
                ),
                finishes[0][0] if finishes else END_OF_TIME,
            )
            if now == END_OF_TIME:
                break
            # Same instant: finishes, then submissions, then priority updates, then one pass.
            while finishes and finishes[0][0] == now:
                _, _, attempt, job = heapq.heappop(finishes)
                if attempt == self.attempt[job]:
                    self.finish(job, now)
            while next_submit < n_jobs and submit[submit_order[next_submit]] == now:
                self.submit_job(submit_order[next_submit], now)
                next_submit += 1
            while next_update < n_updates and update_time[update_order[next_update]] == now:
                self.update_priority(update_order[next_update], now)
                next_update += 1
            if self.pending_jobs:
                self.scheduling_pass(now)
            if progress is not None and next_submit >= next_report:
                progress(next_submit / n_jobs)
                next_report = next_submit + report_every
        if self.pending_jobs:
            raise RuntimeError(f"{self.pending_jobs} jobs were left pending with nothing running")

    def submit_job(self, job: int, now: float) -> None:
        s, t, n = self.share[job], self.type[job], self.count[job]
        reason = unschedulable_reason(
            n, self.capacity[t], self.quota[s][t], self.borrow_limit[s][t], self.borrowable_ever[s][t]
        )
        if reason is not None:
            self.state[job] = UNSCHEDULABLE
            self.reason[job] = reason
            self._event(now, job, EventKind.UNSCHEDULABLE)
            return
        self.state[job] = RUNNABLE
        self.queued_since[job] = now
        self._enqueue(job, now)

    def update_priority(self, update: int, now: float) -> None:
        """UpdateServiceJob: ignored (and counted) for unknown, not yet submitted or ended jobs."""
        job = int(self.bound.update_job[update])
        priority = int(self.bound.trace.updates.priority[update])
        if job < 0 or self.state[job] not in (RUNNABLE, RUNNING):
            self.ignored_updates += 1
            return
        if self.state[job] == RUNNABLE:
            self._dequeue(job, now)
            self.priority[job] = priority
            self._enqueue(job, now)
        else:
            s, t = self.share[job], self.type[job]
            self._remove_running(job, s, t)
            self.priority[job] = priority
            self._add_running(job, s, t)
            self._capacity_released(t, owner=-1, victims_changed=True)

    def finish(self, job: int, now: float) -> None:
        s, t, n = self.share[job], self.type[job], self.count[job]
        self.state[job] = SUCCEEDED
        self.end[job] = now
        self._remove_running(job, s, t)
        self._change_usage(now, s, t, -n)
        self.totals.startup[s][t] += min(now - self.start_time[job], self.startup) * n
        self._capacity_released(t, owner=s)
        if self.record_events:
            self.events.append((now, job, EventKind.FINISH, None, -1))

    # --- the scheduling pass (section 4) ---------------------------------------------------

    def scheduling_pass(self, now: float) -> None:
        """Rounds until one admits nothing. A pass's last round refused every queue group at its
        head, so when no group has been reopened since, a pass would admit nothing."""
        if self.strict:
            while self._strict_round(now):
                pass
            return
        while self.open_groups and self._best_effort_round(now):
            pass

    def _best_effort_round(self, now: float) -> bool:
        """Consider every pending job once, in round order; admit what fits or can preempt.

        Only open groups are looked at: a closed group's head was refused in the current state
        and so would be every job behind it. A group reopened during the round joins in at the
        round's cursor, where the literal walk over all pending jobs would be."""
        self.round_id += 1
        round_id = self.round_id
        usage_at_start = [row[:] for row in self.usage]
        quota = self.quota
        preempted: list[int] = []
        admitted = False
        cursor = None
        while True:
            candidates = []
            for g in self.open_groups:
                if g.round != round_id:  # first look in this round
                    g.round = round_id
                    g.ptr = 0
                    g.needs_borrow = usage_at_start[g.share][g.type] + g.count > quota[g.share][g.type]
                    g.refused = _Group.OPEN
                elif g.refused:
                    continue  # refused behind the cursor in this round and not reopened since
                if cursor is not None:
                    if g.needs_borrow < cursor[0]:
                        continue
                    if g.needs_borrow == cursor[0]:
                        g.ptr = bisect_right(g.jobs, cursor[1], g.ptr)
                if g.ptr < len(g.jobs):
                    candidates.append((round_key(g.needs_borrow, g.jobs[g.ptr]), g))
            if not candidates:
                break
            if len(candidates) > 1:
                candidates.sort(key=_first)
            for key, g in candidates:
                job = self._job_of(key[1])
                outcome = self.try_admit(job, now, preempted, g.fit_only)
                if outcome == ADMITTED:
                    self._add_waiting_time(g, now)
                    del g.jobs[g.ptr]
                    if not g.jobs:
                        self.open_groups.discard(g)  # nothing left to admit
                    cursor = key
                    admitted = True
                    break
                if g.ptr:
                    g.refused = _Group.BEHIND
                else:
                    g.refused = _Group.NO_VICTIMS if outcome == NO_VICTIMS else _Group.REFUSED
                    self.open_groups.discard(g)
                    reason = self._wait_reason(job)
                    if reason != g.reason or not g.reason_logged:
                        self._add_waiting_time(g, now)  # the time so far, at the old reason
                        g.reason = reason
                        g.reason_logged = True
                        self.reasons_log.add4(now, g.index, reason, -1)
            else:
                break
        if preempted:
            self._requeue(preempted, now)
        return admitted

    def _strict_round(self, now: float) -> bool:
        """strict_fifo: only each share's first pending job is a candidate; a share whose head
        cannot be admitted admits nothing more in this round."""
        usage_at_start = [row[:] for row in self.usage]
        done = [not queue for queue in self.share_queue]
        preempted: list[int] = []
        admitted = False
        cursor = None
        while True:
            candidates = []
            for s, queue in enumerate(self.share_queue):
                if done[s] or not queue:
                    continue
                head = queue[0]
                job = self._job_of(head)
                t = self.type[job]
                key = round_key(usage_at_start[s][t] + self.count[job] > self.quota[s][t], head)
                if cursor is not None and key < cursor:
                    done[s] = True  # considered while refused, or passed over before it was the head
                    continue
                if not self.share_refused[s]:
                    candidates.append((key, s))
            if not candidates:
                break
            candidates.sort(key=lambda c: c[0])
            for key, s in candidates:
                job = self._job_of(key[1])
                if self.try_admit(job, now, preempted) == ADMITTED:
                    cursor = key
                    admitted = True
                    break
                done[s] = True
                self.share_refused[s] = True
                self._add_share_waiting_time(s, now)
                self.share_reason[s] = self._wait_reason(job)
                self.reasons_log.add4(now, s, self.share_reason[s], job)
            else:
                break
        self._requeue(preempted, now)
        return admitted

    # --- what can make a refused job admissible -------------------------------------------

    def _capacity_released(self, t: int, owner: int, victims_changed: bool = False) -> None:
        """A job of share ``owner`` and type t ended or was preempted (or a running job changed
        priority: ``victims_changed``). Refusals may be stale, except for a group that had no
        preemption candidate at all and still cannot fit in the pool: a release gives it no
        candidate, unless it was its own share's (its usage fell: it may now reclaim)."""
        for s in range(self.n_shares):
            # Its own share's usage fell: within quota now, it may reclaim from borrowers.
            may_reclaim_now = s == owner and self.may_reclaim[s]
            room = -1  # the share's headroom, computed once if needed
            for g in self.groups_of[s][t]:
                if not g.jobs or (g.refused == _Group.OPEN and not g.fit_only):
                    continue  # open already, with nothing assumed about it
                knows_no_victims = g.refused == _Group.NO_VICTIMS or (g.refused == _Group.OPEN and g.fit_only)
                if knows_no_victims and not victims_changed:
                    within_quota = self.usage[s][t] + g.count <= self.quota[s][t]
                    if not (may_reclaim_now and within_quota):
                        if g.refused == _Group.OPEN:
                            continue  # still without candidates, and open
                        if room < 0:
                            room = self.headroom(s, t)
                        if g.count <= room:
                            self._reopen(g, fit_only=True)
                        continue
                self._reopen(g)
        self.share_refused = [False] * self.n_shares

    def _reopen(self, g: _Group, fit_only: bool = False) -> None:
        g.fit_only = fit_only and (g.fit_only or g.refused == _Group.NO_VICTIMS)
        g.refused = _Group.OPEN
        self.open_groups.add(g)

    def _started(self, job: int, s: int, t: int) -> None:
        """A start only takes capacity (fitting gets harder for everyone), but the started job is
        a new preemption candidate: for heads of its own share that outrank it (in-share), and,
        when its share now borrows, for heads of other shares that may reclaim it."""
        priority = self.priority[job]
        if self.preempts_in_share[s]:
            equal_too = self.preempts_equal_too[s]
            for g in self.groups_of[s][t]:
                if (
                    (g.refused or g.fit_only)
                    and g.jobs
                    and (
                        self._head_priority(g) > priority
                        or (equal_too and self._head_priority(g) == priority)
                    )
                ):
                    self._reopen(g)
            self.share_refused[s] = False
        if self.usage[s][t] > self.quota[s][t]:
            lowest = self.running[s][t][0][0]  # every running job of a borrowing share is a candidate
            for other in range(self.n_shares):
                if other == s or not self.may_reclaim[other]:
                    continue
                reclaims_any = self.reclaims_any[other]
                room = self.quota[other][t] - self.usage[other][t]  # reclaim only within quota
                for g in self.groups_of[other][t]:
                    if (
                        (g.refused or g.fit_only)
                        and g.jobs
                        and g.count <= room
                        and (reclaims_any or self._head_priority(g) > lowest)
                    ):
                        self._reopen(g)
                self.share_refused[other] = False

    def try_admit(self, job: int, now: float, preempted: list[int], no_candidates: bool = False) -> int:
        """Fit, else preempt, else stay RUNNABLE (section 4, steps 1-3). ``no_candidates``: the
        caller knows there is no preemption candidate, so only the fit is tried."""
        s, t, n = self.share[job], self.type[job], self.count[job]
        if n <= self.headroom(s, t):
            self._start(job, now)
            return ADMITTED
        if no_candidates:
            return NO_VICTIMS
        candidates = self._victim_candidates(job)
        if candidates is None:
            return NO_VICTIMS
        victims = self.find_victims(job, candidates)
        if victims is None:
            return REFUSED
        for victim in victims:
            self._preempt(victim, job, now, preempted)
        self._start(job, now)
        return ADMITTED

    # --- preemption (section 4, step 2) ----------------------------------------------------

    def find_victims(self, job: int, candidates: Iterator[tuple]) -> list[int] | None:
        """Kueue's classic victim search: take candidates in order until the job fits, then
        walk the taken list backwards dropping every victim not needed. None if it never fits."""
        s, t, n = self.share[job], self.type[job], self.count[job]
        taken: list[int] = []
        fits = False
        for key in candidates:
            victim = key[-1]
            owner = self.share[victim]
            if owner != s and self.usage[owner][t] <= self.quota[owner][t]:
                continue  # a reclaim candidate stops being one once its share no longer borrows
            self._shift_usage(owner, t, -self.count[victim])
            taken.append(victim)
            if self.fits(s, t, n):
                fits = True
                break
        if not fits:
            for victim in taken:
                self._shift_usage(self.share[victim], t, self.count[victim])
            return None
        for index in range(len(taken) - 2, -1, -1):
            victim = taken[index]
            self._shift_usage(self.share[victim], t, self.count[victim])
            if self.fits(s, t, n):
                taken[index] = -1  # not needed
            else:
                self._shift_usage(self.share[victim], t, -self.count[victim])
        victims = [v for v in taken if v >= 0]
        for victim in victims:  # _preempt applies the release for real
            self._shift_usage(self.share[victim], t, self.count[victim])
        return victims

    def _victim_candidates(self, job: int) -> Iterator[tuple] | None:
        """Other shares' borrowing jobs (cross-share reclaim) first, then the share's own
        lower-priority jobs (in-share preemption); None when there is none. An empty iterator
        when they could not free enough even all together."""
        s, t, n = self.share[job], self.type[job], self.count[job]
        priority = self.priority[job]
        cross = []
        freeable = 0
        if self.may_reclaim[s] and self.usage[s][t] + n <= self.quota[s][t]:
            for other in range(self.n_shares):
                running = self.running[other][t]
                # Running lists are in victim order: running[0] has the lowest priority.
                if other == s or not running or self.usage[other][t] <= self.quota[other][t]:
                    continue
                if self.reclaims_any[s]:
                    freeable += self.usage[other][t]
                    cross.append(iter(running))
                elif running[0][0] < priority:
                    freeable += self._instances_below(other, t, priority)
                    cross.append(takewhile(lambda k: k[0] < priority, running))
        own: Iterator[tuple] = iter(())
        running = self.running[s][t]
        if self.preempts_in_share[s] and running and running[0][0] <= priority:
            if not self.preempts_equal_too[s]:
                if running[0][0] < priority:
                    freeable += self._instances_below(s, t, priority)
                    own = takewhile(lambda k: k[0] < priority, running)
            else:
                submit = self.submit[job]
                freeable += self._instances_below(s, t, priority + 1)
                own = iter(
                    [
                        k
                        for k in takewhile(lambda k: k[0] <= priority, running)
                        if k[0] < priority or self.submit[k[-1]] > submit  # equal priority: newer only
                    ]
                )
        if not freeable:
            return None
        if self.used[t] - freeable + n > self.capacity[t]:
            return iter(())
        if not cross:
            return own
        # Other shares' jobs together in victim order (merging one list would only slow it down).
        others = cross[0] if len(cross) == 1 else heapq.merge(*cross)
        return chain(others, own)

    def _instances_below(self, s: int, t: int, priority: int) -> int:
        return sum(c for p, c in self.running_by_priority[s][t].items() if p < priority)

    def _preempt(self, victim: int, preemptor: int, now: float, preempted: list[int]) -> None:
        s, t, n = self.share[victim], self.type[victim], self.count[victim]
        held = now - self.start_time[victim]
        startup_spent = min(held, self.startup)
        progress = self.saved[victim] + max(0.0, held - self.startup)
        interval = self.checkpoint[victim]
        saved = (progress // interval) * interval if interval > 0 else 0.0
        lost = progress - saved
        cause = Cause.CROSS_SHARE if s != self.share[preemptor] else Cause.IN_SHARE
        self.saved[victim] = saved
        self.lost[victim] += lost
        self.preemptions[victim] += 1
        self.attempt[victim] += 1  # its finish event is now stale
        self._remove_running(victim, s, t)
        self._change_usage(now, s, t, -n)
        self._capacity_released(t, owner=s)
        self.totals.preempted(s, t, cause, lost * n, startup_spent * n)
        self.rerun_log.add3(now, s * self.n_types + t, (lost + startup_spent) * n)
        self.preemptions_log.add4(now, victim, preemptor, cause is Cause.CROSS_SHARE)
        self._event(now, victim, EventKind.PREEMPT, cause, preemptor)
        retries = self.retries[victim]
        if 0 <= retries < self.preemptions[victim]:
            self.state[victim] = FAILED
            self.end[victim] = now
            self._event(now, victim, EventKind.FAIL, cause, preemptor)
        else:
            self.state[victim] = RUNNABLE
            self.queued_since[victim] = now
            self._count_pending(victim, now, +1)
            preempted.append(victim)  # considered again from the next round on

    def _start(self, job: int, now: float) -> None:
        s, t, n = self.share[job], self.type[job], self.count[job]
        self._leave_queue(job, now)
        self.state[job] = RUNNING
        self.start_time[job] = now
        if self.first_start[job] != self.first_start[job]:  # nan: never started before
            self.first_start[job] = now
        self.queued[job] += now - self.queued_since[job]
        self._change_usage(now, s, t, n)
        self._add_running(job, s, t)
        self._started(job, s, t)
        end = now + self.startup + (self.duration[job] - self.saved[job])
        heapq.heappush(self.finishes, (end, self.rank[job], self.attempt[job], job))
        self.starts_log.add2(now, job)
        if self.record_events:
            self.events.append((now, job, EventKind.START, None, -1))

    # --- queues ----------------------------------------------------------------------------

    def _queue_key(self, job: int) -> int:
        """Its key in its queues (priority updates take a job out of them before they change it)."""
        return queue_key(self.priority[job], self.arrival[job], self.n_jobs)

    def _job_of(self, key: int) -> int:
        return self.by_arrival[key % self.n_jobs]

    def _head_priority(self, g: _Group) -> int:
        return self.priority[self._job_of(g.jobs[0])]

    def _enqueue(self, job: int, now: float) -> None:
        s, t, n = self.share[job], self.type[job], self.count[job]
        key = self._queue_key(job)
        group = self.groups.get((s, t, n))
        if group is None:
            group = self.groups[(s, t, n)] = _Group(s, t, n, index=len(self.groups))
            self.history.groups.add3(s, t, n)
            self.groups_of[s][t].append(group)
            self.groups_of[s][t].sort(key=lambda g: g.count)
        if not self.strict:
            self._add_waiting_time(group, now)
        insort(group.jobs, key)
        if group.jobs[0] == key:  # a new head: the group's refusal said nothing about it
            self._reopen(group)
        if self.strict:
            queue = self.share_queue[s]
            self._add_share_waiting_time(s, now)
            insort(queue, key)
            if queue[0] == key:
                self.share_refused[s] = False
        self._count_pending(job, now, +1)

    def _requeue(self, jobs: list[int], now: float) -> None:
        """Preempted jobs rejoin their queues at their original submit time's position."""
        for job in jobs:
            if self.state[job] == RUNNABLE:
                self._enqueue(job, now)
                self._count_pending(job, now, -1)  # counted as pending when preempted

    def _dequeue(self, job: int, now: float) -> None:
        s, t, n = self.share[job], self.type[job], self.count[job]
        key = self._queue_key(job)
        group = self.groups[(s, t, n)]
        if not self.strict:
            self._add_waiting_time(group, now)
        del group.jobs[bisect_left(group.jobs, key)]  # the jobs behind a refused head stay refused
        if not group.jobs:
            self.open_groups.discard(group)
        if self.strict:
            queue = self.share_queue[s]
            self._add_share_waiting_time(s, now)
            index = bisect_left(queue, key)
            del queue[index]
            if index == 0:  # a new head, of another size or type: nothing is known about it
                self.share_refused[s] = False
        self._count_pending(job, now, -1)

    def _leave_queue(self, job: int, now: float) -> None:
        """An admitted job leaves the strict queue (the best-effort round removes it from its
        group itself, at the position it already knows)."""
        if self.strict:
            s, t, n = self.share[job], self.type[job], self.count[job]
            key = self._queue_key(job)
            queue = self.share_queue[s]
            self._add_share_waiting_time(s, now)
            del queue[bisect_left(queue, key)]
            jobs = self.groups[(s, t, n)].jobs
            del jobs[bisect_left(jobs, key)]
        self._count_pending(job, now, -1)

    # --- why jobs wait: job-seconds per share and WaitReason, added up whenever a queue changes ---

    def _wait_reason(self, job: int) -> WaitReason:
        s, t = self.share[job], self.type[job]
        return wait_reason(
            self.count[job],
            self.usage[s][t],
            self.quota[s][t],
            self.borrow_limit[s][t],
            self.borrows[s],
            self.used[t],
            self.capacity[t],
        )

    def _add_waiting_time(self, g: _Group, now: float) -> None:
        """best_effort_fifo: every job of a group waits for the reason its head was refused."""
        if g.jobs:
            self.totals.waited[g.share][g.reason] += len(g.jobs) * (now - g.since)
        g.since = now

    def _add_share_waiting_time(self, s: int, now: float) -> None:
        """strict_fifo: the head of a share's queue waits for its own reason, the rest behind it."""
        waiting = len(self.share_queue[s])
        if waiting:
            elapsed = now - self.share_since[s]
            self.totals.waited[s][self.share_reason[s]] += elapsed
            self.totals.waited[s][WaitReason.BEHIND_QUEUE_HEAD] += (waiting - 1) * elapsed
        self.share_since[s] = now

    def _count_pending(self, job: int, now: float, sign: int) -> None:
        s, t = self.share[job], self.type[job]
        self.pending_jobs += sign
        self.pending_instances[s][t] += sign * self.count[job]
        self.pending_log.change3(now, s * self.n_types + t, self.pending_instances[s][t])

    def _add_running(self, job: int, s: int, t: int) -> None:
        key = victim_key(self.priority[job], self.start_time[job], self.rank[job], job)
        self.running_keys[job] = key
        insort(self.running[s][t], key)
        by_priority = self.running_by_priority[s][t]
        by_priority[key[0]] = by_priority.get(key[0], 0) + self.count[job]

    def _remove_running(self, job: int, s: int, t: int) -> None:
        key = self.running_keys[job]
        running = self.running[s][t]
        del running[bisect_left(running, key)]
        self.running_keys[job] = ()
        by_priority = self.running_by_priority[s][t]
        left = by_priority[key[0]] - self.count[job]
        if left:
            by_priority[key[0]] = left
        else:
            del by_priority[key[0]]

    def _event(self, now: float, job: int, kind: EventKind, cause: Cause | None = None, by: int = -1) -> None:
        if self.record_events:
            self.events.append((now, job, kind, cause, by))

    # --- results ---------------------------------------------------------------------------

    def outcomes(self) -> JobOutcomes:
        return JobOutcomes.from_lists(
            state=self.state,
            first_start=self.first_start,
            end=self.end,
            queued=self.queued,
            preemptions=self.preemptions,
            lost=self.lost,
            reason=self.reason,
            ignored_updates=self.ignored_updates,
            history=self.history.finish(strict=self.strict),
        )


class _Totals:
    """Per (share, type) sums that the usage log cannot give: preemptions and rerun cost."""

    def __init__(self, n_shares: int, n_types: int):
        self.startup = [[0.0] * n_types for _ in range(n_shares)]  # instance-seconds, every attempt
        self.lost = [[0.0] * n_types for _ in range(n_shares)]
        self.rerun_startup = [[0.0] * n_types for _ in range(n_shares)]
        self.preemptions = [{Cause.CROSS_SHARE: 0, Cause.IN_SHARE: 0} for _ in range(n_shares)]
        self.waited = [[0.0] * len(WaitReason) for _ in range(n_shares)]  # job-seconds by WaitReason

    def preempted(self, s: int, t: int, cause: Cause, lost: float, startup: float) -> None:
        self.lost[s][t] += lost
        self.startup[s][t] += startup
        self.rerun_startup[s][t] += startup
        self.preemptions[s][cause] += 1
