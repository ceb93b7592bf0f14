"""Section 8's preemption loops: with fair sharing, jobs can take each other's place by turns at one
instant; a job preempted twice there is left out of the victim searches at that instant
(``rules.left_out_for_loop``), and each job a search leaves out is a finding of RESULT.json.
"""

from __future__ import annotations

import math
from typing import Final

from scheduling.job_ids import JobIds
from scheduling.replay.fair import left_out
from scheduling.replay.refusals import Refusals
from scheduling.replay.rules import PREEMPTIONS_BEFORE_LEFT_OUT
from scheduling.replay.state import RUNNING, Job

# The findings kept in full in RESULT.json's summary.
LOOP_FINDINGS_KEPT: Final = 100


class PreemptionLoops:
    def __init__(self, fair: bool, refusals: Refusals):
        self.fair = fair
        self.refusals = refusals
        # The jobs preempted twice at the instant ``twice_at`` (left out of the searches there),
        # those of them a search has left out so far (one finding each), and the findings: their
        # number, the instants they were at, the first ones.
        self.twice: list[Job] = []
        self.twice_at = math.nan
        self.noted: set[int] = set()
        self.count = 0
        self.instants = 0
        self.last_instant = math.nan
        self.first: list[tuple[float, int, int]] = []  # (time, left-out job, preemptor)

    def on_preemption(self, victim: Job, now: float) -> None:
        """Preemptions of a job at one instant: with fair sharing, one preempted twice there is
        left out of the searches at that instant."""
        if victim.preempted_at == now:
            victim.preempted_here += 1
        else:
            victim.preempted_at = now
            victim.preempted_here = 1
        if self.fair and victim.preempted_here == PREEMPTIONS_BEFORE_LEFT_OUT:
            if self.twice_at != now:
                self.new_instant(now)
            self.twice.append(victim)

    def new_instant(self, now: float) -> None:
        """A new instant for the loop rule: the jobs left out at the last one are candidates again.
        A refusal there may have come from leaving them out, so every refusal is reopened."""
        if self.twice:
            self.twice.clear()
            self.noted.clear()
            self.refusals.on_loop_instant()
        self.twice_at = now

    def note(self, job: Job, now: float) -> None:
        """``job`` does not fit and its search runs (or would, were its refusal not known): a finding
        for each job it leaves out for the loop rule, the first time one is left out at ``now``. (The
        engine skips a search only when one before it in the same state, of a job of the same
        group and so with at least its candidates, ran: that one noted them.)"""
        for victim in left_out(job, self.twice, now, RUNNING):
            if victim.index in self.noted:
                continue
            self.noted.add(victim.index)
            self.count += 1
            if self.last_instant != now:
                self.last_instant = now
                self.instants += 1
            if len(self.first) < LOOP_FINDINGS_KEPT:
                self.first.append((now, victim.index, job.index))

    def summary(self, job_ids: JobIds, share_names: list[str], share_of: list[int]) -> dict:
        """RESULT.json's ``summary.preemption_loops``: {count, instants, first: up to 100 findings
        {time, job_id, share, preemptor_id, preemptor_share}}."""
        first = [
            {
                "time": time,
                "job_id": job_ids[victim],
                "share": share_names[share_of[victim]],
                "preemptor_id": job_ids[preemptor],
                "preemptor_share": share_names[share_of[preemptor]],
            }
            for time, victim, preemptor in self.first
        ]
        return {"count": self.count, "instants": self.instants, "first": first}
