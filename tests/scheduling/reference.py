"""A deliberately naive replay written line by line from SEMANTICS.md sections 2-4, to check the engine.

Slow on purpose: one loop over time instants, every round re-sorts every pending job and every
check recomputes usage from scratch. Each rule is one function named after it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from scheduling.model import Policy, Share, Strategy
from scheduling.trace import NO_TYPE, Trace

INF = math.inf


@dataclass
class Job:
    index: int
    job_id: str
    share: str
    type: str
    count: int
    duration: float
    priority: int
    submit: float
    checkpoint: float | None
    retries: int | None
    state: str = "PENDING_SUBMIT"  # not submitted yet
    saved: float = 0.0  # checkpointed work, kept across preemptions
    started_at: float | None = None
    end_at: float | None = None
    runnable_since: float | None = None
    first_start: float | None = None
    end: float | None = None
    preemptions: int = 0
    lost: float = 0.0
    queued: float = 0.0
    reason: str | None = None

    @property
    def holds_capacity(self) -> bool:
        return self.state in ("STARTING", "RUNNING")


class ReferenceReplay:
    def __init__(self, policy: Policy, trace: Trace):
        self.policy = policy
        self.shares: dict[str, Share] = {s.name: s for s in policy.shares}
        self.jobs = [self._job(trace, i) for i in range(len(trace))]
        self.numeric_ids = all(_is_int(job.job_id) for job in self.jobs)
        self.updates = [
            (float(trace.updates.time[i]), trace.updates.job_id[i], int(trace.updates.priority[i]))
            for i in range(len(trace.updates))
        ]
        self.events: list[dict[str, Any]] = []
        self.ignored_updates = 0

    def _job(self, trace: Trace, i: int) -> Job:
        code = int(trace.instance_type[i])
        if code == NO_TYPE:
            assert len(self.policy.capacity) == 1, "instance_type omitted but the pool has several types"
            type_name = next(iter(self.policy.capacity))
        else:
            type_name = trace.type_names[code]
        checkpoint = float(trace.checkpoint_interval[i])
        retries = int(trace.preemption_retries[i])
        return Job(
            index=i,
            job_id=trace.job_id[i],
            share=trace.share_names[int(trace.share[i])],
            type=type_name,
            count=int(trace.instance_count[i]),
            duration=float(trace.duration[i]),
            priority=int(trace.priority[i]),
            submit=float(trace.submit_time[i]),
            checkpoint=None if math.isnan(checkpoint) else checkpoint,
            retries=None if retries < 0 else retries,
        )

    # -- section 1/3: limits and accounting ---------------------------------------------------------

    def quota(self, share: str, t: str) -> int:
        return self.shares[share].capacity.get(t, 0)

    def borrow_limit(self, share: str, t: str) -> float:
        """LEND_AND_BORROW only: borrowing_limit, else floor(quota * percent / 100); -1 = unlimited."""
        s = self.shares[share]
        if s.strategy is not Strategy.LEND_AND_BORROW:
            return 0
        if s.borrowing_limit is not None:
            return s.borrowing_limit.get(t, INF)
        if s.borrow_limit_percent is None or s.borrow_limit_percent == -1:
            return INF
        return (self.quota(share, t) * s.borrow_limit_percent) // 100

    def lending_limit(self, share: str, t: str) -> float:
        s = self.shares[share]
        if s.lending_limit is None:
            return INF
        return s.lending_limit.get(t, INF)

    def unassigned(self, t: str) -> int:
        return self.policy.capacity.get(t, 0) - sum(self.quota(name, t) for name in self.shares)

    def usage(self, share: str, t: str, holding: list[Job]) -> int:
        return sum(j.count for j in holding if j.share == share and j.type == t)

    def borrowed(self, share: str, t: str, holding: list[Job]) -> int:
        return max(0, self.usage(share, t, holding) - self.quota(share, t))

    def lendable(self, share: str, t: str, holding: list[Job]) -> float:
        if self.shares[share].strategy is Strategy.RESERVE:
            return 0
        idle = max(0, self.quota(share, t) - self.usage(share, t, holding))
        return min(self.lending_limit(share, t), idle)

    def borrowing_invariant(self, t: str, holding: list[Job]) -> bool:
        total_borrowed = sum(self.borrowed(name, t, holding) for name in self.shares)
        total_lendable = sum(self.lendable(name, t, holding) for name in self.shares)
        return total_borrowed <= self.unassigned(t) + total_lendable

    def holding(self) -> list[Job]:
        return [j for j in self.jobs if j.holds_capacity]

    # -- section 4: the scheduling pass --------------------------------------------------------------

    def fits(self, job: Job, holding: list[Job]) -> bool:
        """Fit: admitting ``job`` on top of ``holding`` keeps pool, share limit and borrowing invariant."""
        after = holding + [job]
        t = job.type
        if sum(j.count for j in after if j.type == t) > self.policy.capacity.get(t, 0):
            return False
        if self.usage(job.share, t, after) > self.quota(job.share, t) + self.borrow_limit(job.share, t):
            return False
        return self.borrowing_invariant(t, after)

    def id_key(self, job: Job) -> Any:
        """Integer ids compare as numbers, otherwise as strings."""
        return int(job.job_id) if self.numeric_ids else job.job_id

    def round_order(self, pending: list[Job]) -> list[Job]:
        """Not needing to borrow first (u + n <= q at round start), priority, submit time, job_id."""
        holding = self.holding()

        def needs_to_borrow(j: Job) -> bool:
            return self.usage(j.share, j.type, holding) + j.count > self.quota(j.share, j.type)

        return sorted(pending, key=lambda j: (needs_to_borrow(j), -j.priority, j.submit, self.id_key(j)))

    def share_order_key(self, job: Job) -> tuple:
        return (-job.priority, job.submit, self.id_key(job))

    def strict_fifo_heads(self, pending: list[Job]) -> list[Job]:
        """strict_fifo: a round's candidates are each share's first pending job (priority, submit time,
        job_id) as the round starts, at most one per share (Kueue's heads() per scheduling cycle). A share
        whose head is admitted offers its next job in the next round; a head that is not admitted blocks
        its share for this round; a job preempted during the round was not pending at its start."""
        heads: dict[str, Job] = {}
        for job in sorted(pending, key=self.share_order_key):
            heads.setdefault(job.share, job)
        return list(heads.values())

    def reclaim_allows(self, job: Job, victim: Job) -> bool:
        reclaim = self.shares[job.share].reclaim.value
        return reclaim == "any" or (reclaim == "lower_priority" and victim.priority < job.priority)

    def in_share_preemption_allows(self, job: Job, victim: Job) -> bool:
        rule = self.shares[job.share].in_share_preemption.value
        if rule == "never":
            return False
        if victim.priority < job.priority:
            return True
        return rule == "lower_or_newer_equal_priority" and victim.priority == job.priority and (
            victim.submit > job.submit
        )

    def preemption_candidates(self, job: Job) -> list[Job]:
        holding = self.holding()
        within_quota = self.usage(job.share, job.type, holding) + job.count <= self.quota(job.share, job.type)
        candidates = []
        for v in holding:
            if v.type != job.type:
                continue
            if v.share != job.share:
                borrowing = self.borrowed(v.share, v.type, holding) > 0
                if within_quota and borrowing and self.reclaim_allows(job, v):
                    candidates.append(v)
            elif self.in_share_preemption_allows(job, v):
                candidates.append(v)
        return candidates

    def victim_order(self, job: Job, candidates: list[Job]) -> list[Job]:
        """Other shares' jobs first, lowest priority, most recently started, job_id descending."""
        by_id_desc = sorted(candidates, key=self.id_key, reverse=True)
        return sorted(by_id_desc, key=lambda v: (v.share == job.share, v.priority, -v.started_at))

    def select_victims(self, job: Job) -> list[Job] | None:
        """Take candidates in order until the job fits, then drop (walking backwards) those not needed."""
        taken: list[Job] = []
        fitted = False
        for v in self.victim_order(job, self.preemption_candidates(job)):
            remaining = [h for h in self.holding() if h not in taken]
            if v.share != job.share and self.borrowed(v.share, v.type, remaining) == 0:
                continue  # a reclaim candidate stops being one once its share is no longer borrowing
            taken.append(v)
            if self.fits(job, [h for h in remaining if h is not v]):
                fitted = True
                break
        if not fitted:
            return None  # never fits: preempt nobody
        for v in reversed(list(taken)):
            without_v = [x for x in taken if x is not v]
            if self.fits(job, [h for h in self.holding() if h not in without_v]):
                taken = without_v
        return taken

    def preempt(self, victim: Job, now: float, by: Job) -> None:
        held = now - victim.started_at
        startup = self.policy.startup_seconds
        progress = victim.saved + max(0.0, held - startup)
        saved = math.floor(progress / victim.checkpoint) * victim.checkpoint if victim.checkpoint else 0.0
        victim.lost += progress - saved
        victim.saved = saved
        victim.preemptions += 1
        cause = "cross_share" if victim.share != by.share else "in_share"
        self.event(now, victim, "preempt", cause, by.job_id)
        if victim.retries is not None and victim.preemptions > victim.retries:
            victim.state, victim.end = "FAILED", now
            self.event(now, victim, "fail", cause, by.job_id)  # the fail repeats the preemption's cause
        else:
            victim.state, victim.runnable_since = "RUNNABLE", now
        victim.started_at = victim.end_at = None

    def start(self, job: Job, now: float) -> None:
        job.queued += now - job.runnable_since
        # STARTING and RUNNING both hold capacity; progress is derived from started_at when preempted
        job.state = "STARTING" if self.policy.startup_seconds > 0 else "RUNNING"
        job.started_at = now
        job.end_at = now + self.policy.startup_seconds + (job.duration - job.saved)
        if job.first_start is None:
            job.first_start = now
        self.event(now, job, "start")

    def run_round(self, now: float) -> bool:
        pending = [j for j in self.jobs if j.state == "RUNNABLE"]
        if self.policy.queueing.value == "strict_fifo":
            pending = self.strict_fifo_heads(pending)
        started: list[Job] = []
        for job in self.round_order(pending):
            if self.fits(job, self.holding()):
                self.start(job, now)
                started.append(job)
                continue
            victims = self.select_victims(job)
            if victims is not None:
                for v in victims:
                    self.preempt(v, now, job)
                self.start(job, now)
                started.append(job)
        return bool(started)

    def scheduling_pass(self, now: float) -> None:
        for _ in range(100_000):
            if not self.run_round(now):
                return
        raise AssertionError(f"rounds never stopped admitting at t={now}")

    # -- section 2/6: submission, unschedulable jobs, priority updates -------------------------------

    def unschedulable_reason(self, job: Job) -> str | None:
        t, share = job.type, job.share
        if job.count > self.policy.capacity.get(t, 0):
            return "SERVICE_ENVIRONMENT_MAX_RESOURCE"
        q = self.quota(share, t)
        if self.shares[share].strategy is not Strategy.LEND_AND_BORROW:
            return "QUOTA_MANAGEMENT_LIMIT_EXCEEDED" if job.count > q else None
        borrowable = self.unassigned(t) + sum(
            min(self.lending_limit(name, t), self.quota(name, t))
            for name, s in self.shares.items()
            if name != share and s.strategy is not Strategy.RESERVE
        )
        if job.count > q + min(self.borrow_limit(share, t), borrowable):
            return "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
        return None

    def submit(self, job: Job, now: float) -> None:
        job.reason = self.unschedulable_reason(job)
        if job.reason is not None:
            job.state = "UNSCHEDULABLE"
            self.event(now, job, "unschedulable")
        else:
            job.state, job.runnable_since = "RUNNABLE", now

    def apply_priority_update(self, job_id: str, priority: int) -> None:
        job = next((j for j in self.jobs if j.job_id == job_id), None)
        if job is None or job.state not in ("RUNNABLE", "STARTING", "RUNNING"):
            self.ignored_updates += 1  # unknown, not submitted yet, ended or unschedulable
        else:
            job.priority = priority

    def finish(self, job: Job, now: float) -> None:
        job.state, job.end = "SUCCEEDED", now
        job.started_at = job.end_at = None
        self.event(now, job, "finish")

    # -- the loop over time instants --------------------------------------------------------------

    def next_instant(self) -> float | None:
        """The next time something happens; the same instant again when a job just admitted ends at
        once (zero work and no start-up): its finish then gets a pass of its own."""
        times = [j.submit for j in self.jobs if j.state == "PENDING_SUBMIT"]
        times += [u[0] for i, u in enumerate(self.updates) if i not in self.applied_updates]
        times += [j.end_at for j in self.jobs if j.holds_capacity]
        return min(times) if times else None

    def run(self) -> dict[str, Any]:
        self.applied_updates: set[int] = set()
        now = self.next_instant()
        while now is not None:
            for job in self.jobs:  # 1. finishes
                if job.holds_capacity and job.end_at <= now:
                    self.finish(job, now)
            for job in self.jobs:  # 2. submissions
                if job.state == "PENDING_SUBMIT" and job.submit <= now:
                    self.submit(job, now)
            for i, (time, job_id, priority) in enumerate(self.updates):  # 3. priority updates
                if i not in self.applied_updates and time <= now:
                    self.applied_updates.add(i)
                    self.apply_priority_update(job_id, priority)
            self.scheduling_pass(now)  # 4. one pass
            now = self.next_instant()
        return {
            "jobs": [self.job_record(j) for j in self.jobs],
            "events": self.events,
            "ignored_priority_updates": self.ignored_updates,
        }

    def event(self, now: float, job: Job, kind: str, cause: str | None = None, by: str | None = None) -> None:
        self.events.append({"time": now, "job_id": job.job_id, "event": kind, "cause": cause, "by": by})

    @staticmethod
    def job_record(j: Job) -> dict[str, Any]:
        return {
            "job_id": j.job_id,
            "share": j.share,
            "state": j.state,
            "first_start": j.first_start,
            "end": j.end,
            "wait": None if j.first_start is None else j.first_start - j.submit,
            "queued": j.queued,
            "preemptions": j.preemptions,
            "lost_seconds": j.lost,
            "reason": j.reason,
        }


def reference_replay(policy: Policy, trace: Trace) -> dict[str, Any]:
    """Replay ``trace`` under ``policy``: {"jobs": [...], "events": [...], "ignored_priority_updates": n}."""
    return ReferenceReplay(policy, trace).run()


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True
