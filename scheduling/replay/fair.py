"""Section 8: fair sharing's share values and its victim search (Kueue ``fairPreemptions``,
``pkg/scheduler/preemption/preemption.go``), on the engine's accounts.

Usage is changed tentatively with ``Account.shift`` while the search runs and put back before it
returns: the engine then preempts the victims for real.
"""

from __future__ import annotations

from math import lcm
from typing import Final

from scheduling.replay.rules import (
    NO_KEY,
    NO_LIMIT,
    ZERO_VALUE,
    exact_number,
    fair_round_before,
    final_share_passes,
    in_share_allows,
    in_share_levels_below,
    initial_share_passes,
    left_out_for_loop,
    preemption_cause,
    reclaim_allows,
    share_value,
    target_tie_before,
    value_below,
    value_equal,
    victim_key,
)
from scheduling.replay.state import Account, Group, Job, Running, ShareState, TypePool
from scheduling.replay.victims import Headroom, drop_unneeded, give_back


def lendable_gpus(pools: list[TypePool]) -> float:
    """L: the pool's lendable GPUs, unassigned capacity plus every lender's quota up to its
    lending limit, whatever is in use."""
    total = 0.0
    for pool in pools:
        lent = 0
        for account in pool.accounts:
            lent += account.lendable(0)
        total += pool.gpus * (pool.unassigned + lent)
    return total


def count_gpus_exactly(pools: list[TypePool]) -> None:
    """Each pool's GPUs per instance as a whole number of units (``TypePool.gpu_units``), the unit
    being 1 / the common denominator of every type's GPUs as written (0.5 and 1 GPUs: units of
    half a GPU), so that borrowed GPUs add up exactly."""
    denominator = 1
    for pool in pools:
        denominator = lcm(denominator, exact_number(pool.gpus)[1])
    for pool in pools:
        num, den = exact_number(pool.gpus)
        pool.gpu_units = num * (denominator // den)


def borrowed_gpus(share: ShareState) -> int:
    """B_s: the GPUs a share holds above its quota, over all types, in GPU units
    (``count_gpus_exactly``; a job counted as admitted is in its account's usage)."""
    total = 0
    for account in share.accounts:
        if account.usage > account.quota:
            total += account.pool.gpu_units * (account.usage - account.quota)
    return total


def borrowed_gpus_with(share: ShareState, extra: Account, count: int) -> int:
    """B_s(r): ``borrowed_gpus`` were ``count`` more instances in ``extra`` (the same sum, term by
    term, without changing the account's usage)."""
    total = 0
    for account in share.accounts:
        usage = account.usage + count if account is extra else account.usage
        if usage > account.quota:
            total += account.pool.gpu_units * (usage - account.quota)
    return total


def value_of(share: ShareState, lendable: float) -> tuple[bool, int, int]:
    return share_value(borrowed_gpus(share), lendable, share.weight_num, share.weight_den)


def value_with(account: Account, count: int, lendable: float) -> tuple[bool, int, int]:
    """V_s(r): the share's value were ``count`` more instances of the account's type admitted."""
    share = account.share
    borrowed = borrowed_gpus_with(share, account, count)
    return share_value(borrowed, lendable, share.weight_num, share.weight_den)


class _Candidates:
    """One share's candidates in victim order with the next one at hand for the target's
    tie-break: read lazily from its account's running levels (a share may run thousands of jobs;
    ``Running.in_victim_order``'s order, filtered by ``in_share_allows`` for the preemptor's own
    share, else by ``reclaim_allows``, less the jobs left out for a loop at ``exclude_at``), or from
    a list."""

    __slots__ = (
        "share", "running", "below", "preemptor", "level", "entries", "runs", "place", "listed", "next",
        "exclude_at", "excluding",
    )  # fmt: skip

    def __init__(
        self,
        share: ShareState,
        preemptor: Job,
        running: Running | None,
        below: int,
        listed: list[Job],
        exclude_at: float,
    ) -> None:
        self.share = share
        self.preemptor = preemptor
        self.exclude_at = exclude_at  # the instant (nan: none) whose twice-preempted jobs are out
        self.excluding = exclude_at == exclude_at  # (not nan: the check is skipped otherwise)
        self.running = running  # None: read ``listed`` instead
        self.below = below  # levels of a priority below this only
        self.level = 0  # the next level to read
        self.entries: list[Job] = []  # the level being read, from its end
        self.runs: list[int] = []
        self.place = -1 if running is not None else 0
        self.listed = listed
        self.next: Job | None = self._read()

    def pop(self) -> Job:
        job = self.next
        assert job is not None
        self.next = self._read()
        return job

    def _read(self) -> Job | None:
        running = self.running
        if running is None:
            if self.place < len(self.listed):
                self.place += 1
                return self.listed[self.place - 1]
            return None
        preemptor = self.preemptor
        share = preemptor.account.share
        own = self.share is share
        while True:
            while self.place >= 0:
                job = self.entries[self.place]
                live = job.run == self.runs[self.place]  # (else a stale entry: see Level)
                self.place -= 1
                if not live:
                    continue
                excluding = self.excluding
                if excluding and left_out_for_loop(job.preempted_at, job.preempted_here, self.exclude_at):
                    continue
                if own:
                    if in_share_allows(
                        share.preempts_in_share,
                        share.preempts_equal_too,
                        preemptor.priority,
                        preemptor.submit,
                        job.priority,
                        job.submit,
                    ):
                        return job
                elif reclaim_allows(share.may_reclaim, share.reclaims_any, preemptor.priority, job.priority):
                    return job
            priorities = running.priorities
            if self.level >= len(priorities) or priorities[self.level] >= self.below:
                return None
            level = running.levels[priorities[self.level]]
            self.level += 1
            self.entries = level.jobs
            self.runs = level.runs
            self.place = len(level.jobs) - 1


def _own_candidates(job: Job, account: Account, exclude_at: float) -> _Candidates:
    below = in_share_levels_below(account.share.preempts_equal_too, job.priority)
    return _Candidates(account.share, job, account.running, below, [], exclude_at)


def _reclaim_candidates(job: Job, other: Account, exclude_at: float) -> _Candidates:
    below = NO_LIMIT if job.account.share.reclaims_any else job.priority
    return _Candidates(other.share, job, other.running, below, [], exclude_at)


def is_candidate(job: Job, victim: Job) -> bool:
    """Whether ``victim`` (a running job) is one of section 8's candidates for ``job``'s search,
    before the loop rule: of the job's type, and its own share's that in-share preemption allows,
    or of another share that borrows GPUs and that the job's reclaim allows."""
    account = job.account
    other = victim.account
    if other.pool is not account.pool:
        return False
    share = account.share
    if other is account:
        return in_share_allows(
            share.preempts_in_share, share.preempts_equal_too, job.priority, job.submit, victim.priority,
            victim.submit,
        )  # fmt: skip
    return reclaim_allows(share.may_reclaim, share.reclaims_any, job.priority, victim.priority) and (
        borrowed_gpus(other.share) > 0
    )


def same_candidates_until(g: Group, job: Job, place: int, by_arrival: list[Job | None], n_jobs: int) -> int:
    """How far a refusal of ``job`` (at ``place`` in the group) speaks for the jobs behind it: the
    queue key of the first of them whose candidates differ, ``NO_KEY`` when none does. Section 8's
    search is not monotone in its candidates (a job with more of them can be refused where one with
    fewer is admitted: the first strategy may take a victim that leaves the second none to take), so
    a refused search says nothing about a job with other candidates. Behind a job in its group come
    jobs of a lower priority or a later submit time, whose candidates (in-share preemption, reclaim
    ``lower_priority``) are among its own: the same number means the same candidates, and the number
    only falls along the group (a binary search). ``by_arrival``, ``n_jobs``: the jobs of queue keys
    (``Queues.job_of``)."""
    share = job.account.share
    if not share.preempts_in_share and (not share.may_reclaim or share.reclaims_any):
        return NO_KEY  # priority and submit time choose no candidate
    keys = g.jobs
    lo, hi = place + 1, len(keys)
    if lo >= hi:
        return NO_KEY
    want = _priority_candidates(g, job.priority, job.submit)
    last = _job_at(keys[hi - 1], by_arrival, n_jobs)
    if _priority_candidates(g, last.priority, last.submit) == want:
        return NO_KEY
    hi -= 1  # keys[hi] differs; find the first that does
    while lo < hi:
        mid = (lo + hi) // 2
        other = _job_at(keys[mid], by_arrival, n_jobs)
        if _priority_candidates(g, other.priority, other.submit) == want:
            lo = mid + 1
        else:
            hi = mid
    return keys[lo]


def _job_at(key: int, by_arrival: list[Job | None], n_jobs: int) -> Job:
    job = by_arrival[key % n_jobs]
    assert job is not None
    return job


def _priority_candidates(g: Group, priority: int, submit: float) -> int:
    """Instances of the running jobs that a job of the group with this priority and submit time may
    take as far as its priority and submit time decide (``in_share_allows``, ``reclaim_allows``
    with ``lower_priority``), on every type it accepts; whether a share borrows is left out, being
    the same for every job of the group."""
    total = 0
    for account in g.flavors if g.flavors else [g.account]:
        share = account.share
        for other in account.pool.accounts:
            running = other.running
            if not running:
                continue
            if other is account:
                if share.preempts_in_share:
                    total += running.instances_below(priority)
                    if share.preempts_equal_too:
                        total += running.newer_instances_at(priority, submit)
            elif share.may_reclaim and not share.reclaims_any:
                total += running.instances_below(priority)
    return total


def left_out(job: Job, twice: list[Job], now: float, running: int) -> list[Job]:
    """The jobs of ``twice`` (those preempted twice at ``now``) that ``job``'s search leaves out
    for the loop rule: running again and candidates but for it; in trace order. ``running``: the
    engine's state code of a running job."""
    out = [
        victim
        for victim in twice
        if victim.state == running
        and left_out_for_loop(victim.preempted_at, victim.preempted_here, now)
        and is_candidate(job, victim)
    ]
    out.sort(key=_trace_order)
    return out


def _trace_order(job: Job) -> int:
    return job.index


def _preemptible(job: Job, other: Account) -> int:
    """Instances of ``other`` (an account of the job's type) that the job's search could take:
    section 8's candidates, or more (for ``lower_or_newer_equal_priority`` every own job of the
    job's priority, newer or not)."""
    running = other.running
    if not running:
        return 0
    own = job.account.share
    if other is job.account:
        if not own.preempts_in_share:
            return 0
        return running.instances_below(in_share_levels_below(own.preempts_equal_too, job.priority))
    if not own.may_reclaim or borrowed_gpus(other.share) <= 0:
        return 0
    # (all its running jobs: its usage, outside a search)
    return other.usage if own.reclaims_any else running.instances_below(job.priority)


# What a job's search can tell before it runs (``refusal_before_search``).
SEARCH_NEEDED: Final = 0  # it must run
NO_ROOM_AT_ALL: Final = 1  # the job would not fit even were every candidate preempted
NO_ROOM_PASSING: Final = 2  # nor were every candidate preempted that could pass a strategy


def _may_pass(
    final: bool, initial: bool, lowest_new: tuple[bool, int, int], value: tuple[bool, int, int]
) -> bool:
    """Whether any candidate of a share of ``value`` could pass a strategy in a search whose
    preemptor's share's value is never below ``lowest_new``: the target's value only falls during
    a search, so LessThanOrEqualToFinalShare needs ``lowest_new <= value`` and
    LessThanInitialShare ``lowest_new < value``."""
    return (final and not value_below(value, lowest_new)) or (initial and value_below(lowest_new, value))


def note_preemptible(job: Job) -> None:
    """Each account of the job's pool: its instances the job's search could take (``_preemptible``),
    kept on it (``Account.preemptible``, a scratch field: a list would be boxed)."""
    for other in job.account.pool.accounts:
        other.preemptible = _preemptible(job, other)


def no_room_at_all(job: Job) -> bool:
    """The job would not fit even were every candidate (``_preemptible``) preempted: its search
    cannot make it fit (headroom only grows as usage falls). One cohort's (over a tree,
    ``fair_tree.refusal_before_search`` asks it with the tree's available, which is never lower
    with less usage anywhere either). Sets ``job.room_deficit`` (what the room lacks, which
    ``Refusals`` counts releases against) and each account's ``preemptible``."""
    account = job.account
    note_preemptible(job)
    room = account.headroom_if_preempted()
    if job.count > room:
        job.room_deficit = job.count - room
        return True
    return False


def refusal_before_search(job: Job, final: bool, initial: bool, lendable: float) -> int:
    """NO_ROOM_AT_ALL or NO_ROOM_PASSING when the search for ``job`` cannot make it fit (headroom
    only grows as usage falls, and the search only preempts candidates that pass), else
    SEARCH_NEEDED. ``final``, ``initial``: whether the strategies include
    LessThanOrEqualToFinalShare, LessThanInitialShare.

    NO_ROOM_AT_ALL: the job does not fit even were every candidate (``_preemptible``) preempted.
    NO_ROOM_PASSING: nor were every candidate preempted whose share's value lets it pass a strategy
    (``_may_pass``) against the lowest value the job's share can have in the search: with the job
    admitted and every own candidate preempted."""
    if no_room_at_all(job):
        return NO_ROOM_AT_ALL
    account = job.account
    accounts = account.pool.accounts
    n = job.count
    lowest_new = value_with(account, n - account.preemptible, lendable)
    dropped = False
    for other in accounts:
        if (
            other.preemptible
            and other is not account
            and not _may_pass(final, initial, lowest_new, value_of(other.share, lendable))
        ):
            other.preemptible = 0  # none of its candidates could be taken
            dropped = True
    if dropped:
        room = account.headroom_if_preempted()
        if n > room:
            job.room_deficit = n - room
            return NO_ROOM_PASSING
    return SEARCH_NEEDED


def _fits(account: Account, count: int) -> bool:
    """Section 4's fit for the job counted as admitted in ``account``. Every headroom is at most
    the pool's free instances, so a pool over its capacity with the job counted answers at once
    (half the questions of a search on 10k-fair and 10k-fairtree; over a tree the headroom walks
    the share's path)."""
    pool = account.pool
    if pool.used > pool.capacity:
        return False
    return count <= account.headroom_with(-count)


def _target(pools: list[_Candidates], own: ShareState, lendable: float) -> _Candidates | None:
    """The share with the highest value among those with candidates left (ties: its next
    candidate first in section 4's whole victim order, ``target_tie_before``: another share's
    before the job's own); other shares whose value is 0 are out."""
    best: _Candidates | None = None
    best_value = ZERO_VALUE
    for pool in pools:
        job = pool.next
        if job is None:
            continue
        value = value_of(pool.share, lendable)
        if pool.share is not own and not value_below(ZERO_VALUE, value):
            continue
        if best is None or value_below(best_value, value):
            best, best_value = pool, value
        elif value_equal(value, best_value):
            first = best.next
            assert first is not None
            if target_tie_before(
                pool.share is own, victim_key(job.priority, job.start_time, job.rank),
                best.share is own, victim_key(first.priority, first.start_time, first.rank),
            ):  # fmt: skip
                best = pool
    return best


class FairValues:
    """The share values section 8's victim search reads, one cohort's: the target (the share with
    the highest value), and the two values a strategy compares for a candidate. Over a tree the
    same questions are asked of the tree (``fair_tree.TreeFairValues``), so that the search is
    written once. ``lendable``: section 8's L, set before each search (it follows the calendar)."""

    def __init__(self) -> None:
        self.lendable = 0.0
        self.new = ZERO_VALUE  # the preemptor's side's value, the job admitted (``compare``)
        self.old = ZERO_VALUE  # the target's side's value as it is

    def target(self, pools: list[_Candidates], own: ShareState) -> _Candidates | None:
        return _target(pools, own, self.lendable)

    def compare(self, own: ShareState, other: ShareState) -> None:
        """The values a strategy compares for a candidate of ``other``: its share's and the job's."""
        self.new = value_of(own, self.lendable)
        self.old = value_of(other, self.lendable)

    def passes(self, final_first: bool, account: Account, count: int) -> bool:
        """Whether a candidate of ``count`` instances of ``account`` passes the first strategy
        (``final_first``: LessThanOrEqualToFinalShare, else LessThanInitialShare), after ``compare``
        (the target's value without the candidate for the first)."""
        if not final_first:
            return initial_share_passes(self.new, self.old)
        return final_share_passes(self.new, self.old_without(account, count))

    def old_without(self, account: Account, count: int) -> tuple[bool, int, int]:
        """The target's side's value were ``count`` instances of ``account`` preempted."""
        return value_with(account, -count, self.lendable)


def _set_aside(victim: Job, share: ShareState, aside: list[list[Job]], order: list[ShareState]) -> None:
    """A candidate that failed the first strategy, kept for the second: per share, the shares in
    the order their first candidate was set aside, ``aside[i]`` holding ``order[i]``'s. (A search
    sets aside the candidates of a few shares, one share's in a row: a scan from the last finds its
    list sooner than a dict keyed by a boxed index.)"""
    for i in range(len(order) - 1, -1, -1):
        if order[i] is share:
            aside[i].append(victim)
            return
    order.append(share)
    aside.append([victim])


def candidate_pools(job: Job, exclude_at: float) -> list[_Candidates]:
    """Section 8's candidates, one pool per share: the job's own share's that in-share preemption
    allows, and those of every other share borrowing over its own quota that reclaim allows (one
    cohort or a tree alike: Kueue's findCandidates looks at every ClusterQueue)."""
    account = job.account
    own = account.share
    pools: list[_Candidates] = []
    if own.preempts_in_share:
        pools.append(_own_candidates(job, account, exclude_at))
    if own.may_reclaim:
        for other in account.pool.accounts:
            if other.share is not own and other.running and borrowed_gpus(other.share) > 0:
                pools.append(_reclaim_candidates(job, other, exclude_at))
    return pools


def fair_victims(
    job: Job, values: FairValues, final_first: bool, initial_second: bool, exclude_at: float
) -> list[tuple[Job, int]] | None:
    """Section 8's preemption for a job that does not fit: the victims and each one's cause, or
    None when no choice makes it fit (then nobody is preempted). ``values``: one cohort's or the
    tree's (section 13: the target walked down from the root, the strategies comparing the two
    children of the lowest common ancestor). ``final_first``: the first strategy is
    LessThanOrEqualToFinalShare (else LessThanInitialShare); ``initial_second``: the list has
    LessThanInitialShare second. ``exclude_at``: the current instant when some jobs were preempted
    twice at it (the loop rule leaves them out), else nan. Candidates: from every share (Kueue's
    findCandidates looks at every ClusterQueue, one cohort or a tree alike)."""
    account = job.account
    own = account.share
    n = job.count
    within_quota = account.usage + n <= account.quota
    pools = candidate_pools(job, exclude_at)
    if not pools:
        return None

    account.shift(n)  # the job counts as admitted in its share throughout the search
    taken: list[Job] = []
    set_aside: list[ShareState] = []  # the shares with candidates set aside, in that order
    aside: list[list[Job]] = []  # each one's candidates set aside (``_set_aside``)
    # Whether the job fits: asked again only after a victim is taken (setting candidates aside
    # changes no usage; over a tree each question walks the share's path).
    fits = _fits(account, n)
    while not fits:
        target = values.target(pools, own)
        if target is None:
            break
        if target.share is own:
            victim = target.pop()
            victim.account.shift(-victim.count)
            taken.append(victim)
            fits = _fits(account, n)
            continue
        values.compare(own, target.share)
        # Nothing changes during this walk until a candidate passes, and whether one passes
        # depends only on its size: its target's value without it falls as the size grows (the
        # share's borrowed GPUs fall, and rounding is monotone), so the candidates that pass are
        # those up to some size. Sizes known to pass or fail are not tried again.
        head = target.next
        assert head is not None  # (the target is offered only with candidates left)
        target_account = head.account
        if not values.passes(final_first, target_account, 1):
            # Not even one instance would pass: every candidate is set aside, and of those only
            # the first can matter (the second strategy takes at most one per share).
            _set_aside(target.pop(), target.share, aside, set_aside)
            target.next = None
            continue
        passes_up_to = 1
        fails_from = NO_LIMIT
        while target.next is not None:
            victim = target.pop()
            count = victim.count
            if count <= passes_up_to:
                passes = True
            elif count >= fails_from:
                passes = False
            else:
                passes = values.passes(final_first, target_account, count)
                if passes:
                    passes_up_to = count
                else:
                    fails_from = count
            if passes:
                victim.account.shift(-count)
                taken.append(victim)
                fits = _fits(account, n)
                break
            _set_aside(victim, target.share, aside, set_aside)
    if not fits and initial_second:
        # LessThanInitialShare over the set-aside candidates: at most one per share.
        second = [_Candidates(share, job, None, 0, aside[i], exclude_at) for i, share in enumerate(set_aside)]
        while not fits:
            target = values.target(second, own)
            if target is None:
                break
            values.compare(own, target.share)
            if initial_share_passes(values.new, values.old):
                victim = target.pop()
                victim.account.shift(-victim.count)
                taken.append(victim)
                fits = _fits(account, n)
            target.next = None  # (out: emptied, as the walk skips it, cheaper than a list.remove)
    return victims_needed(job, taken, within_quota, fits)


def victims_needed(
    job: Job, taken: list[Job], within_quota: bool, fits: bool
) -> list[tuple[Job, int]] | None:
    """The end of a fair search, the job still counted as admitted and ``taken`` shifted out: None
    (every shift undone) when the job does not fit (``fits``: ``_fits`` as the search left it);
    else the backward walk dropping every victim not needed, and each victim kept with its cause
    (``within_quota``: the job was within its share's quota once admitted when the search
    started)."""
    account = job.account
    own = account.share
    n = job.count
    account.shift(-n)
    if not fits:
        give_back(taken)
        return None
    return [
        (victim, preemption_cause(victim.account.share is own, within_quota))
        for victim in drop_unneeded(taken, Headroom(account, n), last_needed=False)
    ]


def lowest_value(flavors: list[Account], count: int, lendable: float) -> tuple[bool, int, int]:
    """Section 12 **(choice)**: a job that accepts several types takes its place in a fair round
    by the lowest value its share would have with it admitted on one of them."""
    best = value_with(flavors[0], count, lendable)
    for account in flavors:
        value = value_with(account, count, lendable)
        if value_below(value, best):
            best = value
    return best


def cohort_pick(groups: list[Group], version: int, calendar_changed_at: int, lendable: float) -> Group | None:
    """Section 8's next candidate in one cohort: the group whose share would have the lowest value
    with its next job admitted, then queue order (``fair_round_before``); None when no group has a
    job left to offer. Groups asleep at ``version`` offer their first job with other candidates
    than the refused one (``wake``), if any (their value is as when picked). A group's value
    changes only with its share's usage and with the calendar: it is recomputed only after one of
    them changed."""
    best: Group | None = None
    best_value = ZERO_VALUE
    best_queue = 0
    for g in groups:
        ptr = g.ptr
        if g.asleep_at == version:
            ptr = g.wake
        if ptr >= g.end:
            continue
        valued_at = g.valued_at
        if valued_at < g.account.share.usage_changed_at or valued_at < calendar_changed_at:
            if g.flavors:
                g.value = lowest_value(g.flavors, g.count, lendable)
            else:
                g.value = value_with(g.account, g.count, lendable)
            g.valued_at = version
        queue = g.jobs[ptr]
        if best is None or fair_round_before(g.value, queue, best_value, best_queue):
            best, best_value, best_queue = g, g.value, queue
    return best
