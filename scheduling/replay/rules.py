"""Every rule of SEMANTICS.md as one small named function: what a newcomer looks for first.

The engine (``scheduling.replay.engine``) keeps the state and the indexes that make it fast; the
decisions it takes (does a job fit, may it preempt that one, which job comes first, why does it
wait) are these functions. Each **(choice)** of SEMANTICS.md lives in exactly one of them.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Final

from mypy_extensions import i64

from scheduling.model import Cause, UnschedulableReason, WaitReason

# A limit of "unlimited" in the per-(share, type) tables: more instances than any pool has, so
# integer arithmetic (and the compiled engine's native ints) give the same answers as infinity.
NO_LIMIT: Final = 1 << 60

# Wait reasons as native ints (WaitReason is an IntEnum: these are its values).
POOL_FULL: Final[int] = int(WaitReason.POOL_FULL)
NOTHING_LENDABLE: Final[int] = int(WaitReason.NOTHING_LENDABLE)
BORROW_LIMIT: Final[int] = int(WaitReason.BORROW_LIMIT)
OVER_QUOTA_NO_BORROWING: Final[int] = int(WaitReason.OVER_QUOTA_NO_BORROWING)
BEHIND_QUEUE_HEAD: Final[int] = int(WaitReason.BEHIND_QUEUE_HEAD)


def instances(limit: float) -> int:
    """A borrow or lend limit as whole instances (limits are already whole or unlimited)."""
    return NO_LIMIT if math.isinf(limit) else int(limit)


# --- section 3: accounting -----------------------------------------------------------------------


def lendable(lends: bool, quota: int, usage: int, lend_limit: int) -> int:
    """What a share lends right now: min(lending_limit, idle quota) for a lender, 0 for RESERVE."""
    if not lends:
        return 0
    idle = quota - usage
    return 0 if idle <= 0 else min(lend_limit, idle)


def headroom(
    quota: int,
    usage: int,
    borrow_limit: int,
    unlendable: int,
    free: int,
    unassigned: int,
    lendable_sum: int,
    borrowed_sum: int,
) -> int:
    """Section 4's fit, as the most instances a share could start now without preemption.

    Three limits: the pool's free capacity; its quota plus borrow limit; and the borrowing
    invariant (sum of borrowed <= unassigned + sum of lendable), which in closed form says a
    share may take its idle quota that it cannot lend plus the invariant's current slack: every
    further instance either stops being lendable or is borrowed, costing one unit."""
    slack = unassigned + lendable_sum - borrowed_sum
    return min(min(free, quota - usage + borrow_limit), unlendable + slack)


def invariant_holds(used: int, capacity: int, unassigned: int, lendable_sum: int, borrowed_sum: int) -> bool:
    """Section 3 for one type: the pool holds no more than its capacity, and the borrowed sum is
    covered by unassigned plus lendable capacity (section 9 preempts until it holds again)."""
    return used <= capacity and borrowed_sum <= unassigned + lendable_sum


# --- section 4: who may preempt whom (one predicate for the victim search and the reopening) ----


def reclaim_allows(may_reclaim: bool, reclaims_any: bool, priority: int, victim_priority: int) -> bool:
    """Cross-share reclaim: ``any`` takes every borrowing job, ``lower_priority`` only jobs of a
    lower priority than the preemptor's, ``never`` none."""
    return may_reclaim and (reclaims_any or victim_priority < priority)


def in_share_allows(
    preempts: bool, equal_too: bool, priority: int, submit: float, victim_priority: int, victim_submit: float
) -> bool:
    """In-share preemption: a lower priority, or (``lower_or_newer_equal_priority``) the same
    priority and a later submit time."""
    if not preempts:
        return False
    if victim_priority < priority:
        return True
    return equal_too and victim_priority == priority and victim_submit > submit


def in_share_levels_below(equal_too: bool, priority: int) -> int:
    """The priority below which in-share victims are looked for (``in_share_allows`` then picks
    among the equal ones)."""
    return priority + 1 if equal_too else priority


# --- section 4: the three orderings ------------------------------------------------------------


NO_KEY: Final = 1 << 61  # after every queue key (``queue_key``); a short int in the compiled engine


def queue_key(priority: i64, arrival: i64, n_jobs: i64) -> i64:
    """A share's queue order: priority (higher first), then submit time, then job_id, as one
    integer. ``arrival`` is the job's place in (submit time, job_id) order, so comparing keys
    compares (-priority, submit time, job_id) without a tuple; the job is
    ``by_arrival[key % n_jobs]``. (i64: priorities are 0-9999, so the key fits.)"""
    return -priority * n_jobs + arrival


def round_key(level: int, queue: int) -> tuple:
    """A round's order: lower borrowing levels first (section 4: 0 within quota, 1 borrowing;
    section 13: the height of the cohort it borrows from), then the queue order."""
    return (level, queue)


def borrowing_level(needs_borrow: bool) -> int:
    """Section 4's borrowing level of a policy without cohorts: 0 within quota, else 1 (the root)."""
    return 1 if needs_borrow else 0


def unschedulable_in_tree(count: int, pool_capacity: int, potential: int) -> UnschedulableReason | None:
    """Section 6 with cohorts (13): more than the pool has, or more than the share could ever have
    with the rest of the tree idle (its potential available, Kueue's potentialAvailable)."""
    if count > pool_capacity:
        return UnschedulableReason.SERVICE_ENVIRONMENT_MAX_RESOURCE
    if count > potential:
        return UnschedulableReason.QUOTA_MANAGEMENT_LIMIT_EXCEEDED
    return None


def victim_key(priority: int, start: float, rank: int) -> tuple:
    """Victim order within one side (other shares / own share): lowest priority, then most
    recently started, then job_id descending. (``state.Running`` keeps each account's running
    jobs in this order without building keys; they are built to merge several shares'.)"""
    return (priority, -start, -rank)


def capacity_victim_key(borrowing: bool, priority: int, start: float, rank: int) -> tuple:
    """Section 9: who goes first when capacity or a quota goes down: jobs of shares that borrow
    that type, then section 4's victim order."""
    return (not borrowing, priority, -start, -rank)


# --- section 8: fair sharing ------------------------------------------------------------------------


# A share value, exactly: (infinite, numerator, denominator) with a positive denominator. Within
# one instant every value has the same positive factor 1000 / (L x the GPUs' common denominator),
# which is left out, so values compare by integer cross-multiplication: 1000 x 1 / 18 / 1 and
# 1000 x 3 / 18 / 3 are equal, where two float quotients (of weights such as 0.1 and 0.3) need not be.
ZERO_VALUE: Final = (False, 0, 1)


def exact_number(number: float) -> tuple[int, int]:
    """A policy's number (a fair weight, GPUs per instance) as the fraction its decimal text says
    (0.1 is 1/10, not the binary float nearest to it): its numerator and denominator."""
    fraction = Fraction(repr(float(number)))
    return fraction.numerator, fraction.denominator


def share_value(
    borrowed_units: int, lendable_gpus: float, weight_num: int, weight_den: int
) -> tuple[bool, int, int]:
    """Kueue's dominant resource share, exactly, as a triple that ``value_below`` compares like the
    value: 0 when nothing is borrowed or nothing is lendable, 1000 x B / L / weight, and for weight 0
    infinity (two infinite values compare by 1000 x B / L: the first item says infinite).
    ``borrowed_units``: B in units of the GPUs' common denominator (``fair.count_gpus_exactly``);
    the weight as the fraction weight_num / weight_den."""
    if borrowed_units <= 0 or lendable_gpus <= 0:
        return ZERO_VALUE
    if weight_num == 0:
        return (True, borrowed_units, 1)
    return (False, borrowed_units * weight_den, weight_num)


def value_below(a: tuple[bool, int, int], b: tuple[bool, int, int]) -> bool:
    """a < b for two share values: infinite above finite, else by cross-multiplication."""
    if a[0] != b[0]:
        return b[0]
    if a[2] == b[2]:  # (the same weight's denominator, as a rule: no multiplication)
        return a[1] < b[1]
    return a[1] * b[2] < b[1] * a[2]


def value_equal(a: tuple[bool, int, int], b: tuple[bool, int, int]) -> bool:
    """a == b for two share values, as fractions (as ``value_below``)."""
    if a[0] != b[0]:
        return False
    if a[2] == b[2]:
        return a[1] == b[1]
    return a[1] * b[2] == b[1] * a[2]


def final_share_passes(new: tuple[bool, int, int], after: tuple[bool, int, int]) -> bool:
    """LessThanOrEqualToFinalShare: the preemptor's share, with the job, is at most the target's
    share without the victim."""
    return not value_below(after, new)


def initial_share_passes(new: tuple[bool, int, int], old: tuple[bool, int, int]) -> bool:
    """LessThanInitialShare: the preemptor's share, with the job, is below the target's share as
    it is now."""
    return value_below(new, old)


def fair_round_before(
    value: tuple[bool, int, int], queue: int, other_value: tuple[bool, int, int], other_queue: int
) -> bool:
    """A fair-sharing round's order: the value the job's share would have with it admitted, then
    the queue order (priority, submit time, job_id)."""
    if value_below(value, other_value):
        return True
    return value_equal(value, other_value) and queue < other_queue


def target_tie_before(own: bool, key: tuple, other_own: bool, other_key: tuple) -> bool:
    """Section 8's target on equal values: the share whose next candidate comes first in section
    4's whole victim order, other shares' jobs before the preemptor's own share's, then
    ``victim_key`` (Kueue's CandidatesOrdering, used by TargetClusterQueueOrdering on equal DRS).
    ``own``: the candidate is of the preemptor's share; ``key``: its ``victim_key``."""
    if own != other_own:
        return other_own
    return key < other_key


# Section 8's preemption loops **(choice)**: within one instant, a job already preempted this
# often at that instant is no candidate victim again there.
PREEMPTIONS_BEFORE_LEFT_OUT: Final = 2


def left_out_for_loop(preempted_at: float, preempted_here: int, now: float) -> bool:
    """Whether a running job is left out of the victim searches at ``now`` (it was preempted
    ``preempted_here`` times at the instant ``preempted_at``)."""
    return preempted_at == now and preempted_here >= PREEMPTIONS_BEFORE_LEFT_OUT


# --- sections 4 and 6: why a job waits, and when it never runs ------------------------------------


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


def unschedulable_over_calendar(reasons: list[UnschedulableReason | None]) -> UnschedulableReason | None:
    """Section 9: unschedulable only if it is so under the policy at every instant of the
    calendar **(choice: the pool's reason when the pool is too small at every instant, else the
    quota's)**."""
    if any(reason is None for reason in reasons):
        return None
    if all(reason is UnschedulableReason.SERVICE_ENVIRONMENT_MAX_RESOURCE for reason in reasons):
        return UnschedulableReason.SERVICE_ENVIRONMENT_MAX_RESOURCE
    return UnschedulableReason.QUOTA_MANAGEMENT_LIMIT_EXCEEDED


def wait_reason(
    count: int, usage: int, quota: int, borrow_limit: float, borrows: bool, used: int, capacity: int
) -> int:
    """The first limit of section 4's fit test that a refused job runs into **(choice: the
    share's own limits first, then the pool, then the borrowing invariant)**, as a WaitReason
    value."""
    if usage + count > quota and not borrows:
        return OVER_QUOTA_NO_BORROWING
    if usage + count > quota + borrow_limit:
        return BORROW_LIMIT
    if used + count > capacity:
        return POOL_FULL
    return NOTHING_LENDABLE


# --- section 4: what trying to admit a job gives (one vocabulary for every round) ----------------

ADMITTED: Final = 0
REFUSED: Final = 1  # there were preemption candidates, but freeing them would not make it fit
NO_VICTIMS: Final = 2  # there was no preemption candidate at all
NO_ROOM: Final = 3  # fair sharing: it would not fit even were every candidate preempted
NO_PASSING_ROOM: Final = 4  # nor were every candidate preempted that could pass a strategy


def within_quota_once_admitted(usage: int, count: int, quota: int) -> bool:
    """Section 4: a job stays within its share's quota once admitted (its share may reclaim, and
    it takes the round's first borrowing level) when the share's usage with it is at most the
    quota."""
    return usage + count <= quota


# --- sections 4, 8 and 9: preemption causes and what a preemption costs ------------------------

# The codes of the wait history's preemption records, and the Cause each stands for (CAUSES).
IN_SHARE: Final = 0
CROSS_SHARE: Final = 1
FAIR_SHARING: Final = 2
CAPACITY: Final = 3
CAUSES: Final = (Cause.IN_SHARE, Cause.CROSS_SHARE, Cause.FAIR_SHARING, Cause.CAPACITY)


def preemption_cause(same_share: bool, preemptor_within_quota: bool) -> int:
    """Why a victim goes: in-share when it is of the preemptor's share; else cross-share reclaim
    when the preemptor stays within its quota (section 4), fair sharing when it borrows (section 8:
    only a fair-sharing search takes victims for a borrowing job)."""
    if same_share:
        return IN_SHARE
    return CROSS_SHARE if preemptor_within_quota else FAIR_SHARING


def saved_work(progress: float, checkpoint_interval: float) -> float:
    """Section 2: the work a preempted job keeps: its progress down to its last checkpoint (none
    without checkpoints)."""
    if checkpoint_interval > 0:
        return (progress // checkpoint_interval) * checkpoint_interval
    return 0.0


def rerun_cost(lost: float, startup_spent: float, count: int) -> float:
    """Section 2: the instance-seconds a preemption wastes: the work lost since the last
    checkpoint and the start-up spent, on each of the job's instances."""
    return (lost + startup_spent) * count


def retries_exhausted(retries: int, preemptions: int) -> bool:
    """Section 2: a job preempted more often than its retries fails (retries < 0: no limit)."""
    return 0 <= retries < preemptions


def runnable_deadline(runnable_since: float, timeout: float, now: float) -> float:
    """Section 10 **(choice)**: when a RUNNABLE job is cancelled: its limit counted from when it
    became RUNNABLE, and not before the instant it is placed at (a resumed job whose limit ran
    out before the snapshot is cancelled at the snapshot's instant)."""
    return max(runnable_since + timeout, now)
