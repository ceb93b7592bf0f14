"""The discrete-event replay of SEMANTICS.md sections 2-4 and 8-10: one event loop, one
scheduling pass.

Where to look: the rules are functions in ``scheduling.replay.rules``; the state (jobs, accounts, type
pools, shares) is in ``scheduling.replay.state``; the indexes that make a pass fast (queue groups,
running levels) in ``scheduling.replay.state``; fair sharing's victim search in ``scheduling.replay.fair``.
This module holds the event loop and the rounds of a pass; what can make a refused job admissible
again (reopening refused queue groups, fair sharing's memo of refusals) is ``scheduling.replay.refusals``,
which the loop tells what happened. Speed comes from the data structures, not from
shortcuts in the rules: every rule is checked against a literal reference model
(tests/scheduling/reference.py).
"""

from __future__ import annotations

import gc
import heapq
import math
from collections.abc import Callable
from typing import Final

import numpy as np
from librt.vecs import vec
from mypy_extensions import i64

from scheduling.binding import BoundTrace, bind
from scheduling.metrics import UsageLog, compute_metrics
from scheduling.model import Cause, Change, Policy, Queueing, UnschedulableReason
from scheduling.outcomes import JobOutcomes, WaitHistory
from scheduling.replay.calendar import (
    NeverRuns,
    borrow_limit_at,
    capacity_victims,
    change_instants,
)
from scheduling.replay.fair import (
    NO_ROOM_AT_ALL,
    SEARCH_NEEDED,
    count_gpus_exactly,
    lendable_gpus,
)
from scheduling.replay.fair_round import fair_round
from scheduling.replay.fair_search import FairSearch
from scheduling.replay.fair_tree import TreeValues, tree_values
from scheduling.replay.preemption_loops import PreemptionLoops
from scheduling.replay.queues import Queues
from scheduling.replay.quota_tree import QuotaTree, is_tree_policy, quota_tree, tree_limit
from scheduling.replay.records import Records, as_array
from scheduling.replay.refusals import Refusals
from scheduling.replay.rounds import Admission, Rounds
from scheduling.replay.rules import (
    ADMITTED,
    CAPACITY,
    CAUSES,
    CROSS_SHARE,
    FAIR_SHARING,
    IN_SHARE,
    NO_LIMIT,
    NO_PASSING_ROOM,
    NO_ROOM,
    NO_VICTIMS,
    REFUSED,
    instances,
    preemption_cause,
    queue_key,
    rerun_cost,
    retries_exhausted,
    runnable_deadline,
    saved_work,
)
from scheduling.replay.state import (
    CANCELLED,
    FAILED,
    RUNNABLE,
    RUNNING,
    SUCCEEDED,
    UNSCHEDULABLE,
    Account,
    Job,
    ShareState,
    Totals,
    TreeAccount,
    TypePool,
    job_id_order,
)
from scheduling.replay.victims import find_victims, level_after, tree_victim_candidates, victim_candidates
from scheduling.result import EventKind, ReplayResult
from scheduling.trace import Trace

ProgressCallback = Callable[[float], None]

# (Final names: see scheduling.compiled, writing for the compiler.)
heappush: Final = heapq.heappush
heappop: Final = heapq.heappop

# Section 12: a type's mode for a job that accepts several (better first), and what no type gave.
FIT: Final = 0
RECLAIM: Final = 1  # victims found, all in other shares
PREEMPT: Final = 2  # victims found, some in the job's own share
NO_FIT: Final = 3

END_OF_TIME: Final[float] = math.inf

# The progress callback is called at least once per this many steps of the event loop (besides
# each hundredth of the jobs submitted): a Python call per 256 steps costs well under 1%.
PROGRESS_TICK_STEPS: Final = 256


def replay(
    policy: Policy,
    trace: Trace,
    *,
    record_events: bool = False,
    buckets: int = 200,
    progress: ProgressCallback | None = None,
    window: tuple[float, float] | None = None,
) -> ReplayResult:
    """Replay ``trace`` under ``policy``; raises InputError when they do not fit together.
    ``window``: measure the metrics over it instead of the run's own span (see compute_metrics)."""
    bound = bind(policy, trace)
    # The replay makes millions of long-lived objects (jobs, their level and finish entries) and
    # its only reference cycles are the few between shares, accounts and pools: the cycle
    # collector would only walk the jobs again and again (a third of the time at a million jobs).
    collecting = gc.isenabled()
    gc.disable()
    try:
        simulation = _Replay(policy, bound, record_events)
        simulation.run(progress)
        loops = simulation.preemption_loops()
        outcomes = simulation.outcomes()
        log, totals, events = simulation.log, simulation.totals(), simulation.events
        del simulation  # its jobs are most of a replay's memory; the metrics need only the logs
        metrics = compute_metrics(policy, bound, outcomes, log, totals, buckets, window)
        metrics["summary"]["preemption_loops"] = loops
    finally:
        if collecting:
            gc.enable()
    return ReplayResult(policy, trace, outcomes, metrics, events if record_events else None)


def resume(
    policy: Policy, trace: Trace, started_at: np.ndarray, time: float, until: float = math.inf
) -> JobOutcomes:
    """SEMANTICS.md section 11: the replay from a snapshot at ``time`` (T0) instead of from the
    start. Jobs submitted at or before T0 are the snapshot: those with a ``started_at`` (per trace
    row, nan for the others) run from it and hold their instances from T0, their trace duration
    being the work that *remains* (a job whose start-up is not over at T0 is still STARTING);
    the others are RUNNABLE at T0 with their RUNNABLE time counted from their submit time. Later
    jobs arrive as in any replay. The run stops after the last event at or before ``until``
    (jobs not ended then keep the state they had). The policy's calendar must hold no change at
    or before T0 (the caller folds those into the policy). Only the jobs' outcomes are made: a
    forecast reads starts and ends, not the metrics."""
    if any(change.time <= time for change in policy.changes):
        raise ValueError("resume: the policy has changes at or before the snapshot's time")
    bound = bind(policy, trace)
    collecting = gc.isenabled()
    gc.disable()
    try:
        simulation = _Replay(policy, bound, False)
        simulation.until = until
        simulation.resume_at(time, np.asarray(started_at, dtype=np.float64).tolist())
        simulation.run(None)
        return simulation.outcomes()
    finally:
        if collecting:
            gc.enable()


def _trace_order(job: Job) -> int:
    return job.index


class _Replay(Admission):
    def __init__(self, policy: Policy, bound: BoundTrace, record_events: bool):
        self.policy = policy
        self.bound = bound
        self.record_events = record_events
        n_types = len(bound.type_names)
        self.n_types = n_types
        self.startup = float(policy.startup_seconds)
        self.strict = policy.queueing is Queueing.STRICT_FIFO

        # The policy as shares, type pools and their (share, type) accounts.
        types = bound.type_names
        self.shares: list[ShareState] = [ShareState(s, share) for s, share in enumerate(policy.shares)]
        self.pools: list[TypePool] = [
            TypePool(
                t,
                float(policy.instance_types[name].gpus),
                int(policy.capacity.get(name, 0)),
                int(policy.unassigned(name)),
            )
            for t, name in enumerate(types)
        ]
        # Section 13: a policy with cohorts keeps its tree's quotas and usage (scheduling.replay.quota_tree);
        # its accounts fit and bubble usage through it. Without cohorts, sections 3-4 as they are.
        self.tree: QuotaTree | None = quota_tree(policy, types) if is_tree_policy(policy) else None
        tree = self.tree
        self._open_accounts(policy, types)

        self._read_columns(bound)
        n = self.n_jobs
        self.reason: dict[int, UnschedulableReason] = {}  # of UNSCHEDULABLE jobs
        # Section 12: jobs that accept several types; each set's accounts in its share's order.
        self.flavored = bound.has_flavor_lists
        flavor_set = bound.flavor_set if self.flavored else np.zeros(0, np.int64)
        self.flavor_set_of = vec[i64](flavor_set.astype(np.int64))
        self.saw_candidates = False  # a flavor scan met preemption candidates on some type
        # Planned ends: a heap of instants (floats compare faster than event tuples) and the jobs
        # planned to end at each. A preempted job's entry stays and is skipped (its plan changed).
        self.finish_times: list[float] = []
        self.finishing: dict[float, list[Job]] = {}
        self.events: list[tuple] = []
        self.log = UsageLog(n_types)
        self.usage_log: Records = self.log.usage_changes  # (time, share * n_types + type, usage)
        self.rerun_log: Records = self.log.rerun_costs  # (time, share * n_types + type, instance-seconds)
        self.history = WaitHistory.empty()  # per-job timelines: starts, preemptions, wait reasons
        self.starts_log: Records = self.history.starts
        self.preemptions_log: Records = self.history.preemptions
        self.ignored_updates = 0
        # Section 11 (``resume``): the arrivals already placed at T0, and when the run stops.
        self.first_arrival = 0
        self.until = END_OF_TIME

        self._calendar_and_deadlines(policy, types, tree)
        self._fair_sharing(policy)
        count_gpus_exactly(self.pools)  # (share values compare exactly: GPUs in whole units)
        # Section 8 over section 13's tree: a value for every node (None: one cohort, section 8 as is).
        self.fair_tree: TreeValues | None = tree_values(policy, tree, self.pools)
        self.fair_search = FairSearch(policy, self.fair_tree)
        # What can make a refused job admissible again (section 4's reopening, section 8's memo).
        self.refusals = Refusals(self.shares, self.fair, tree, self.by_arrival, n)
        self.loops = PreemptionLoops(self.fair, self.refusals)  # section 8
        self.queues = Queues(
            n, self.strict, self.by_arrival, self.flavor_set_of, bound.flavor_sets, self.refusals,
            self.history, self.log.pending_changes,
        )  # fmt: skip
        # (the rounds are given the replay at each call: held, it would make a cycle that keeps the
        # jobs alive, with the cycle collector off, until the metrics are done)
        self.rounds = Rounds(self.queues, self.refusals, self.shares, tree, self.fair_tree, self.strict, n)

    def _calendar_and_deadlines(self, policy: Policy, types: list[str], tree: QuotaTree | None) -> None:
        # Section 9: the calendar of changes, applied at their instants, and section 6's limits at
        # every instant of it (a job is unschedulable only if it is so at all of them).
        self.type_index = {name: t for t, name in enumerate(types)}
        self.changes = change_instants(policy)
        self.next_change = 0
        self.never_runs = NeverRuns(policy, types, tree, bool(self.changes))
        self.capacity_log: Records = self.log.capacity_changes  # (time, type, capacity)
        self.quota_log: Records = self.log.quota_changes  # (time, share * n_types + type, quota)
        # Section 10: when RUNNABLE jobs run out of time, as a heap of instants and the jobs due at
        # each (a job that started since, or was preempted again, has another deadline: skipped).
        timeout = policy.runnable_timeout_seconds
        self.timeout = math.inf if timeout is None else float(timeout)
        self.deadline_times: list[float] = []
        self.expiring: dict[float, list[Job]] = {}

    def _read_columns(self, bound: BoundTrace) -> None:
        """The trace's job columns, the arrival order and the outcome columns, as native arrays."""
        trace = bound.trace
        # Jobs: their columns in trace order, as native arrays; a job becomes a ``Job`` when it
        # is submitted and leaves ``jobs`` (its outcome written to the outcome columns) when it
        # ends: made and let go in time, the few thousand alive at once reuse each other's memory
        # (a million made up front would be 300 MB).
        self.n_jobs = n = len(trace)
        self.share_of = vec[i64](bound.share.astype(np.int64))
        self.type_of = vec[i64](bound.instance_type.astype(np.int64))
        self.count = vec[i64](trace.instance_count.astype(np.int64))
        self.submit = vec[float](trace.submit_time.astype(np.float64))
        self.duration = vec[float](trace.duration.astype(np.float64))
        self.checkpoint = vec[float](np.nan_to_num(trace.checkpoint_interval, nan=0.0).astype(np.float64))
        self.retries = vec[i64](trace.preemption_retries.astype(np.int64))
        self.priority = vec[i64](trace.priority.astype(np.int64))
        self.rank = vec[i64](bound.id_rank.astype(np.int64))
        # Arrival order, (submit time, job_id): the events' order and the queues' tie-break; a
        # job's queue key holds its place in it.
        order = np.lexsort((bound.id_rank, trace.submit_time))
        self.arrivals = vec[i64](order.astype(np.int64))  # the job at each place
        self.arrival_times = vec[float](trace.submit_time[order].astype(np.float64))
        self.jobs: list[Job | None] = [None] * n  # the jobs submitted and not ended, by index
        self.by_arrival: list[Job | None] = [None] * n  # the same, by arrival place
        # Outcomes, written as each job ends (and at the end for those still waiting).
        self.outcome_state = vec[float](np.zeros(n))
        self.outcome_first_start = vec[float](np.full(n, np.nan))
        self.outcome_end = vec[float](np.full(n, np.nan))
        self.outcome_queued = vec[float](np.zeros(n))
        self.outcome_preemptions = vec[float](np.zeros(n))
        self.outcome_lost = vec[float](np.zeros(n))
        self.outcome_type = vec[float](bound.instance_type.astype(np.float64))  # the last run's type

    def _fair_sharing(self, policy: Policy) -> None:
        """Section 8: fair sharing's strategies and L, the pool's lendable GPUs (changed only by the
        calendar)."""
        self.fair = policy.fair_sharing is not None
        self.lendable_gpus = lendable_gpus(self.pools)

    def _open_accounts(self, policy: Policy, types: list[str]) -> None:
        """Each share's account of each type (a ``TreeAccount`` in a tree of cohorts), with the
        pools' lendable sums and what each borrower could ever borrow (section 6)."""
        n_types = self.n_types
        tree = self.tree
        for share, spec in zip(self.shares, policy.shares, strict=True):
            for t, pool in enumerate(self.pools):
                quota, borrow_limit = int(spec.quota(types[t])), instances(spec.borrow_limit(types[t]))
                lend_limit = instances(spec.lend_limit(types[t]))
                if tree is None:
                    account = Account(share, pool, t, n_types, quota, borrow_limit, lend_limit)
                else:
                    account = TreeAccount(share, pool, t, n_types, quota, borrow_limit, lend_limit, tree)
                    pool.tree = tree
                share.accounts.append(account)
                pool.accounts.append(account)
                pool.lendable += account.lendable(0)
        for pool in self.pools:
            for account in pool.accounts:
                if account.share.borrows:
                    others = sum(other.lendable(0) for other in pool.accounts if other is not account)
                    account.borrowable_ever = pool.unassigned + others

    # --- accounting -----------------------------------------------------------------------

    def _change_usage(self, now: float, account: Account, delta: int) -> None:
        """A real change (a start, finish or preemption), kept in the usage log for the metrics;
        victim searches try changes with ``Account.shift`` alone."""
        round_id = self.rounds.round_id
        if account.round != round_id:  # its first change in this round: keep where it started
            account.round = round_id
            account.usage_at_round_start = account.usage
        self.refusals.on_usage_change(account, delta)
        self.usage_log.change3(now, account.key, account.usage)

    # --- the event loop -------------------------------------------------------------------

    def run(self, progress: ProgressCallback | None) -> None:
        arrival_times = self.arrival_times
        updates = self.bound.trace.updates
        update_order: list[int] = np.argsort(updates.time, kind="stable").tolist()
        update_time: list[float] = updates.time.astype(np.float64).tolist()
        n_jobs = self.n_jobs
        n_updates = len(update_order)
        next_submit = self.first_arrival
        next_update = 0
        report_every = max(1, n_jobs // 100)
        next_report = report_every
        # Also every few hundred steps of the loop, submitted or not: the callback is how a worker
        # proves itself alive (compiled, this loop never lets another thread run), and the steps
        # after the last submission, or between two of a congested trace, can take minutes.
        steps = 0
        next_tick = PROGRESS_TICK_STEPS
        finish_times = self.finish_times
        deadline_times = self.deadline_times
        changes = self.changes
        n_changes = len(changes)
        while True:
            now = min(
                min(
                    arrival_times[next_submit] if next_submit < n_jobs else END_OF_TIME,
                    update_time[update_order[next_update]] if next_update < n_updates else END_OF_TIME,
                ),
                min(
                    finish_times[0] if finish_times else END_OF_TIME,
                    min(
                        changes[self.next_change][0] if self.next_change < n_changes else END_OF_TIME,
                        deadline_times[0] if deadline_times else END_OF_TIME,
                    ),
                ),
            )
            if now == END_OF_TIME or now > self.until:
                break
            # Same instant: finishes, changes of capacity and quotas, submissions, priority
            # updates, cancellations, then one pass.
            # ``happened``: an event, not only stale entries (the planned finish or deadline of a
            # job preempted or started since). With fair sharing a pass runs at events only: the
            # loop rule lets a pass at a new instant preempt in a state that has not changed.
            happened = not self.fair
            if finish_times and finish_times[0] == now:
                heappop(finish_times)
                happened |= self._finish_all(self.finishing.pop(now), now)
            if self.next_change < n_changes and changes[self.next_change][0] == now:
                self._apply_changes(changes[self.next_change][1], now)
                self.next_change += 1
                happened = True
            while next_submit < n_jobs and arrival_times[next_submit] == now:
                self.submit_job(self._arrive(next_submit), now)
                next_submit += 1
                happened = True
            while next_update < n_updates and update_time[update_order[next_update]] == now:
                self.update_priority(update_order[next_update], now)
                next_update += 1
                happened = True
            if deadline_times and deadline_times[0] == now:
                heappop(deadline_times)
                happened |= self._cancel_all(self.expiring.pop(now), now)
            if self.queues.pending_jobs and happened:
                self.scheduling_pass(now)
            steps += 1
            if progress is not None and (next_submit >= next_report or steps >= next_tick):
                progress(next_submit / n_jobs if n_jobs else 1.0)
                next_report = next_submit + report_every
                next_tick = steps + PROGRESS_TICK_STEPS
        # Under a calendar a job may wait for capacity that came and went (section 9: it stays
        # RUNNABLE); without one, a job left pending would be a bug.
        if self.queues.pending_jobs and not self.changes and self.until == END_OF_TIME:
            raise RuntimeError(f"{self.queues.pending_jobs} jobs were left pending with nothing running")

    # --- section 11: the replay from a snapshot ---------------------------------------------------

    def resume_at(self, now: float, started_at: list[float]) -> None:
        """Place the snapshot's jobs (those submitted at or before ``now``) as they are at T0, then
        run T0's pass, unless a finish or cancellation at T0 is due: the event loop then runs it
        after them, in section 4's order."""
        place = 0
        n = self.n_jobs
        while place < n and self.arrival_times[place] <= now:
            job = self._arrive(place)
            start = started_at[job.index]
            if start == start:  # not nan: running at T0
                self._resume_running(job, now, start)
            else:
                self._resume_pending(job, now)
            place += 1
        self.first_arrival = place
        # Running jobs beyond the policy's capacity at T0 go as section 9's capacity preemptions do.
        for pool in self.pools:
            preempted: list[Job] = []
            for victim in capacity_victims(pool):
                self._preempt(victim, None, now, preempted, CAPACITY)
            self.queues.requeue(preempted, now)
        finishing_now = len(self.finish_times) > 0 and self.finish_times[0] == now
        cancelling_now = len(self.deadline_times) > 0 and self.deadline_times[0] == now
        if self.queues.pending_jobs and not finishing_now and not cancelling_now:
            self.scheduling_pass(now)

    def _resume_running(self, job: Job, now: float, started_at: float) -> None:
        """A job running since ``started_at``: its duration becomes the work done by T0 plus what
        remains, so that its end, and the work a preemption loses, follow section 2 as for any
        start (end = max(T0, started_at + startup) + remaining)."""
        job.duration = max(0.0, now - started_at - self.startup) + job.duration
        job.state = RUNNING
        job.start_time = started_at
        job.first_start = started_at
        self._change_usage(now, job.account, job.count)
        job.account.running.add(job)
        self.refusals.on_start(job)
        self._plan_end(job, started_at + self.startup + job.duration)
        self.starts_log.add2(now, job.index)

    def _resume_pending(self, job: Job, now: float) -> None:
        """A job RUNNABLE at T0 since its submit time (section 10's limit counts from it; one that
        ran out before T0 is cancelled at T0)."""
        reason = self._unschedulable(job)
        if reason is not None:
            job.state = UNSCHEDULABLE
            self.reason[job.index] = reason
            self._ended(job)
            return
        job.state = RUNNABLE
        job.queued_since = job.submit
        self._set_deadline(job, job.submit, now)
        self.queues.enqueue(job, now)

    def _arrive(self, place: int) -> Job:
        """The job at this place in arrival order, made as it is submitted."""
        i = self.arrivals[place]
        job = Job(
            i,
            self.shares[self.share_of[i]].accounts[self.type_of[i]],
            self.count[i],
            self.submit[i],
            self.duration[i],
            self.checkpoint[i],
            self.retries[i],
            self.priority[i],
            self.rank[i],
        )
        job.arrival = place
        job.queue_key = queue_key(job.priority, place, self.n_jobs)
        if self.flavored and self.flavor_set_of[i] >= 0:
            job.flavored = True
        self.jobs[i] = job
        self.by_arrival[place] = job
        return job

    def _ended(self, job: Job) -> None:
        """Its outcome is final: written to the columns, and the job let go."""
        self._write_outcome(job)
        self.jobs[job.index] = None
        self.by_arrival[job.arrival] = None

    def _write_outcome(self, job: Job) -> None:
        i = job.index
        self.outcome_state[i] = job.state
        self.outcome_first_start[i] = job.first_start
        self.outcome_end[i] = job.end
        self.outcome_queued[i] = job.queued
        self.outcome_preemptions[i] = job.preemptions
        self.outcome_lost[i] = job.lost
        self.outcome_type[i] = job.account.type

    def submit_job(self, job: Job, now: float) -> None:
        reason = self._unschedulable(job)
        if reason is not None:
            job.state = UNSCHEDULABLE
            self.reason[job.index] = reason
            self._event(now, job, EventKind.UNSCHEDULABLE)
            self._ended(job)
            return
        job.state = RUNNABLE
        job.queued_since = now
        self._set_deadline(job, now, now)
        self.queues.enqueue(job, now)

    def _unschedulable(self, job: Job) -> UnschedulableReason | None:
        """Section 6 (and 9, 13); section 12: only if every accepted type is, with the first one's reason."""
        if job.flavored:
            first: UnschedulableReason | None = None
            for t, account in enumerate(self.queues.flavors_of(job)):
                reason = self.never_runs.reason(job.count, account)
                if reason is None:
                    return None
                if t == 0:
                    first = reason
            return first
        return self.never_runs.reason(job.count, job.account)

    # --- section 10: the time limit in RUNNABLE -------------------------------------------------

    def _set_deadline(self, job: Job, since: float, now: float) -> None:
        """The job is RUNNABLE since ``since`` (submitted or preempted then; a resumed job since its
        submit): it is cancelled if it still is RUNNABLE, without a break, when the limit has passed."""
        if self.timeout == END_OF_TIME:
            return
        deadline = runnable_deadline(since, self.timeout, now)
        job.deadline = deadline
        _add_at(self.expiring, self.deadline_times, deadline, job)

    def _cancel_all(self, jobs: list[Job], now: float) -> bool:
        """The jobs whose limit is up now, in trace order; those that started since, or were
        preempted again (a later deadline), are skipped. Whether any was cancelled."""
        if len(jobs) > 1:
            jobs.sort(key=_trace_order)
        cancelled = False
        for job in jobs:
            if job.state == RUNNABLE and job.deadline == now:
                self.queues.dequeue(job, now)
                job.state = CANCELLED
                job.end = now
                job.queued += now - job.queued_since
                self._event(now, job, EventKind.CANCEL)
                self._ended(job)
                cancelled = True
        return cancelled

    # --- section 9: capacity and quotas over time ---------------------------------------------

    def _apply_changes(self, changes: list[Change], now: float) -> None:
        """The changes of one instant together, then per type the capacity preemptions that make
        the pool valid again; every refusal may be stale after that."""
        touched: list[int] = []
        for change in changes:
            for type_name, count in change.capacity.items():
                t = self.type_index[type_name]
                if t not in touched:
                    touched.append(t)
                if change.share is None:
                    self.pools[t].capacity = int(count)
                    self.capacity_log.add3(now, t, count)
                    continue
                s = self.policy.share_index()[change.share]
                account = self.shares[s].accounts[t]
                account.quota = int(count)
                account.borrow_limit = borrow_limit_at(self.policy.shares[s], type_name, int(count))
                if self.tree is not None:
                    self.tree.set_quota(s, t, account.quota, tree_limit(account.borrow_limit))
                self.quota_log.add3(now, account.key, count)
        touched.sort()
        if self.tree is not None:  # Section 13: SQ, LQ and the cohorts' usage with the new quotas
            for t in touched:
                self.tree.set_capacity(t, self.pools[t].capacity)
            self.tree.recompute()
        for t in touched:
            pool = self.pools[t]
            pool.unassigned = pool.capacity - sum(a.quota for a in pool.accounts)
            pool.borrowed = sum(max(0, a.usage - a.quota) for a in pool.accounts)
            pool.lendable = sum(a.lendable(a.usage) for a in pool.accounts)
            preempted: list[Job] = []
            for victim in capacity_victims(pool):
                self._preempt(victim, None, now, preempted, CAPACITY)
            self.queues.requeue(preempted, now)
        # What depends on capacity and quotas beyond the pools: fair sharing's L.
        self.lendable_gpus = lendable_gpus(self.pools)
        if self.fair_tree is not None:
            self.fair_tree.refresh()
        self.refusals.on_calendar_change([self.pools[t] for t in touched])

    def update_priority(self, update: int, now: float) -> None:
        """UpdateServiceJob: ignored (and counted) for unknown, not yet submitted or ended jobs."""
        index = int(self.bound.update_job[update])
        priority = int(self.bound.trace.updates.priority[update])
        job = self.jobs[index] if index >= 0 else None
        if job is None:  # not submitted yet, or ended: neither RUNNABLE nor RUNNING
            self.ignored_updates += 1
            return
        running = job.state != RUNNABLE
        if running:
            job.account.running.remove(job)
            self._set_priority(job, priority)
            job.account.running.add(job)
        else:
            self.queues.dequeue(job, now)
            self._set_priority(job, priority)
            self.queues.enqueue(job, now)
        self.refusals.on_priority_change(job, running)

    def _set_priority(self, job: Job, priority: int) -> None:
        """A new priority and the queue key that goes with it (the job is out of its queues and
        levels while they change)."""
        job.priority = priority
        job.queue_key = queue_key(priority, job.arrival, self.n_jobs)

    def _finish_all(self, jobs: list[Job], now: float) -> bool:
        """The jobs planned to end now, in job_id order; entries of preempted attempts are skipped
        (a job that ran again and ends now too is listed twice: it ends at the first entry).
        Whether any ended."""
        if len(jobs) > 1:
            jobs.sort(key=job_id_order)
        finished = False
        for job in jobs:
            if job.state == RUNNING and job.planned_end == now:
                self.finish(job, now)
                finished = True
        return finished

    def finish(self, job: Job, now: float) -> None:
        account = job.account
        job.state = SUCCEEDED
        job.end = now
        account.running.remove(job)
        self._change_usage(now, account, -job.count)
        account.startup += min(now - job.start_time, self.startup) * job.count
        self.refusals.on_release(account.pool, owner=account.share)
        if self.record_events:
            self.events.append((now, job.index, EventKind.FINISH, None, -1))
        self._ended(job)

    # --- the scheduling pass (section 4) ---------------------------------------------------

    def scheduling_pass(self, now: float) -> None:
        """Rounds until one admits nothing. A pass's last round refused every queue group at its
        head, so when no group has been reopened since, a pass would admit nothing."""
        if self.fair:
            if self.loops.twice and self.loops.twice_at != now:
                self.loops.new_instant(now)
            while fair_round(self.rounds, self, now, self.lendable_gpus, self.loops):
                pass
            return
        if self.strict:
            while self.rounds.strict_fifo(now, self):
                pass
            return
        while self.refusals.open_groups and self.rounds.best_effort(now, self):
            pass

    # --- what can make a refused job admissible -------------------------------------------

    def try_admit(self, job: Job, now: float, preempted: list[Job], no_candidates: bool = False) -> int:
        """Fit, else preempt, else stay RUNNABLE (section 4, steps 1-3). ``no_candidates``: the
        caller knows there is no preemption candidate, so only the fit is tried."""
        if job.flavored:
            return self._try_admit_flavors(job, now, preempted)
        if job.count <= job.account.headroom():
            self._start(job, now)
            return ADMITTED
        if no_candidates:
            return NO_VICTIMS
        if self.fair:
            if self.loops.twice:  # (a search, told or run, may leave jobs out for the loop rule)
                self.loops.note(job, now)
            refusal = self.fair_search.refusal(job, self.lendable_gpus)
            if refusal != SEARCH_NEEDED:
                return NO_ROOM if refusal == NO_ROOM_AT_ALL else NO_PASSING_ROOM
            chosen = self.fair_search.victims(job, self.lendable_gpus, now if self.loops.twice else math.nan)
            if chosen is None:
                return REFUSED
            for victim, cause in chosen:
                self._preempt(victim, job, now, preempted, cause)
            self._start(job, now)
            return ADMITTED
        candidates = victim_candidates(job) if self.tree is None else tree_victim_candidates(job, self.tree)
        if candidates is None:
            return NO_VICTIMS
        victims = find_victims(job, candidates)
        if victims is None:
            return REFUSED
        share = job.account.share
        for victim in victims:
            self._preempt(victim, job, now, preempted, preemption_cause(victim.account.share is share, True))
        self._start(job, now)
        return ADMITTED

    # --- section 12: several flavors per job, with fallback ---------------------------------

    def _try_admit_flavors(self, job: Job, now: float, preempted: list[Job]) -> int:
        """Kueue's flavor assigner: scan the job's types in its share's flavor order, each with its
        mode and borrowing level; stop at the first the fungibility does not send past, else take
        the best one seen; admit on it (preempting its victims) or, every type no_fit, refuse."""
        waiting_on = job.account
        share = waiting_on.share
        n = job.count
        chosen: Account | None = None
        chosen_victims: list[tuple[Job, int]] = []
        best_rank = NO_LIMIT
        self.saw_candidates = False
        for account in self.queues.flavors_of(job):
            job.account = account  # (the searches read the job's account)
            victims: list[tuple[Job, int]] = []
            freed = 0  # of its own share's usage of the type, by its victims
            if n <= account.headroom():
                mode = FIT
            else:
                found = self._victims_on(job, now)
                if found is None:
                    continue  # no_fit
                victims = found
                mode = RECLAIM
                for victim, _ in victims:
                    if victim.account.share is share:
                        mode = PREEMPT
                        freed += victim.count
            # Its borrowing level: whether its share's usage stays within quota once it is
            # admitted, its victims gone (Kueue's borrowing after the preemption simulation).
            if self.tree is None:
                level = 0 if account.usage - freed + n <= account.quota else 1
            else:
                level = level_after(self.tree, account, n, victims)
            go_on = (mode != FIT and share.try_next_on_preempt) or (level > 0 and share.try_next_on_borrow)
            if not go_on:
                chosen, chosen_victims = account, victims
                break
            # (levels are heights in the tree of cohorts: far fewer than 1024)
            rank = level * 3 + mode if share.preemption_first else mode * 1024 + level
            if rank < best_rank:  # (ties: the earlier type)
                best_rank, chosen, chosen_victims = rank, account, victims
        job.account = waiting_on
        if chosen is None:
            # No candidate on any type: releases that cannot make one fit, or give it candidates,
            # leave it refused (``Refusals.on_release``, per type).
            return REFUSED if self.saw_candidates or self.fair else NO_VICTIMS
        for victim, cause in chosen_victims:
            self._preempt(victim, job, now, preempted, cause)
        self.queues.leave_queue(job, now)
        job.account = chosen
        self._begin(job, now)
        return ADMITTED

    def _victims_on(self, job: Job, now: float) -> list[tuple[Job, int]] | None:
        """The victims section 4's (or 8's) search finds for the job on its account's type, with
        their causes; None when it finds none. Nothing is changed but the loop findings: the search
        of every type scanned is a search that may leave a job out for section 8's loop rule."""
        if self.fair:
            if self.loops.twice:
                self.loops.note(job, now)
            if self.fair_search.refusal(job, self.lendable_gpus) != SEARCH_NEEDED:
                return None
            return self.fair_search.victims(job, self.lendable_gpus, now if self.loops.twice else math.nan)
        candidates = victim_candidates(job) if self.tree is None else tree_victim_candidates(job, self.tree)
        if candidates is None:
            return None
        self.saw_candidates = True
        victims = find_victims(job, candidates)
        if victims is None:
            return None
        share = job.account.share
        return [(victim, preemption_cause(victim.account.share is share, True)) for victim in victims]

    # --- preemption (section 4, step 2) ----------------------------------------------------

    def _preempt(
        self, victim: Job, preemptor: Job | None, now: float, preempted: list[Job], cause: int
    ) -> None:
        """``cause``: IN_SHARE, CROSS_SHARE, FAIR_SHARING, or CAPACITY (no preemptor)."""
        self.loops.on_preemption(victim, now)
        account = victim.account
        share = account.share
        n = victim.count
        held = now - victim.start_time
        startup_spent = min(held, self.startup)
        progress = victim.saved + max(0.0, held - self.startup)
        saved = saved_work(progress, victim.checkpoint)
        lost = progress - saved
        victim.saved = saved
        victim.lost += lost
        victim.preemptions += 1
        victim.planned_end = math.nan  # its finish entry is now stale
        account.running.remove(victim)
        self._change_usage(now, account, -n)
        self.refusals.on_release(account.pool, owner=share)
        account.lost += lost * n
        account.startup += startup_spent * n
        account.rerun_startup += startup_spent * n
        if cause == CROSS_SHARE:
            share.cross_share_preemptions += 1
        elif cause == IN_SHARE:
            share.in_share_preemptions += 1
        elif cause == FAIR_SHARING:
            share.fair_sharing_preemptions += 1
        else:
            share.capacity_preemptions += 1
        self.rerun_log.add3(now, account.key, rerun_cost(lost, startup_spent, n))
        self.preemptions_log.add4(now, victim.index, -1 if preemptor is None else preemptor.index, cause)
        failed = retries_exhausted(victim.retries, victim.preemptions)
        if self.record_events:
            self._event(now, victim, EventKind.PREEMPT, CAUSES[cause], preemptor)
            if failed:
                self._event(now, victim, EventKind.FAIL, CAUSES[cause], preemptor)
        if failed:
            victim.state = FAILED
            victim.end = now
            self._ended(victim)
        else:
            victim.state = RUNNABLE
            victim.queued_since = now
            self._set_deadline(victim, now, now)
            self.queues.count_pending(victim, now, +1)
            preempted.append(victim)  # considered again from the next round on

    def preemption_loops(self) -> dict:
        """RESULT.json's ``summary.preemption_loops``."""
        names = [share.name for share in self.policy.shares]
        return self.loops.summary(self.bound.trace.job_id, names, list(self.share_of))

    def _start(self, job: Job, now: float) -> None:
        self.queues.leave_queue(job, now)
        self._begin(job, now)

    def _begin(self, job: Job, now: float) -> None:
        """The job, out of its queues, starts on its account's type."""
        job.state = RUNNING
        job.start_time = now
        if job.first_start != job.first_start:  # nan: never started before
            job.first_start = now
        job.queued += now - job.queued_since
        self._change_usage(now, job.account, job.count)
        job.account.running.add(job)
        self.refusals.on_start(job)
        self._plan_end(job, now + self.startup + (job.duration - job.saved))
        self.starts_log.add2(now, job.index)
        if self.record_events:
            self.events.append((now, job.index, EventKind.START, None, -1))

    def _plan_end(self, job: Job, end: float) -> None:
        """The job, just started, ends at ``end`` unless preempted (then its entry here is skipped)."""
        job.planned_end = end
        _add_at(self.finishing, self.finish_times, end, job)

    def _event(
        self, now: float, job: Job, kind: EventKind, cause: Cause | None = None, by: Job | None = None
    ) -> None:
        if self.record_events:
            self.events.append((now, job.index, kind, cause, -1 if by is None else by.index))

    # --- results ---------------------------------------------------------------------------

    def outcomes(self) -> JobOutcomes:
        for job in self.jobs:  # those that never ended (section 9: waiting for capacity)
            if job is not None:
                self._write_outcome(job)
        return JobOutcomes.from_columns(
            state=as_array(self.outcome_state),
            first_start=as_array(self.outcome_first_start),
            end=as_array(self.outcome_end),
            queued=as_array(self.outcome_queued),
            preemptions=as_array(self.outcome_preemptions),
            lost=as_array(self.outcome_lost),
            reason=self.reason,
            ignored_updates=self.ignored_updates,
            history=self.history.finish(strict=self.strict),
            instance_type=_run_types(
                self.outcome_type, self.outcome_first_start, self.bound.flavor_set, self.flavored
            ),
        )

    def totals(self) -> Totals:
        """The per-share sums, once the groups' waiting time is settled into them."""
        for g in self.queues.groups:
            self.queues.settle_waiting_time(g)
        return Totals(self.shares)


def _add_at(jobs_at: dict[float, list[Job]], times: list[float], time: float, job: Job) -> None:
    """The job joins those due at ``time`` (planned ends, RUNNABLE deadlines): a list per instant,
    the instants in a heap, so that jobs due at one instant are handled together."""
    due = jobs_at.get(time)
    if due is None:
        jobs_at[time] = [job]
        heappush(times, time)
    else:
        due.append(job)


def _run_types(
    outcome_type: vec[float], first_start: vec[float], flavor_set: np.ndarray, flavored: bool
) -> np.ndarray:
    """Each job's last run's type; -1 for a job that accepts several (``flavor_set``) and never ran."""
    types = as_array(outcome_type).astype(np.int16)  # (a copy)
    if flavored:
        never_ran = np.isnan(as_array(first_start)) & (flavor_set >= 0)
        types[never_ran] = -1
    return types
