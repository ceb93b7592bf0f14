"""A deliberately naive replay written line by line from SEMANTICS.md sections 2-4, 8-10 and 12, to
check the engine.

Slow on purpose: one loop over time instants, every round re-sorts every pending job and every
check recomputes usage (and capacity and quotas, from the calendar of changes) from scratch. Share
values are exact fractions (weights and GPUs as their decimal text says: 0.1 is 1/10). Each rule is
one function named after it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduling.model import FairStrategy, Policy, Share, Strategy
from scheduling.trace import NO_TYPE, Trace

INF = math.inf


class NeverSettles(AssertionError):
    """The pass at one instant admits for ever. Section 8's loop rule (a job preempted twice at an
    instant is no candidate there again) makes every pass end, so this is a bug of the model."""


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
    preempted_at: float | None = None  # the instant of its last preemption
    preempted_here: int = 0  # its preemptions at that instant
    # Section 12: the types it accepts, in its share's flavor order; ``type`` is the one it runs or
    # last ran on (the first accepted while it never ran).
    accepted: list[str] | None = None
    ran: bool = False

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
        self.loop_findings: list[dict[str, Any]] = []  # section 8's preemption loops, in order
        self.now = -INF  # the instant being replayed: capacity and quotas are those in force then

    def _job(self, trace: Trace, i: int) -> Job:
        code = int(trace.instance_type[i])
        if code == NO_TYPE:
            assert len(self.policy.capacity) == 1, "instance_type omitted but the pool has several types"
            type_name = next(iter(self.policy.capacity))
        else:
            type_name = trace.type_names[code]
        share = trace.share_names[int(trace.share[i])]
        accepted = [type_name]
        if type_name not in self.policy.instance_types and "|" in type_name:
            # Section 12: "h100|a100" accepts both; the share's flavor_order (default: the policy's
            # instance_types order, unlisted types after the listed ones) decides the scan's order.
            names = {part.strip() for part in type_name.split("|")}
            listed = list(self.shares[share].flavor_order or ())
            order = listed + [t for t in self.policy.instance_types if t not in listed]
            accepted = [t for t in order if t in names]
        checkpoint = float(trace.checkpoint_interval[i])
        retries = int(trace.preemption_retries[i])
        return Job(
            index=i,
            job_id=trace.job_id[i],
            share=share,
            type=accepted[0],
            accepted=accepted,
            count=int(trace.instance_count[i]),
            duration=float(trace.duration[i]),
            priority=int(trace.priority[i]),
            submit=float(trace.submit_time[i]),
            checkpoint=None if math.isnan(checkpoint) else checkpoint,
            retries=None if retries < 0 else retries,
        )

    # -- section 9: capacity and quotas in force at the current instant -----------------------------

    def capacity(self, t: str) -> int:
        """The pool's capacity of ``t`` now: the base, then every pool change dated at or before now."""
        value = self.policy.capacity.get(t, 0)
        for change in self.policy.changes:
            if change.time <= self.now and change.share is None and t in change.capacity:
                value = change.capacity[t]
        return value

    def quota(self, share: str, t: str) -> int:
        """A share's quota of ``t`` now: its base, then every change of that share dated at or before now."""
        value = self.shares[share].capacity.get(t, 0)
        for change in self.policy.changes:
            if change.time <= self.now and change.share == share and t in change.capacity:
                value = change.capacity[t]
        return value

    @contextmanager
    def as_of(self, time: float) -> Iterator[None]:
        """Look at the policy as it stands at another instant (for section 6 under a calendar)."""
        saved, self.now = self.now, time
        try:
            yield
        finally:
            self.now = saved

    def calendar_instants(self) -> list[float]:
        """One instant per distinct state of the calendar: before any change, then each change time."""
        return [-INF] + sorted({c.time for c in self.policy.changes})

    # -- section 1/3: limits and accounting ---------------------------------------------------------

    def types(self) -> list[str]:
        return list(self.policy.instance_types)

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
        return self.capacity(t) - sum(self.quota(name, t) for name in self.shares)

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

    def pool_usage(self, t: str, holding: list[Job]) -> int:
        return sum(j.count for j in holding if j.type == t)

    def fits(self, job: Job, holding: list[Job]) -> bool:
        """Fit: admitting ``job`` on top of ``holding`` keeps pool, share limit and borrowing invariant."""
        after = holding + [job]
        t = job.type
        if self.pool_usage(t, after) > self.capacity(t):
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
            # Section 12 (the engine's choice): several types need to borrow only if every one would.
            return all(self.usage(j.share, t, holding) + j.count > self.quota(j.share, t) for t in j.accepted)

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

    def preempt(self, victim: Job, now: float, cause: str, by: str | None) -> None:
        held = now - victim.started_at
        startup = self.policy.startup_seconds
        progress = victim.saved + max(0.0, held - startup)
        saved = math.floor(progress / victim.checkpoint) * victim.checkpoint if victim.checkpoint else 0.0
        victim.lost += progress - saved
        victim.saved = saved
        victim.preemptions += 1
        if victim.preempted_at == now:
            victim.preempted_here += 1
        else:
            victim.preempted_at, victim.preempted_here = now, 1
        self.event(now, victim, "preempt", cause, by)
        if victim.retries is not None and victim.preemptions > victim.retries:
            victim.state, victim.end = "FAILED", now
            self.event(now, victim, "fail", cause, by)  # the fail repeats the preemption's cause
        else:
            victim.state, victim.runnable_since = "RUNNABLE", now
        victim.started_at = victim.end_at = None

    def start(self, job: Job, now: float) -> None:
        job.queued += now - job.runnable_since
        # STARTING and RUNNING both hold capacity; progress is derived from started_at when preempted
        job.state = "STARTING" if self.policy.startup_seconds > 0 else "RUNNING"
        job.started_at = now
        job.ran = True
        job.end_at = now + self.policy.startup_seconds + (job.duration - job.saved)
        if job.first_start is None:
            job.first_start = now
        self.event(now, job, "start")

    def consider(self, job: Job, now: float) -> bool:
        """Steps 1-3 for one candidate: fit, else preempt (section 4's way or section 8's), else wait."""
        if len(job.accepted) > 1:
            return self.consider_flavors(job, now)
        if self.fits(job, self.holding()):
            self.start(job, now)
            return True
        if self.fair_sharing_on():
            chosen = self.fair_victims(job)
        else:
            victims = self.select_victims(job)
            chosen = None if victims is None else [
                (v, "in_share" if v.share == job.share else "cross_share") for v in victims
            ]
        if chosen is None:
            return False
        for victim, cause in chosen:
            self.preempt(victim, now, cause, job.job_id)
        self.start(job, now)
        return True

    # -- section 12: several flavors per job, with fallback ----------------------------------------------

    MODES = ("fit", "reclaim", "preempt")  # better first; no_fit is never remembered

    def flavor_mode(self, job: Job) -> tuple[str, list[tuple[Job, str]]]:
        """A type's mode (the job's ``type`` set to it): fit, else reclaim (victims all in other shares),
        else preempt (some in its own share), else no_fit; with the victims."""
        if self.fits(job, self.holding()):
            return "fit", []
        if self.fair_sharing_on():
            chosen = self.fair_victims(job)
        else:
            victims = self.select_victims(job)
            chosen = None if victims is None else [
                (v, "in_share" if v.share == job.share else "cross_share") for v in victims
            ]
        if chosen is None:
            return "no_fit", []
        if any(v.share == job.share for v, _ in chosen):
            return "preempt", chosen
        return "reclaim", chosen

    def consider_flavors(self, job: Job, now: float) -> bool:
        """Scan the accepted types in flavor order from the first; stop at a type unless it is no_fit,
        or reclaim/preempt with when_can_preempt TryNextFlavor, or borrowing (level 1) with
        when_can_borrow TryNextFlavor; else remember the best seen and, after the last, use it."""
        fungibility = self.shares[job.share].flavor_fungibility
        try_next_borrow = fungibility.when_can_borrow.value == "TryNextFlavor"
        try_next_preempt = fungibility.when_can_preempt.value == "TryNextFlavor"
        preemption_first = fungibility.preference.value == "PreemptionOverBorrowing"
        was = job.type
        best: tuple | None = None  # (key, index, type, victims)
        chosen: tuple[str, list[tuple[Job, str]]] | None = None
        for index, t in enumerate(job.accepted):
            job.type = t
            mode, victims = self.flavor_mode(job)
            if mode == "no_fit":
                continue
            # borrowing level: 0 if the share's usage of t stays within its quota once admitted
            # (its victims gone), else 1
            after = [h for h in self.holding() if h not in [v for v, _ in victims]] + [job]
            level = 0 if self.usage(job.share, t, after) <= self.quota(job.share, t) else 1
            go_on = (mode != "fit" and try_next_preempt) or (level > 0 and try_next_borrow)
            if not go_on:
                chosen = (t, victims)
                break
            rank = self.MODES.index(mode)
            key = (level, rank) if preemption_first else (rank, level)
            if best is None or (key, index) < best[:2]:
                best = (key, index, t, victims)
        if chosen is None and best is not None:
            chosen = (best[2], best[3])
        if chosen is None:
            job.type = was
            return False
        job.type = chosen[0]
        for victim, cause in chosen[1]:
            self.preempt(victim, now, cause, job.job_id)
        self.start(job, now)
        return True

    def run_round(self, now: float) -> bool:
        pending = [j for j in self.jobs if j.state == "RUNNABLE"]
        if self.policy.queueing.value == "strict_fifo":
            pending = self.strict_fifo_heads(pending)
        admitted = False
        if self.fair_sharing_on():
            remaining = list(pending)
            while remaining:
                job = min(remaining, key=self.fair_admission_key)  # values change as the round admits
                remaining.remove(job)
                admitted |= self.consider(job, now)
        else:
            for job in self.round_order(pending):
                admitted |= self.consider(job, now)
        return admitted

    def scheduling_pass(self, now: float) -> None:
        # Each round admits a job or ends the pass; the scenarios this model checks hold a few dozen
        # jobs and the loop rule bounds the preemptions at an instant, so thousands of admissions at
        # one instant can only be a bug (NeverSettles).
        for _ in range(5_000):
            if not self.run_round(now):
                return
        raise NeverSettles(f"rounds never stopped admitting at t={now}")

    # -- section 8: fair sharing -------------------------------------------------------------------------

    def fair_sharing_on(self) -> bool:
        return self.policy.fair_sharing is not None

    def lendable_gpus(self) -> Fraction:
        """L: the pool's lendable GPUs: unassigned capacity plus every lender's quota up to its
        lending limit, whatever is in use."""
        total = Fraction(0)
        for t in self.types():
            lent = sum(
                min(self.lending_limit(name, t), self.quota(name, t))
                for name, s in self.shares.items()
                if s.strategy is not Strategy.RESERVE
            )
            total += self.gpus_of(t) * (self.unassigned(t) + lent)
        return total

    @staticmethod
    def exact(number: float) -> Fraction:
        """A number of the policy as the fraction its decimal text says (0.1 is 1/10)."""
        return Fraction(str(number))

    def gpus_of(self, t: str) -> Fraction:
        return self.exact(self.policy.instance_types[t].gpus)

    def borrowed_gpus(self, share: str, holding: list[Job]) -> Fraction:
        """B_s: GPUs the share holds above its quota, summed over types (a request is a job in holding)."""
        gpus = {t: self.gpus_of(t) for t in self.types()}
        return sum((gpus[t] * self.borrowed(share, t, holding) for t in self.types()), Fraction(0))

    def share_value(self, share: str, holding: list[Job]) -> tuple[int, Fraction]:
        """V_s as a comparable pair: (0, 1000 B / L / weight), or (1, 1000 B / L) for weight 0 (infinite
        values compare by 1000 B / L); 0 when nothing is borrowed or nothing is lendable."""
        borrowed, lendable = self.borrowed_gpus(share, holding), self.lendable_gpus()
        if borrowed == 0 or lendable == 0:
            return (0, Fraction(0))
        ratio = 1000 * borrowed / lendable
        weight = self.shares[share].fair_weight
        if weight == 0:
            return (1, ratio)
        return (0, ratio / self.exact(weight))

    def fair_admission_key(self, job: Job) -> tuple:
        """The round's next candidate: its share's value were it admitted, then priority, submit, job_id.
        Section 12 (the engine's choice): several types, the lowest value over them."""
        was = job.type
        values = []
        for t in job.accepted:
            job.type = t
            values.append(self.share_value(job.share, self.holding() + [job]))
        job.type = was
        value = min(values)
        return (value, -job.priority, job.submit, self.id_key(job))

    def fair_reclaim_allows(self, job: Job, victim: Job) -> bool:
        reclaim = self.shares[job.share].reclaim.value
        return reclaim == "any" or (reclaim == "lower_priority" and victim.priority < job.priority)

    def fair_candidates(self, job: Job) -> dict[str, list[Job]]:
        """Per share, in section 4's victim order: the job's own share's jobs that in-share preemption
        allows, and other borrowing shares' jobs that its reclaim allows; only of the job's type; less
        those left out by the loop rule (``left_out_for_loop``), each noted the first time."""
        holding = self.holding()
        out: dict[str, list[Job]] = {}
        for v in holding:
            if v.type != job.type:
                continue
            if v.share == job.share:
                allowed = self.in_share_preemption_allows(job, v)
            else:
                allowed = self.borrowed_gpus(v.share, holding) > 0 and self.fair_reclaim_allows(job, v)
            if allowed and self.left_out_for_loop(v):
                self.note_loop(v, job)
            elif allowed:
                out.setdefault(v.share, []).append(v)
        return {share: self.victim_order(job, jobs) for share, jobs in out.items()}

    def left_out_for_loop(self, v: Job) -> bool:
        """Section 8's preemption loops: a job already preempted twice at this instant is not a
        candidate victim again at this instant."""
        return v.preempted_at == self.now and v.preempted_here >= 2

    def note_loop(self, v: Job, preemptor: Job) -> None:
        """A finding the first time at an instant that a search leaves ``v`` out (one per job and instant)."""
        if any(f["time"] == self.now and f["job_id"] == v.job_id for f in self.loop_findings):
            return
        self.loop_findings.append({"time": self.now, "job_id": v.job_id, "share": v.share,
                                   "preemptor_id": preemptor.job_id, "preemptor_share": preemptor.share})

    def preemption_loops(self) -> dict[str, Any]:
        """RESULT.json's summary.preemption_loops: {count, instants, first: up to 100 findings}."""
        return {
            "count": len(self.loop_findings),
            "instants": len({f["time"] for f in self.loop_findings}),
            "first": self.loop_findings[:100],
        }

    def victim_key(self, v: Job) -> tuple:
        """Section 4's victim order without the share: lowest priority, most recently started, job_id desc."""
        return (v.priority, -v.started_at, _Descending(self.id_key(v)))

    @staticmethod
    def strategy_passes(strategy: FairStrategy, new: tuple, old: tuple, after: tuple) -> bool:
        if strategy is FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE:
            return new <= after
        return new < old

    def fair_victims(self, job: Job) -> list[tuple[Job, str]] | None:
        """Section 8's preemption: the two-phase search over target shares, then the backwards walk."""
        holding = self.holding()
        own = job.share
        strategies = self.policy.fair_sharing.preemption_strategies
        within_quota = self.usage(own, job.type, holding) + job.count <= self.quota(own, job.type)
        candidates = self.fair_candidates(job)
        taken: list[Job] = []

        def remaining() -> list[Job]:
            return [h for h in holding if h not in taken]

        def value(share: str, without: Job | None = None) -> tuple:
            # the job counts as admitted in its share throughout the search
            return self.share_value(share, [h for h in remaining() if h is not without] + [job])

        def fits() -> bool:
            return self.fits(job, remaining())

        def target(pool: dict[str, list[Job]]) -> str | None:
            """The share with the highest value; ties: its next candidate first in section 4's whole
            victim order (other shares' jobs before the job's own share's, then lowest priority, most
            recently started, job_id descending); other shares whose value is 0 are out."""
            live = [y for y, jobs in pool.items() if jobs and (y == own or value(y) > (0, 0))]
            if not live:
                return None
            return min(live, key=lambda y: (_negated(value(y)), y == own, self.victim_key(pool[y][0])))

        set_aside: dict[str, list[Job]] = {}
        pool = {share: list(jobs) for share, jobs in candidates.items()}
        while not fits():
            y = target(pool)
            if y is None:
                break
            if y == own:
                taken.append(pool[own].pop(0))
                continue
            new, old = value(own), value(y)
            while pool[y]:
                v = pool[y].pop(0)
                if self.strategy_passes(strategies[0], new, old, value(y, without=v)):
                    taken.append(v)
                    break
                set_aside.setdefault(y, []).append(v)
            # a share whose candidates all failed has none left in pool: target() skips it from now on
        if not fits() and len(strategies) > 1:
            pool = {share: list(jobs) for share, jobs in set_aside.items()}
            while not fits():
                y = target(pool)
                if y is None:
                    break
                if value(own) < value(y):  # LessThanInitialShare
                    taken.append(pool[y][0])
                del pool[y]  # dropped either way
        if not fits():
            return None  # never fits: preempt nobody
        for v in reversed(list(taken)):
            without_v = [x for x in taken if x is not v]
            if self.fits(job, [h for h in holding if h not in without_v]):
                taken = without_v
        return [(v, self.fair_cause(job, v, within_quota)) for v in taken]

    @staticmethod
    def fair_cause(job: Job, victim: Job, within_quota: bool) -> str:
        """in_share for the job's own share; for other shares cross_share when the job is within its
        quota once admitted (Kueue InCohortReclamation), else fair_sharing (InCohortFairSharing)."""
        if victim.share == job.share:
            return "in_share"
        return "cross_share" if within_quota else "fair_sharing"

    # -- section 9: preemptions when capacity or a quota goes down ------------------------------------

    def capacity_broken(self, t: str, holding: list[Job]) -> bool:
        return self.pool_usage(t, holding) > self.capacity(t) or not self.borrowing_invariant(t, holding)

    def capacity_victim_key(self, v: Job, holding: list[Job]) -> tuple:
        """Jobs of borrowing shares (u > q of that type) first, then lowest priority, most recently
        started, job_id descending."""
        borrowing = self.borrowed(v.share, v.type, holding) > 0
        return (not borrowing, v.priority, -v.started_at, _Descending(self.id_key(v)))

    def capacity_victims(self, t: str) -> list[Job]:
        holding = self.holding()
        taken: list[Job] = []
        while self.capacity_broken(t, [h for h in holding if h not in taken]):
            remaining = [h for h in holding if h not in taken]
            of_type = [h for h in remaining if h.type == t]
            taken.append(min(of_type, key=lambda v: self.capacity_victim_key(v, remaining)))  # taken anew
        for v in reversed(list(taken)):
            without_v = [x for x in taken if x is not v]
            if not self.capacity_broken(t, [h for h in holding if h not in without_v]):
                taken = without_v  # not needed: it keeps running
        return taken

    def apply_capacity_changes(self, now: float) -> None:
        for t in self.types():
            for victim in self.capacity_victims(t):
                self.preempt(victim, now, "capacity", None)

    # -- section 10: time limit in RUNNABLE ----------------------------------------------------------------

    def runnable_deadline(self, job: Job) -> float | None:
        timeout = self.policy.runnable_timeout_seconds
        if timeout is None or job.state != "RUNNABLE":
            return None
        return job.runnable_since + timeout

    def cancel_if_over_limit(self, job: Job, now: float) -> None:
        deadline = self.runnable_deadline(job)
        if deadline is not None and deadline <= now:
            job.queued += now - job.runnable_since
            job.state, job.end = "CANCELLED", now
            self.event(now, job, "cancel")

    # -- section 2/6: submission, unschedulable jobs, priority updates -------------------------------

    def unschedulable_reason_now(self, job: Job) -> str | None:
        """Section 6 under the policy as it stands at the current instant."""
        t, share = job.type, job.share
        if job.count > self.capacity(t):
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

    def unschedulable_reason(self, job: Job) -> str | None:
        """Section 12: unschedulable only if every accepted type is, with the first type's reason."""
        was = job.type
        reasons = []
        for t in job.accepted:
            job.type = t
            reasons.append(self.unschedulable_reason_on_type(job))
        job.type = was
        return None if None in reasons else reasons[0]

    def unschedulable_reason_on_type(self, job: Job) -> str | None:
        """Section 9: unschedulable only if section 6 finds it so at every instant of the calendar (before
        or after its submission: a job waits for a training plan to come). The pool's limit is the reason
        when the pool is too small at every instant, else the quota's."""
        reasons = []
        for instant in self.calendar_instants():
            with self.as_of(instant):
                reasons.append(self.unschedulable_reason_now(job))
        if None in reasons:
            return None
        if all(r == "SERVICE_ENVIRONMENT_MAX_RESOURCE" for r in reasons):
            return "SERVICE_ENVIRONMENT_MAX_RESOURCE"
        return "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"

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
        times += [c.time for c in self.policy.changes if c.time > self.now]
        times += [d for d in map(self.runnable_deadline, self.jobs) if d is not None]
        return min(times) if times else None

    def run(self) -> dict[str, Any]:
        self.applied_updates: set[int] = set()
        now = self.next_instant()
        while now is not None:
            changes_due = any(self.now < c.time <= now for c in self.policy.changes)
            self.now = now
            for job in self.jobs:  # 1. finishes
                if job.holds_capacity and job.end_at <= now:
                    self.finish(job, now)
            if changes_due:  # 2. changes: capacity and quotas now in force; preempt where capacity is gone
                self.apply_capacity_changes(now)
            for job in self.jobs:  # 3. submissions
                if job.state == "PENDING_SUBMIT" and job.submit <= now:
                    self.submit(job, now)
            for i, (time, job_id, priority) in enumerate(self.updates):  # 4. priority updates
                if i not in self.applied_updates and time <= now:
                    self.applied_updates.add(i)
                    self.apply_priority_update(job_id, priority)
            for job in self.jobs:  # 5. cancellations
                self.cancel_if_over_limit(job, now)
            self.scheduling_pass(now)  # 6. one pass
            now = self.next_instant()
        return {
            "jobs": [self.job_record(j) for j in self.jobs],
            "events": self.events,
            "ignored_priority_updates": self.ignored_updates,
            "preemption_loops": self.preemption_loops(),
        }

    def event(self, now: float, job: Job, kind: str, cause: str | None = None, by: str | None = None) -> None:
        self.events.append({"time": now, "job_id": job.job_id, "event": kind, "cause": cause, "by": by})

    @staticmethod
    def job_record(j: Job) -> dict[str, Any]:
        return {
            "job_id": j.job_id,
            "share": j.share,
            "instance_type": j.type if j.ran or len(j.accepted) == 1 else None,
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
    """Replay ``trace`` under ``policy``: {"jobs": [...], "events": [...], "ignored_priority_updates": n,
    "preemption_loops": {count, instants, first}}."""
    return ReferenceReplay(policy, trace).run()


class _Descending:
    """Wraps a job_id key (a number or a string) so that sorting ascending puts larger ids first."""

    def __init__(self, key: Any):
        self.key = key

    def __lt__(self, other: _Descending) -> bool:
        return self.key > other.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Descending) and self.key == other.key


def _negated(value: tuple[int, Fraction]) -> tuple[int, Fraction]:
    """A share value's pair negated, so that ``min`` picks the highest value."""
    return (-value[0], -value[1])


def _is_int(text: str) -> bool:
    try:
        int(text)
    except ValueError:
        return False
    return True
