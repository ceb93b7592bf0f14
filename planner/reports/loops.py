"""Section 8's preemption loops as the pages tell them: a run whose fair-sharing preemptions loop is
a finding for the user, shown as a warning naming the instant, the shares and the jobs.

Read from the run's stored summary (``Run.summary["preemption_loops"]``: {count, instants, first: up to
100 findings {time, job_id, share, preemptor_id, preemptor_share}}), never from per-job rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

KUEUE_WORDS = "Kueue would keep evicting and re-admitting these workloads (issue #14543)"
JOBS_NAMED = 8  # job ids written out in a warning; the rest are counted


@dataclass(frozen=True)
class LoopWarning:
    """One run's loops: the first instant, the shares and jobs of the findings there, and totals."""

    policy: str
    count: int  # findings in the run
    instants: int  # instants with a finding
    time: float  # the first instant
    shares: tuple[str, ...]  # shares of the jobs left out and of their preemptors, at that instant
    jobs: tuple[str, ...]  # jobs left out at that instant, the first JOBS_NAMED
    more_jobs: int  # further jobs left out at that instant

    @property
    def time_text(self) -> str:
        return f"t = {self.time:,.1f} s"

    @property
    def shares_text(self) -> str:
        return _and(self.shares)

    @property
    def jobs_text(self) -> str:
        text = ", ".join(self.jobs)
        return f"{text} and {self.more_jobs} more" if self.more_jobs else text

    @property
    def elsewhere(self) -> int:
        """Instants with loops besides the first."""
        return self.instants - 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy, "count": self.count, "instants": self.instants, "time": self.time,
            "shares": list(self.shares), "jobs": list(self.jobs), "more_jobs": self.more_jobs,
        }  # fmt: skip


def loop_warning(policy: str, summary: Mapping[str, Any] | None) -> LoopWarning | None:
    """The warning for one run, or None when it had no loop (or is older than the loop rule)."""
    loops = (summary or {}).get("preemption_loops") or {}
    first = loops.get("first") or []
    if not loops.get("count") or not first:
        return None
    time = min(float(f["time"]) for f in first)
    here = [f for f in first if float(f["time"]) == time]
    jobs = list(dict.fromkeys(str(f["job_id"]) for f in here))
    shares = sorted({str(f["share"]) for f in here} | {str(f["preemptor_share"]) for f in here})
    return LoopWarning(
        policy=policy,
        count=int(loops["count"]),
        instants=int(loops.get("instants") or 1),
        time=time,
        shares=tuple(shares),
        jobs=tuple(jobs[:JOBS_NAMED]),
        more_jobs=max(0, len(jobs) - JOBS_NAMED),
    )


def loop_warnings(runs: Iterable[tuple[str, Mapping[str, Any] | None]]) -> list[LoopWarning]:
    """The warnings of the runs that looped, from (policy name, run summary) pairs, in order."""
    out = []
    for policy, summary in runs:
        warning = loop_warning(policy, summary)
        if warning is not None:
            out.append(warning)
    return out


def _and(names: tuple[str, ...]) -> str:
    if len(names) < 3:
        return " and ".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
