"""Why a job waited: its timeline rebuilt from a replay's wait history (its starts and
preemptions, and the reasons the scheduler found for its queue), with the reason at each moment
it was RUNNABLE. Cheap to record, rebuilt for one job when someone asks."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from scheduling.binding import job_id_order
from scheduling.errors import InputError
from scheduling.model import Policy, WaitReason
from scheduling.outcomes import REASONS, STATE_NAMES, JobOutcomes, State, WaitHistory
from scheduling.trace import NO_TYPE, TYPE_SEPARATOR, Trace, accepted_types

REASON_WORDS = {
    WaitReason.POOL_FULL: "the pool's instances of its type were all in use and it could preempt none",
    WaitReason.NOTHING_LENDABLE: "the idle capacity was quota its owners may not lend (RESERVE)",
    WaitReason.BORROW_LIMIT: "its share had reached its borrow limit",
    WaitReason.OVER_QUOTA_NO_BORROWING: "its share was at its quota and may not borrow",
    WaitReason.BEHIND_QUEUE_HEAD: "it was behind the first job of its share's queue (strict FIFO)",
}


@dataclass(frozen=True)
class Segment:
    start: float
    end: float
    state: str  # "waiting" or "running"
    reason: str | None = None  # WaitReason name, lower case, while waiting
    words: str = ""  # the reason, or how a running segment ended, for a person

    def to_dict(self) -> dict:
        return {
            "start": self.start,
            "end": self.end,
            "seconds": self.end - self.start,
            "state": self.state,
            "reason": self.reason,
            "words": self.words,
        }


def find_job(trace: Trace, job_id: str) -> int:
    try:
        return trace.job_id.index(job_id)
    except ValueError:
        raise InputError(f"no job {job_id!r} in this trace", field="job_id") from None


def job_timeline(policy: Policy, trace: Trace, outcomes: JobOutcomes, job: int) -> dict:
    """The job's segments (waiting with the reason, running with how it ended) and its waiting
    time by reason. ``outcomes`` must carry the replay's ``history``."""
    history = outcomes.history or WaitHistory.empty()
    submit = float(trace.submit_time[job])
    end = float(outcomes.end[job])
    state = State(int(outcomes.state[job]))
    share = policy.share_index()[trace.share_names[trace.share[job]]]
    accepted = _accepted_types(policy, trace, job)
    group_key = (share, _history_type(policy, accepted), int(trace.instance_count[job]))

    starts = history.columns("starts", 2)
    starts = starts[starts[:, 1] == job, 0]
    preemptions = history.columns("preemptions", 4)
    preemptions = preemptions[preemptions[:, 1] == job]
    reasons = _reasons_of(history, group_key, job)

    segments: list[Segment] = []
    waiting_from = submit
    for attempt, start in enumerate(starts.tolist()):
        segments += _waiting(waiting_from, start, reasons)
        if attempt < len(preemptions):
            time, _, preemptor, cause = preemptions[attempt].tolist()
            how = _preemption_text(trace, int(preemptor), int(cause), time)
            if state == State.FAILED and attempt == len(starts) - 1:
                how += "; its preemption retries were used up: FAILED"
            segments.append(Segment(start, time, "running", None, how))
            waiting_from = time
        else:
            segments.append(Segment(start, end, "running", None, "succeeded"))
    ending = None
    if state == State.CANCELLED:
        # Section 10: RUNNABLE without a break since its submission or last preemption, until now.
        segments += _waiting(waiting_from, end, reasons)
        ending = f"cancelled after {(end - waiting_from) / 3600:,.3g} h RUNNABLE (the policy's time limit)"
    if not history.strict:
        segments = _mark_behind(segments, _ahead_pending(trace, outcomes, history, group_key, job))
    waited: dict[str, float] = {}
    for segment in segments:
        if segment.state == "waiting":
            waited[segment.reason] = waited.get(segment.reason, 0.0) + segment.end - segment.start
    return {
        "job_id": trace.job_id[job],
        "share": trace.share_names[trace.share[job]],
        # section 12: the types it accepts, in its share's order, and the one its last run had
        "accepted_types": accepted,
        "instance_type": _run_type(policy, outcomes, job, accepted),
        "state": STATE_NAMES[state],
        "unschedulable_reason": REASONS[int(outcomes.reason[job])],
        "ending": ending,
        "submit_time": submit,
        "segments": [s.to_dict() for s in segments],
        "waited_by_reason_seconds": waited,
    }


def _accepted_types(policy: Policy, trace: Trace, job: int) -> list[str]:
    """The job's instance types in the order its share tries them (one, mostly)."""
    code = int(trace.instance_type[job])
    if code == NO_TYPE:
        return [next(iter(policy.instance_types))]
    name = trace.type_names[code]
    if name in policy.instance_types or TYPE_SEPARATOR not in name:
        return [name]
    names = set(accepted_types(name))
    order = policy.types_in_order(trace.share_names[trace.share[job]])
    return [t for t in order if t in names]


def _history_type(policy: Policy, accepted: list[str]) -> float:
    """The type column of the job's queue group in the wait history: the type's index, or for a job
    of several types minus the mask of their indices (as ``scheduling.replay.engine`` records it)."""
    types = list(policy.instance_types)
    if len(accepted) == 1:
        return types.index(accepted[0])
    return -float(sum(1 << types.index(t) for t in accepted))


def _run_type(policy: Policy, outcomes: JobOutcomes, job: int, accepted: list[str]) -> str | None:
    """The type of its last run; None for a job of several types that never ran."""
    if outcomes.instance_type is None:  # (outcomes kept before section 12: one type per job)
        return accepted[0] if len(accepted) == 1 else None
    code = int(outcomes.instance_type[job])
    return list(policy.instance_types)[code] if code >= 0 else None


def _ahead_pending(
    trace: Trace, outcomes: JobOutcomes, history: WaitHistory, group_key: tuple, job: int
) -> tuple[np.ndarray, np.ndarray]:
    """(instants, how many) of the jobs ahead of ``job`` in its queue group were RUNNABLE:
    same share, type and size, higher priority or the same and submitted earlier (the trace's
    priorities: updates during the replay are not followed here)."""
    _, _, count = group_key
    same = (trace.share == trace.share[job]) & (trace.instance_count == count)
    same &= trace.instance_type == trace.instance_type[job]
    priority, submit = trace.priority, trace.submit_time
    ahead = same & ((priority > priority[job]) | ((priority == priority[job]) & (submit < submit[job])))
    ties = same & (priority == priority[job]) & (submit == submit[job])
    if ties.sum() > 1:  # same priority and submit time: job_id decides
        rank = job_id_order(trace.job_id)
        ahead |= ties & (rank < rank[job])
    members = np.flatnonzero(ahead)
    if not len(members):
        return np.zeros(0), np.zeros(0)
    starts = history.columns("starts", 2)
    starts = starts[np.isin(starts[:, 1], members)]
    preemptions = history.columns("preemptions", 4)
    preemptions = preemptions[np.isin(preemptions[:, 1], members)]
    victims = preemptions[:, 1].astype(np.int64)
    # A FAILED job's last preemption is the one that failed it: it did not queue again.
    fatal = (outcomes.state[victims] == State.FAILED) & (preemptions[:, 0] == outcomes.end[victims])
    times = np.concatenate([submit[members], starts[:, 0], preemptions[~fatal, 0]])
    steps = np.concatenate([np.ones(len(members)), -np.ones(len(starts)), np.ones(int((~fatal).sum()))])
    instants, inverse = np.unique(times, return_inverse=True)
    totals = np.zeros(len(instants))
    np.add.at(totals, inverse, steps)
    return instants, np.cumsum(totals)


def _mark_behind(segments: list[Segment], ahead: tuple[np.ndarray, np.ndarray]) -> list[Segment]:
    """Split waiting segments where jobs ahead of it in its own queue were waiting too."""
    instants, pending = ahead
    if not len(instants):
        return segments
    out = []
    for segment in segments:
        if segment.state != "waiting":
            out.append(segment)
            continue
        cuts = [
            segment.start,
            *instants[(instants > segment.start) & (instants < segment.end)].tolist(),
            segment.end,
        ]
        pieces = []
        for a, b in zip(cuts, cuts[1:], strict=False):
            index = np.searchsorted(instants, a, side="right") - 1
            behind = index >= 0 and pending[index] > 0
            words = segment.words + ("; and behind higher-priority jobs of its own queue" if behind else "")
            if pieces and pieces[-1].words == words:
                pieces[-1] = Segment(pieces[-1].start, b, "waiting", segment.reason, words)
            else:
                pieces.append(Segment(a, b, "waiting", segment.reason, words))
        out.extend(pieces)
    return out


def _reasons_of(history: WaitHistory, group_key: tuple, job: int) -> tuple[np.ndarray, np.ndarray]:
    """(times, reasons) in effect for this job's queue, in time order."""
    rows = history.columns("reasons", 4)
    if history.strict:
        share = group_key[0]
        mine = rows[rows[:, 1] == share]
        # The share's head waits for its own reason; every other job waits behind it.
        reasons = np.where(mine[:, 3] == job, mine[:, 2], float(WaitReason.BEHIND_QUEUE_HEAD))
        return mine[:, 0], reasons
    groups = history.columns("groups", 3)
    index = np.flatnonzero((groups == np.array(group_key)).all(axis=1))
    if not len(index):
        return np.zeros(0), np.zeros(0)
    mine = rows[rows[:, 1] == index[0]]
    return mine[:, 0], mine[:, 2]


def _waiting(start: float, end: float, reasons: tuple[np.ndarray, np.ndarray]) -> list[Segment]:
    """The waiting interval [start, end) split where the reason in effect changes."""
    if end <= start:
        return []
    times, codes = reasons
    inside = np.flatnonzero((times > start) & (times < end))
    before = np.flatnonzero(times <= start)
    first = before[-1] if len(before) else (inside[0] if len(inside) else None)
    cuts = [start] + times[inside].tolist() + [end]
    initial = codes[first] if first is not None else float(WaitReason.POOL_FULL)
    codes_at = [initial] + codes[inside].tolist()
    segments = []
    for (a, b), code in zip(zip(cuts, cuts[1:], strict=False), codes_at, strict=True):
        reason = WaitReason(int(code))
        if segments and segments[-1].reason == reason.name.lower():
            segments[-1] = Segment(segments[-1].start, b, "waiting", segments[-1].reason, segments[-1].words)
        elif b > a:
            segments.append(Segment(a, b, "waiting", reason.name.lower(), REASON_WORDS[reason]))
    return segments


# The wait history's preemption codes (scheduling.replay.engine: IN_SHARE, CROSS_SHARE, FAIR_SHARING,
# CAPACITY).
_PREEMPTION_CAUSES = ("in-share", "cross-share", "fair sharing")


def _preemption_text(trace, preemptor: int, cause: int, time: float) -> str:
    if cause == 3 or preemptor < 0:
        return f"preempted: capacity change at {time:g} s"
    return f"preempted by {trace.job_id[preemptor]} ({_PREEMPTION_CAUSES[cause]})"
