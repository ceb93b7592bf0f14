"""A deliberately naive replay written line by line from SEMANTICS.md sections 2-4, 8-10, 12 and 13,
to check the engine.

Slow on purpose: one loop over time instants, every round re-sorts every pending job and every
check recomputes usage (and capacity and quotas, from the calendar of changes) from scratch. Share
values are exact fractions (weights and GPUs as their decimal text says: 0.1 is 1/10). Each rule is
one function named after it.

Section 13 (a tree of cohorts) is its own block: every SQ, LQ, U and available is recomputed from the
jobs holding capacity each time it is asked. A policy without ``cohorts`` keeps sections 3-4 and 8 as
they are written (``tree`` False); ``ReferenceReplay(policy, trace, tree=True)`` replays such a policy
through the tree's formulas instead, so that a test can check that they reduce to sections 3-4 and 8
as section 13 says. Where the text of section 13 leaves a choice, the function's docstring says
"Reading:" and which one, closest to Kueue's code.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from scheduling.model import Cohort, FairStrategy, Policy, Share, Strategy
from scheduling.trace import NO_TYPE, Trace

INF = math.inf
ROOT = ""  # section 13's root cohort (no share or cohort may have an empty name)


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
    def __init__(self, policy: Policy, trace: Trace, tree: bool | None = None):
        self.policy = policy
        self.shares: dict[str, Share] = {s.name: s for s in policy.shares}
        self.cohorts: dict[str, Cohort] = {c.name: c for c in policy.cohorts}
        # Section 13: the tree's rules apply to a policy with cohorts; ``tree=True`` forces them on a
        # flat policy (one root cohort) to check that they give sections 3-4 and 8's answers.
        has_tree = bool(policy.cohorts) or any(s.cohort is not None for s in policy.shares)
        self.tree = has_tree if tree is None else tree
        self._quota_memo: dict[tuple, int] = {}
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
        if self.tree:
            return self.tree_fits(job, holding)
        if self.usage(job.share, t, after) > self.quota(job.share, t) + self.borrow_limit(job.share, t):
            return False
        return self.borrowing_invariant(t, after)

    def id_key(self, job: Job) -> Any:
        """Integer ids compare as numbers, otherwise as strings."""
        return int(job.job_id) if self.numeric_ids else job.job_id

    def round_order(self, pending: list[Job]) -> list[Job]:
        """Not needing to borrow first (u + n <= q at round start), priority, submit time, job_id; with a
        tree, lower borrowing levels first (section 13)."""
        holding = self.holding()
        if self.tree:
            return sorted(
                pending, key=lambda j: (self.lowest_level(j, holding), -j.priority, j.submit, self.id_key(j))
            )

        def needs_to_borrow(j: Job) -> bool:
            # Section 12 (the engine's choice): several types need to borrow only if every one would.
            return all(self.usage(j.share, t, holding) + j.count > self.quota(j.share, t) for t in j.accepted)

        return sorted(pending, key=lambda j: (needs_to_borrow(j), -j.priority, j.submit, self.id_key(j)))

    def lowest_level(self, job: Job, holding: list[Job]) -> int:
        """Section 13's borrowing level at the round's start; with several types (section 12, as
        "needs to borrow only if every one would"), the lowest over them."""
        was, levels = job.type, []
        for t in job.accepted:
            job.type = t
            levels.append(self.borrowing_level(job, holding))
        job.type = was
        return min(levels)

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
        return (
            rule == "lower_or_newer_equal_priority"
            and victim.priority == job.priority
            and (victim.submit > job.submit)
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
        if self.tree:
            return self.tree_select_victims(job)
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
            chosen = (
                None
                if victims is None
                else [(v, "in_share" if v.share == job.share else "cross_share") for v in victims]
            )
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
            chosen = (
                None
                if victims is None
                else [(v, "in_share" if v.share == job.share else "cross_share") for v in victims]
            )
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
            if self.tree:  # section 13: the height of the cohort it borrows from, its victims gone
                level = self.borrowing_level(job, after[:-1])
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
                # values change as the round admits
                if self.tree:
                    job = self.tree_admission_pick(remaining)
                else:
                    job = min(remaining, key=self.fair_admission_key)
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
        self.loop_findings.append(
            {
                "time": self.now,
                "job_id": v.job_id,
                "share": v.share,
                "preemptor_id": preemptor.job_id,
                "preemptor_share": preemptor.share,
            }
        )

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
        if self.tree:
            return self.tree_fair_victims(job)
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

    # -- section 13: a tree of cohorts ---------------------------------------------------------------
    # Nodes are share and cohort names (one namespace) and ROOT, the parent of every share and cohort
    # that names none. Quotas follow the calendar: a share's quota is the one in force now, the root's
    # own quota is the pool's capacity now less every share's and cohort's own quota (cohorts' own
    # quotas have no calendar). A share's limits are section 1's: RESERVE lends and borrows nothing,
    # LEND borrows nothing, a borrow percentage is of the quota in force.

    def parent(self, node: str) -> str:
        if node in self.shares:
            return self.shares[node].cohort or ROOT
        return self.cohorts[node].parent or ROOT

    def children(self, node: str) -> list[str]:
        """A node's child cohorts, then its shares, each in the policy's order."""
        kids = [c.name for c in self.policy.cohorts if (c.parent or ROOT) == node]
        return kids + [s.name for s in self.policy.shares if (s.cohort or ROOT) == node]

    def ancestors(self, node: str) -> list[str]:
        """The node's parent, its parent's parent, ..., the root."""
        out = []
        while node != ROOT:
            node = self.parent(node)
            out.append(node)
        return out

    def own_quota(self, node: str, t: str) -> int:
        if node == ROOT:
            claimed = sum(self.quota(s, t) for s in self.shares)
            return self.capacity(t) - claimed - sum(c.capacity.get(t, 0) for c in self.policy.cohorts)
        if node in self.shares:
            return self.quota(node, t)
        return self.cohorts[node].capacity.get(t, 0)

    def node_lending_limit(self, node: str, t: str) -> float:
        """A share's as section 1 has it (RESERVE lends nothing); a cohort's per type (absent: none)."""
        if node == ROOT:
            return INF
        if node in self.shares:
            return 0 if self.shares[node].strategy is Strategy.RESERVE else self.lending_limit(node, t)
        return (self.cohorts[node].lending_limit or {}).get(t, INF)

    def node_borrowing_limit(self, node: str, t: str) -> float:
        """A share's borrow limit as section 1 has it (RESERVE and LEND: 0; a percentage of the quota in
        force now); a cohort's per type (absent: none)."""
        if node == ROOT:
            return INF
        if node in self.shares:
            return self.borrow_limit(node, t)
        return (self.cohorts[node].borrowing_limit or {}).get(t, INF)

    def subtree_quota(self, node: str, t: str) -> int:
        """SQ(n) = own quota + sum over children c of (SQ(c) - LQ(c))."""
        key = ("SQ", self.now, node, t)
        if key not in self._quota_memo:
            self._quota_memo[key] = self.own_quota(node, t) + sum(
                self.subtree_quota(c, t) - self.local_quota(c, t) for c in self.children(node)
            )
        return self._quota_memo[key]

    def local_quota(self, node: str, t: str) -> int:
        """LQ(n) = max(0, SQ(n) - lending_limit(n)) with a lending limit, else 0."""
        limit = self.node_lending_limit(node, t)
        return 0 if limit == INF else max(0, self.subtree_quota(node, t) - int(limit))

    def node_usage(self, node: str, t: str, holding: list[Job]) -> int:
        """U(share) = its usage; U(cohort) = sum over children of max(0, U(c) - LQ(c))."""
        if node in self.shares:
            return self.usage(node, t, holding)
        return sum(
            max(0, self.node_usage(c, t, holding) - self.local_quota(c, t)) for c in self.children(node)
        )

    def local_available(self, node: str, t: str, holding: list[Job]) -> int:
        return max(0, self.local_quota(node, t) - self.node_usage(node, t, holding))

    def tree_available(self, node: str, t: str, holding: list[Job]) -> float:
        """available(root) = SQ - U; available(n) = max(0, LQ - U) + p with p = available(parent), and
        with a borrowing limit p = min(p, (SQ - LQ) - max(0, U - LQ) + borrowing_limit).

        Reading: "available is never below 0" holds at every node, the parent's included (Kueue's can
        go below 0 after quotas fall; a share's unused local quota then stays usable here)."""
        sq, lq = self.subtree_quota(node, t), self.local_quota(node, t)
        u = self.node_usage(node, t, holding)
        if node == ROOT:
            return max(0, sq - u)
        p = self.tree_available(self.parent(node), t, holding)
        limit = self.node_borrowing_limit(node, t)
        if limit != INF:
            p = min(p, (sq - lq) - max(0, u - lq) + limit)
        return max(0, max(0, lq - u) + p)

    def potential_available(self, node: str, t: str) -> float:
        """The most a node could take with nothing used anywhere (Kueue's potentialAvailable)."""
        if node == ROOT:
            return self.subtree_quota(ROOT, t)
        out = self.local_quota(node, t) + self.potential_available(self.parent(node), t)
        limit = self.node_borrowing_limit(node, t)
        return out if limit == INF else min(out, self.subtree_quota(node, t) + limit)

    def tree_fits(self, job: Job, holding: list[Job]) -> bool:
        """Section 13's fit: the request is at most available(share) (the pool is checked apart)."""
        return job.count <= self.tree_available(job.share, job.type, holding)

    def node_height(self, node: str) -> int:
        """Reading: a cohort's height as Kueue's getNodeHeight counts it, the distance to its furthest
        leaf: 1 for a cohort of shares only, one more per level of cohorts below (not the number of
        edges from the share up to it)."""
        height = min(len(self.children(node)), 1)
        for child in self.children(node):
            if child not in self.shares:
                height = max(height, self.node_height(child) + 1)
        return height

    def tree_borrowing_level(self, share: str, t: str, count: int, holding: list[Job]) -> int:
        """0 within the share's quota, else the height of the lowest ancestor whose subtree quota covers
        what spills up to it (Kueue's FindHeightOfLowestSubtreeThatFits: the request less each node's
        free local quota on the way up); the root's height when none does."""
        if self.usage(share, t, holding) + count <= self.quota(share, t):
            return 0
        remaining = count - self.local_available(share, t, holding)
        for node in self.ancestors(share):
            if self.node_usage(node, t, holding) + remaining <= self.subtree_quota(node, t):
                return self.node_height(node)
            remaining -= self.local_available(node, t, holding)
        return self.node_height(ROOT)

    def borrowing_level(self, job: Job, holding: list[Job]) -> int:
        """Section 13's borrowing level of admitting ``job`` (its ``type``) on top of ``holding``."""
        return self.tree_borrowing_level(job.share, job.type, job.count, holding)

    # classical preemption over the tree

    def tree_preemption_candidates(self, job: Job) -> list[tuple[Job, str | None]]:
        """(victim, lowest common ancestor) pairs: the share's own jobs that in-share preemption allows
        (no ancestor), then, walking from the parent to the root, the jobs that ``reclaim`` allows in
        the other subtrees of each ancestor that are borrowing there (a cohort whose U > SQ is entered,
        a share whose u > q gives its jobs), of the job's type.

        Reading: a candidate is taken only with the hierarchical advantage, i.e. once the job fits
        within the quota of the subtree below the ancestor being walked (at the parent: within its
        share's quota, section 4's rule). Kueue keeps the others for a second search in which the job
        must end within its share's quota; section 4 decides "within quota" once, before in-share
        victims, so such a search finds nothing section 4 would take and is not modelled."""
        holding = self.holding()
        t, own = job.type, job.share
        out: list[tuple[Job, str | None]] = [
            (v, None)
            for v in holding
            if v.type == t and v.share == own and self.in_share_preemption_allows(job, v)
        ]
        advantage = self.usage(own, t, holding) + job.count <= self.quota(own, t)
        remaining = max(0, job.count - self.local_available(own, t, holding))
        below = own
        for node in self.ancestors(own):
            if advantage:
                for share in self.borrowing_shares_under(node, below, t, holding):
                    out += [(v, node) for v in holding
                            if v.share == share and v.type == t and self.reclaim_allows(job, v)]  # fmt: skip
            fits_here = self.node_usage(node, t, holding) + remaining <= self.subtree_quota(node, t)
            remaining = max(0, remaining - self.local_available(node, t, holding))
            advantage = advantage or fits_here
            below = node
        return out

    def borrowing_shares_under(self, node: str, skip: str, t: str, holding: list[Job]) -> list[str]:
        """Shares under ``node``, outside the child ``skip``, that borrow ``t`` (u > q), reached through
        cohorts that borrow it (U > SQ) only."""
        out = []
        for child in self.children(node):
            if child == skip or self.node_usage(child, t, holding) <= self.subtree_quota(child, t):
                continue
            out += [child] if child in self.shares else self.borrowing_shares_under(child, skip, t, holding)
        return out

    def still_a_candidate(self, v: Job, lca: str | None, holding: list[Job]) -> bool:
        """A candidate of another share stops being one once its share, or one of its ancestors below
        the lowest common ancestor, is back within quota (of the victim's type)."""
        if lca is None:
            return True
        t = v.type
        if self.usage(v.share, t, holding) <= self.quota(v.share, t):
            return False
        for node in self.ancestors(v.share):
            if node == lca:
                return True
            if self.node_usage(node, t, holding) <= self.subtree_quota(node, t):
                return False
        return True

    def tree_select_victims(self, job: Job) -> list[Job] | None:
        """Section 4's search over section 13's candidates: in section 4's order, take each that is still
        a candidate until the job fits, then walk the taken list backwards dropping those not needed."""
        pairs = self.tree_preemption_candidates(job)
        lca = {id(v): node for v, node in pairs}
        taken: list[Job] = []
        fitted = False
        for v in self.victim_order(job, [v for v, _ in pairs]):
            remaining = [h for h in self.holding() if h not in taken]
            if not self.still_a_candidate(v, lca[id(v)], remaining):
                continue
            taken.append(v)
            if self.fits(job, [h for h in remaining if h is not v]):
                fitted = True
                break
        if not fitted:
            return None
        for v in reversed(list(taken)):
            without_v = [x for x in taken if x is not v]
            if self.fits(job, [h for h in self.holding() if h not in without_v]):
                taken = without_v
        return taken

    # fair sharing over the tree

    def weight_of(self, node: str) -> float:
        return self.shares[node].fair_weight if node in self.shares else self.cohorts[node].fair_weight

    def node_value(self, node: str, holding: list[Job]) -> tuple[int, Fraction]:
        """A node's value: GPUs it holds above its subtree quota, over the lendable GPUs of its parent
        (what the parent could give with nothing used: Kueue's potentialAvailable, for the root its
        SQ, section 8's L), x 1000, over its weight; as section 8's comparable pair.

        Reading: "the lendable capacity of its parent" is Kueue's calculateLendable of the parent,
        the parent's potentialAvailable summed over types in GPUs."""
        if node == ROOT:
            return (0, Fraction(0))
        types = self.types()
        above = {t: max(0, self.node_usage(node, t, holding) - self.subtree_quota(node, t)) for t in types}
        borrowed = sum((self.gpus_of(t) * above[t] for t in types), Fraction(0))
        parent = self.parent(node)
        lendable = sum((self.gpus_of(t) * Fraction(self.potential_available(parent, t)) for t in types),
                       Fraction(0))  # fmt: skip
        if borrowed == 0 or lendable == 0:
            return (0, Fraction(0))
        ratio = 1000 * borrowed / lendable
        weight = self.weight_of(node)
        return (1, ratio) if weight == 0 else (0, ratio / self.exact(weight))

    def child_towards(self, ancestor: str, node: str) -> str:
        """The child of ``ancestor`` on the way down to ``node`` (``node`` itself if it is a child)."""
        while self.parent(node) != ancestor:
            node = self.parent(node)
        return node

    def almost_lcas(self, own: str, target: str) -> tuple[str, str]:
        """The children of the two shares' lowest common ancestor on the way to each (Kueue's
        almost-LCAs): the nodes whose values a fair-sharing strategy compares."""
        up = [own, *self.ancestors(own)]
        lca = next(a for a in self.ancestors(target) if a in up)
        return self.child_towards(lca, own), self.child_towards(lca, target)

    def tree_admission_pick(self, candidates: list[Job]) -> Job:
        """The round's next candidate with fair sharing over the tree: a tournament from the root down,
        each cohort's child (a share, or a cohort with its own winner) compared by the value the child
        would have with its candidate admitted, then priority, submit time, job_id (Kueue's
        fair_sharing_iterator). At the root of a flat policy this is section 8's order.

        Reading: a share offers every candidate it has in the round (best-effort FIFO lets several);
        the one it sends up is the lowest by the same key. With several accepted types, the value is the
        lowest over them, at each level (section 12's choice for one level)."""
        holding = self.holding()

        def key(node: str, job: Job) -> tuple:
            was, values = job.type, []
            for t in job.accepted:
                job.type = t
                values.append(self.node_value(node, holding + [job]))
            job.type = was
            return (min(values), -job.priority, job.submit, self.id_key(job))

        def winner(node: str) -> Job | None:
            best: tuple | None = None
            for child in self.children(node):
                if child in self.shares:
                    mine = [j for j in candidates if j.share == child]
                    nominee = min(mine, key=lambda j, c=child: key(c, j)) if mine else None
                else:
                    nominee = winner(child)
                if nominee is not None and (best is None or key(child, nominee) < best[0]):
                    best = (key(child, nominee), nominee)
            return None if best is None else best[1]

        return winner(ROOT)

    def tree_target(self, job: Job, pool: dict[str, list[Job]], value: Any) -> str | None:
        """Section 13's target share: from the root down, at each cohort the child with the highest
        value among those still in play, a cohort winning a tie with a share (Kueue's nextTarget). A
        share is in play with candidates left and, unless it is the job's own, a value above 0; a
        cohort with a share in play below it and a value above 0 or on the path to the job's share.
        Ties between shares: the next candidate first in section 4's whole victim order.

        Reading: ties between two cohorts go the same way, to the cohort holding the candidate that
        comes first in that order (Kueue takes whichever it visits last)."""
        own = job.share
        on_path = set(self.ancestors(own))
        zero = (0, Fraction(0))

        def in_play(node: str) -> bool:
            if node in self.shares:
                return bool(pool.get(node)) and (node == own or value(node) > zero)
            return (value(node) > zero or node in on_path) and any(in_play(c) for c in self.children(node))

        def first_candidate(node: str) -> tuple:
            if node in self.shares:
                v = pool[node][0]
                return (v.share == own, self.victim_key(v))
            return min(first_candidate(c) for c in self.children(node) if in_play(c))

        node = ROOT
        while True:
            live = [c for c in self.children(node) if in_play(c)]
            if not live:
                return None

            def rank(c: str) -> tuple:
                return (_negated(value(c)), first_candidate(c))

            share = min((c for c in live if c in self.shares), key=rank, default=None)
            cohort = min((c for c in live if c not in self.shares), key=rank, default=None)
            if cohort is not None and (share is None or value(cohort) >= value(share)):
                node = cohort
                continue
            return share

    def tree_fair_victims(self, job: Job) -> list[tuple[Job, str]] | None:
        """Section 8's two-phase search with section 13's target walk: the strategies compare the
        values of the two children of the lowest common ancestor (the job's side with the job
        admitted), and the target is chosen anew after each victim.

        Reading: the candidates are section 8's, from the whole tree: other shares' jobs wherever the
        share sits, if the share borrows (B > 0 over its own quota, all types), as Kueue's
        findCandidates takes every borrowing ClusterQueue under the root."""
        holding = self.holding()
        own = job.share
        strategies = self.policy.fair_sharing.preemption_strategies
        within_quota = self.usage(own, job.type, holding) + job.count <= self.quota(own, job.type)
        taken: list[Job] = []

        def remaining() -> list[Job]:
            return [h for h in holding if h not in taken]

        def value(node: str, without: Job | None = None) -> tuple:
            return self.node_value(node, [h for h in remaining() if h is not without] + [job])

        def fits() -> bool:
            return self.fits(job, remaining())

        set_aside: dict[str, list[Job]] = {}
        pool = {share: list(jobs) for share, jobs in self.fair_candidates(job).items()}
        while not fits():
            y = self.tree_target(job, pool, value)
            if y is None:
                break
            if y == own:
                taken.append(pool[own].pop(0))
                continue
            mine, theirs = self.almost_lcas(own, y)
            new, old = value(mine), value(theirs)
            while pool[y]:
                v = pool[y].pop(0)
                if self.strategy_passes(strategies[0], new, old, value(theirs, without=v)):
                    taken.append(v)
                    break
                set_aside.setdefault(y, []).append(v)
        if not fits() and len(strategies) > 1:
            pool = {share: list(jobs) for share, jobs in set_aside.items()}
            while not fits():
                y = self.tree_target(job, pool, value)
                if y is None:
                    break
                mine, theirs = self.almost_lcas(own, y)
                if value(mine) < value(theirs):  # LessThanInitialShare
                    taken.append(pool[y][0])
                del pool[y]
        if not fits():
            return None
        for v in reversed(list(taken)):
            without_v = [x for x in taken if x is not v]
            if self.fits(job, [h for h in holding if h not in without_v]):
                taken = without_v
        return [(v, self.fair_cause(job, v, within_quota)) for v in taken]

    # section 6 and section 9 with a tree

    def tree_unschedulable_reason_now(self, job: Job) -> str | None:
        """Reading: with a tree, a job needs more than its share could ever get when its request is above
        the share's potentialAvailable (Kueue's "request > maximum capacity"); on one level this is
        section 6's quota + min(borrow limit, everything borrowable), and q for RESERVE and LEND."""
        if job.count > self.capacity(job.type):
            return "SERVICE_ENVIRONMENT_MAX_RESOURCE"
        if job.count > self.potential_available(job.share, job.type):
            return "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"
        return None

    def tree_invariant_broken(self, t: str, holding: list[Job]) -> bool:
        """Reading: section 9's borrowing invariant with a tree is U(root) <= SQ(root) (on one level it
        is exactly section 3's sum of b <= unassigned + sum of lendable). Borrowing limits, as a share's
        borrow limit in section 9, bound admissions only, not jobs already running."""
        return self.node_usage(ROOT, t, holding) > self.subtree_quota(ROOT, t)

    # -- section 9: preemptions when capacity or a quota goes down ------------------------------------

    def capacity_broken(self, t: str, holding: list[Job]) -> bool:
        if self.pool_usage(t, holding) > self.capacity(t):
            return True
        if self.tree:
            return self.tree_invariant_broken(t, holding)
        return not self.borrowing_invariant(t, holding)

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
        if self.tree:
            return self.tree_unschedulable_reason_now(job)
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


def reference_replay(policy: Policy, trace: Trace, tree: bool | None = None) -> dict[str, Any]:
    """Replay ``trace`` under ``policy``: {"jobs": [...], "events": [...], "ignored_priority_updates": n,
    "preemption_loops": {count, instants, first}}. ``tree=True`` replays a flat policy through section
    13's formulas (one root cohort)."""
    return ReferenceReplay(policy, trace, tree).run()


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
