"""Section 8's round: candidates one at a time, the next being the one whose share would have the
lowest value with it admitted, then queue order; a refusal's memo (``scheduling.replay.refusals``) lets
the jobs behind a refusal be passed over without a try until the next change.
"""

from __future__ import annotations

import bisect
from typing import Final

from scheduling.replay.fair import cohort_pick, same_candidates_until
from scheduling.replay.fair_tree import lead_bound, lead_seat, round_pick, tied_run_end, tied_seat
from scheduling.replay.preemption_loops import PreemptionLoops
from scheduling.replay.rounds import Admission, Rounds
from scheduling.replay.rules import (
    ADMITTED,
    NO_KEY,
    NO_PASSING_ROOM,
    NO_ROOM,
    NO_VICTIMS,
    REFUSED,
    value_below,
    value_equal,
)
from scheduling.replay.state import Group, Job

bisect_left: Final = bisect.bisect_left
bisect_right: Final = bisect.bisect_right


def fair_round(r: Rounds, admission: Admission, now: float, lendable: float, loops: PreemptionLoops) -> bool:
    """Section 8's round: candidates one at a time, the next being the one whose share would
    have the lowest value with it admitted (values as they are at that moment), then queue
    order. best_effort_fifo: every pending job as the round starts; strict_fifo: each share's
    head as the round starts.

    Each queue group offers its jobs in queue order, all with the same value. A refusal
    holds for the jobs behind it in its group that have the same candidates as long as
    nothing changed since (``version``), so those are passed over without a try until the
    next change."""
    r.round_id += 1
    groups = _offered(r)
    refusals = r.refusals
    if not r.strict and refusals.round_would_repeat(groups):
        return False
    preempted: list[Job] = []
    admitted = False
    # A group refused in this round at the current version is asleep: every job behind the
    # refusal would be passed over until the next change, so rather than pick them one by
    # one (a scan of all groups each), the group sits out and, at the next admission, skips
    # at once the jobs it would have offered before it (see _wake_asleep).
    for g in groups:
        g.asleep_at = -1
    fair_tree = r.fair_tree
    tree_round = r.tree_round
    if tree_round is not None:
        tree_round.start(groups, refusals.calendar_changed_at)
    while True:
        version = refusals.version
        # Over a tree the order is a tournament (values of every node change with any share's
        # usage): no group sleeps; the jobs behind a refusal are passed over where they would be
        # picked (``_past_refusal``: at once for those that would be picked one after another).
        if tree_round is not None:
            assert fair_tree is not None
            best = round_pick(fair_tree, tree_round, version)
            if best is not None:
                tree_round.moved(best)  # (every way through this loop moves the picked group on)
        else:
            best = cohort_pick(groups, version, refusals.calendar_changed_at, lendable)
        if best is None:
            break
        g = best
        if g.asleep_at == version:
            # (one cohort: picked for its first job past the refusal with other candidates)
            g.ptr = g.wake
            g.asleep_at = -1
        key = g.jobs[g.ptr]
        best_value = g.value
        if refusals.behind_refusal(g, key):
            # Behind a refusal (in this round or an earlier one), nothing changed since.
            _note_reason(r, g, key, version, now)  # (passed over is refused, as far as why it waits)
            if fair_tree is None:
                g.ptr += 1
            else:
                _past_refusal(r, g, lead_seat(fair_tree, g), version, now)
            continue
        job = r.queues.job_of(key)
        if refusals.holds(job):
            outcome = REFUSED  # (only its bookkeeping is done)
            if loops.twice:  # (its search would run, and leave out the same jobs)
                loops.note(job, now)
        else:
            outcome = admission.try_admit(job, now, preempted)
            refusals.note_fair_try(job, outcome == NO_ROOM, outcome == NO_PASSING_ROOM)
        if outcome == ADMITTED:
            admitted = True
            if fair_tree is None:
                _wake_asleep(groups, version, best_value, key)
            _admitted(r, g, now)
        else:
            _refused(r, g, job, outcome, version, now)
    r.queues.requeue(preempted, now)
    return admitted


def _admitted(r: Rounds, g: Group, now: float) -> None:
    """The group's job at its cursor was admitted: out of the group (strict: ``_start`` took it
    out of its queues already)."""
    if not r.strict:
        r.queues.add_waiting_time(g, now)
        del g.jobs[g.ptr]
    g.end -= 1
    if not g.jobs:
        r.refusals.close(g)


def _refused(r: Rounds, g: Group, job: Job, outcome: int, version: int, now: float) -> None:
    """The group's job at its cursor was refused: the refusal's memo (how far it speaks for the
    jobs behind it, ``_speaks_until``), the wait reason, the cursor past it; then the jobs behind
    it that the round would pass over next: one cohort, the group sleeps (``_wake_asleep``);
    over a tree, they are passed over at once while its next job is still the pick."""
    refusals = r.refusals
    g.refused_at = version
    g.refused_key = g.jobs[g.ptr]
    g.same_until = _speaks_until(r, g, job, outcome)
    job.refused_at = version
    _note_reason(r, g, g.refused_key, version, now)
    g.ptr += 1
    if not refusals.memo:
        return
    fair_tree = r.fair_tree
    if fair_tree is None:
        g.asleep_at = version
        g.wake = g.end if g.same_until == NO_KEY else bisect_left(g.jobs, g.same_until, g.ptr, g.end)
    elif g.ptr < g.end and refusals.version == version:
        at = lead_seat(fair_tree, g)
        if g.jobs[g.ptr] < lead_bound(fair_tree, g, at):
            # (the refusal changed nothing: its next job would be picked, and passed over, next)
            _past_refusal(r, g, at, version, now)


def _offered(r: Rounds) -> list[Group]:
    """The groups of the round, each offering the jobs from ptr to end: strict, its share's head;
    else all its jobs."""
    groups: list[Group] = []
    if r.strict:
        for share in r.shares:
            if share.queue:
                g = r.queues.group_of(r.queues.job_of(share.queue[0]))
                groups.append(g)
                g.ptr = bisect_left(g.jobs, share.queue[0])
                g.end = g.ptr + 1
    else:
        for g in r.queues.groups:
            if g.jobs:
                groups.append(g)
                g.ptr = 0
                g.end = len(g.jobs)
    return groups


def _note_reason(r: Rounds, g: Group, key: int, version: int, now: float) -> None:
    """Why the group's job ``key`` at its cursor waits, refused after a try or passed over behind a
    refusal alike: strict_fifo notes every refused head of a share (a share's heads come from
    several groups: a head cancelled, the next of its group waits for its own reason); best_effort_fifo
    a group's head's (behind its head, a job's refusal says nothing new about the group)."""
    if r.strict:
        r.queues.note_head_reason(g.account.share, r.queues.job_of(key), now)
    elif g.ptr == 0:
        g.reason_noted_at = version
        r.queues.note_group_reason(g, r.queues.job_of(key), now)


def _speaks_until(r: Rounds, g: Group, job: Job, outcome: int) -> int:
    """The queue key up to which the refusal of ``job`` speaks for the jobs behind it in its group
    (``fair.same_candidates_until``). A refusal told before the search (no room even were every
    candidate, or every one that could pass, preempted; or no candidate) speaks for them all: their
    candidates are among the job's. (``holds``: the job's own earlier refusal, of either kind.)"""
    if outcome in (NO_ROOM, NO_PASSING_ROOM, NO_VICTIMS):
        return NO_KEY
    if outcome == REFUSED and (job.no_room or job.no_passing_room):
        return NO_KEY
    return same_candidates_until(g, job, g.ptr, r.queues.by_arrival, r.queues.n_jobs)


def _past_refusal(r: Rounds, g: Group, at: int, version: int, now: float) -> None:
    """Over a tree, the round's pick ``g`` behind its refusal: its jobs that would be picked next one
    after another, each passed over, are passed over at once, up to the bound of its lead
    (``lead_seat`` ``at``, ``lead_bound``: its first job with other candidates at the latest), and
    at least the picked one; then those of a group tied with it (``_pass_over_tied``)."""
    values = r.fair_tree
    assert values is not None
    limit = lead_bound(values, g, at)
    g.ptr = g.end if limit == NO_KEY else max(g.ptr + 1, g.first_from(limit, g.ptr, g.end))
    _pass_over_tied(r, g, at, version, now)


def _pass_over_tied(r: Rounds, g: Group, at: int, version: int, now: float) -> None:
    """Over a tree, after the group's jobs behind its refusal were passed over up to its lead's bound
    (seat ``at``, ``_past_refusal``): when a tie with another group behind its own refusal stopped
    them (``fair_tree.tied_seat``), the round would pass over the jobs of the two in turn, one pick
    each; they are passed over at once, up to where the run ends (``fair_tree.tied_run_end``), the
    partner's reason noted as its first pick would."""
    values = r.fair_tree
    tree_round = r.tree_round
    assert values is not None and tree_round is not None
    if g.ptr >= g.end:
        return
    at = tied_seat(values, g, at)
    if at < 0:
        return
    partner = values.seats[at].tie_group
    assert partner is not None
    if partner.ptr >= partner.end:
        return
    key = partner.jobs[partner.ptr]
    if not r.refusals.behind_refusal(partner, key):
        return
    end = tied_run_end(values, g, partner, at)
    if end <= key:
        return
    g.ptr = g.first_from(end, g.ptr, g.end)
    _note_reason(r, partner, key, version, now)
    partner.ptr = partner.first_from(end, partner.ptr, partner.end)
    tree_round.passed(partner)


def _wake_asleep(groups: list[Group], version: int, value: tuple[bool, int, int], key: int) -> None:
    """An admission ends the state in which the round's asleep groups were refused. While it
    lasted, values stood still, so the round took candidates in increasing (value, queue key)
    order: each asleep group would have offered, and passed over, every job ordered before the
    admitted one. Skip those now; the rest are tried in the new state."""
    for g in groups:
        if g.asleep_at != version or g.ptr >= g.end:
            continue
        # (never past its first job with other candidates, which it offers while asleep)
        if value_below(g.value, value):
            g.ptr = g.wake
        elif value_equal(g.value, value):
            g.ptr = min(bisect_right(g.jobs, key, g.ptr, g.end), g.wake)
