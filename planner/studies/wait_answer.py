""" "Why did my job wait?" in one sentence: how long and mainly why, its share's quota and
borrowing, who held the instances when it began waiting, and what would have let it start.

``held_when_waiting`` reads the run's wait history (starts, preemptions) and the outcomes' ends for
one instant; ``wait_sentence`` turns a timeline (``scheduling.pending.job_timeline``) and that
into words. Pure functions: no database; the API and the page share them through
``planner.studies.timeline.run_job_timeline``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from scheduling.model import Policy
from scheduling.outcomes import JobOutcomes, WaitHistory
from scheduling.trace import NO_TYPE, Trace

HOUR = 3600.0

# What would have let it start, by the reason it mostly waited for (SEMANTICS.md sections 3-4).
REMEDIES = {
    "pool_full": "{need} more free instance{s} of {type}: a bigger pool, or a policy that lets {share} "
    "reclaim its lent quota or preempt lower-priority jobs",
    "nothing_lendable": "the shares holding idle RESERVE quota lending it (strategy LEND or LEND_AND_BORROW)",
    "borrow_limit": "a higher borrow limit for {share} ({limit} now)",
    "over_quota_no_borrowing": "letting {share} borrow (strategy LEND_AND_BORROW) or a larger quota for it",
    "behind_queue_head": "best-effort FIFO queueing instead of strict FIFO, so it could pass its share's "
    "first job",
}
SHORT_REASONS = {
    "pool_full": "every instance of its type was in use and it could preempt none",
    "nothing_lendable": "the idle capacity was RESERVE quota its owners may not lend",
    "borrow_limit": "its share had reached its borrow limit",
    "over_quota_no_borrowing": "its share was at its quota and may not borrow",
    "behind_queue_head": "it was behind its share's first job (strict FIFO)",
}


def longest_wait_start(timeline: dict[str, Any]) -> float | None:
    """When the job's longest waiting segment began (None if it never waited)."""
    waits = [s for s in timeline["segments"] if s["state"] == "waiting"]
    return max(waits, key=lambda s: (s["seconds"], -s["start"]))["start"] if waits else None


def held_when_waiting(policy: Policy, trace: Trace, outcomes: JobOutcomes, job: int, time: float) -> dict:
    """At ``time``: the instances of the job's type each share's running jobs held, the pool's
    instances of that type, and how many were free. A job runs at ``time`` when it has started
    more often than it was preempted by then and has not ended."""
    history = outcomes.history or WaitHistory.empty()
    type_code = int(trace.instance_type[job])
    type_name = None if type_code == NO_TYPE else trace.type_names[type_code]
    if type_name is None and len(policy.instance_types) == 1:
        type_name = next(iter(policy.instance_types))
    n_jobs = len(trace.submit_time)
    starts = history.columns("starts", 2)
    preemptions = history.columns("preemptions", 4)
    started = np.bincount(starts[starts[:, 0] <= time, 1].astype(np.int64), minlength=n_jobs)
    stopped = np.bincount(preemptions[preemptions[:, 0] <= time, 1].astype(np.int64), minlength=n_jobs)
    running = (started > stopped) & ~(outcomes.end <= time)
    if type_code != NO_TYPE and len(policy.instance_types) > 1:
        running &= trace.instance_type == type_code
    held: dict[str, int] = {}
    for other in np.flatnonzero(running).tolist():
        name = trace.share_names[trace.share[other]]
        held[name] = held.get(name, 0) + int(trace.instance_count[other])
    capacity = int(policy.capacity.get(type_name, 0)) if type_name else int(sum(policy.capacity.values()))
    ordered = dict(sorted(held.items(), key=lambda item: (-item[1], item[0])))
    return {"time": time, "type": type_name, "capacity": capacity, "held": ordered,
            "free": max(0, capacity - sum(held.values()))}  # fmt: skip


def _hours(seconds: float) -> str:
    hours = seconds / HOUR
    return f"{hours:,.2f} h" if hours < 10 else f"{hours:,.1f} h"


def _quota_words(policy: Policy, share_name: str, type_name: str | None) -> str:
    share = next((s for s in policy.shares if s.name == share_name), None)
    if share is None:
        return f"{share_name} is not a share of this policy"
    quota = share.capacity.get(type_name, 0) if type_name else sum(share.capacity.values())
    unit = f"instance{'s' if quota != 1 else ''}" + (f" of {type_name}" if type_name else "")
    if not share.strategy.borrows:
        lending = "lends its idle quota" if share.strategy.lends else "neither lends nor borrows"
        borrowing = f"may not borrow ({share.strategy.value}: it {lending})"
    elif share.borrowing_limit is not None and type_name in share.borrowing_limit:
        borrowing = f"may borrow up to {share.borrowing_limit[type_name]} more"
    elif share.borrow_limit_percent is not None and share.borrow_limit_percent >= 0:
        borrowing = f"may borrow up to {share.borrow_limit_percent:g} % of its quota more"
    else:
        borrowing = "may borrow idle capacity without limit"
    return f"{share_name}'s quota is {quota} {unit} and it {borrowing}"


def _limit_words(policy: Policy, share_name: str, type_name: str | None) -> str:
    share = next((s for s in policy.shares if s.name == share_name), None)
    if share is None:
        return "unknown"
    if share.borrowing_limit is not None and type_name in share.borrowing_limit:
        return f"{share.borrowing_limit[type_name]} instances"
    if share.borrow_limit_percent is not None and share.borrow_limit_percent >= 0:
        return f"{share.borrow_limit_percent:g} %"
    return "none"


def wait_sentence(policy: Policy, timeline: dict[str, Any], held: dict | None, count: int) -> str:
    """The answer in words. ``count``: the instances the job asks for."""
    job, share = timeline["job_id"], timeline["share"]
    waited = timeline.get("waited_by_reason_seconds") or {}
    total = sum(waited.values())
    running = [s for s in timeline["segments"] if s["state"] == "running"]
    if total <= 0:
        if running:
            return f"Job {job} of {share} did not wait: it started as soon as it was submitted."
        reason = timeline.get("unschedulable_reason")
        return f"Job {job} of {share} never ran{': ' + reason if reason else ''}."
    main = max(waited, key=lambda key: (waited[key], key))
    if not running:
        how = f"waited {_hours(total)} and never started"
    elif len(running) > 1:
        how = f"waited {_hours(total)} in all over {len(running)} starts (it was preempted)"
    else:
        how = f"waited {_hours(total)} before it started"
    share_of_main = waited[main] / total
    why = SHORT_REASONS.get(main, main.replace("_", " "))
    parts = [f"Job {job} of {share} {how}, "
             f"{'all' if share_of_main > 0.995 else f'{share_of_main:.0%}'} of it because {why}"]  # fmt: skip
    type_name = held.get("type") if held else None
    parts.append(_quota_words(policy, share, type_name))
    if held is not None:
        holders = ", ".join(f"{name} ({n})" for name, n in held["held"].items()) or "no job"
        unit = f" {type_name}" if type_name else ""
        after = held["time"] - timeline["submit_time"]
        when = "when it was submitted"
        if after > 0:
            when = f"{_hours(after)} after submission, when its longest wait began,"
        free = "none was" if held["free"] == 0 else f"{held['free']} {'was' if held['free'] == 1 else 'were'}"
        parts.append(f"{when} the {held['capacity']}{unit} instances were held by {holders} and {free} free "
                     f"(it needs {count})")  # fmt: skip
    need = max(1, count - (held["free"] if held else 0))
    remedy = REMEDIES.get(main, "").format(
        need=need, s="" if need == 1 else "s", type=type_name or "its type", share=share,
        limit=_limit_words(policy, share, type_name),
    )  # fmt: skip
    sentence = "; ".join(parts)
    return f"{sentence}. It would have started with {remedy}." if remedy else f"{sentence}."
