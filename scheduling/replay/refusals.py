"""What can make a refused job admissible again: one class that the event loop tells what happened
(``on_start``, ``on_release``, ``on_usage_change``, ``on_priority_change``, ``on_calendar_change``)
and that the rounds ask (``holds``, ``Group.open``).

Two memories of refusals live here. Sections 4 and 13 (no fair sharing): queue groups are closed
when their head is refused and reopened by the changes that could help them (a release, a start
that adds a preemption candidate, a new head). Section 8 (fair sharing): every change of state
bumps ``version``, and a job's refusal *holds* while no change that could undo it came after it.
Neither may change an outcome, only skip tries that would be refused again: with
``SCHEDULING_REFUSAL_MEMO=off`` the fair-sharing memo never holds (tests/scheduling/
test_refusal_memo.py replays the property cases both ways and compares).
"""

from __future__ import annotations

import os

from scheduling.replay.fair import borrowed_gpus
from scheduling.replay.quota_tree import QuotaTree
from scheduling.replay.rules import NO_LIMIT, in_share_allows, reclaim_allows, within_quota_once_admitted
from scheduling.replay.state import Account, Group, Job, ShareState, TypePool


def memo_switched_on() -> bool:
    """``SCHEDULING_REFUSAL_MEMO=off`` turns the fair-sharing memo off (every try is made)."""
    return os.environ.get("SCHEDULING_REFUSAL_MEMO", "on") != "off"


class Refusals:
    def __init__(
        self,
        shares: list[ShareState],
        fair: bool,
        tree: QuotaTree | None,
        by_arrival: list[Job | None],
        n_jobs: int,
    ):
        self.shares = shares
        self.fair = fair
        self.tree = tree
        self.by_arrival = by_arrival  # the replay's waiting jobs by arrival place (shared, not copied)
        self.n_jobs = max(1, n_jobs)
        self.memo = memo_switched_on()
        # Sections 4 and 13: the groups whose head may be admissible, and the groups reopened
        # during the current admission of a best-effort round (they join its candidates).
        self.open_groups = 0
        self.in_round = False
        self.reopened: list[Group] = []
        # Section 8: the state's version (bumped by every change of usage, priority, calendar or
        # loop instant) and the versions of the last changes that could end each kind of refusal:
        # any (``reopened_all_at``); NO_ROOM, which holds until a change that could add candidates
        # (this) or releases that could add the room it lacked (``Account.room_released``); and
        # NO_PASSING_ROOM, until a change that could add passing candidates or lower its share's
        # value (this, ``ShareState.passing_reopened_at``) or releases by other shares
        # (``TypePool.released``, ``Account.released``).
        self.version = 0
        self.reopened_all_at = 0
        self.room_reopened_all_at = 0
        self.passing_reopened_all_at = 0
        self.calendar_changed_at = 0  # the version of the last change of capacity or quotas

    # --- what the loop reports ---------------------------------------------------------------

    def on_usage_change(self, account: Account, delta: int) -> None:
        """A real change of an account's usage (a start, finish or preemption), applied here:
        fair sharing's refusals depend on whether its share borrows before and after."""
        share = account.share
        borrowed_before = self.fair and borrowed_gpus(share) > 0
        account.shift(delta)
        self.version += 1
        share.usage_changed_at = self.version
        if not self.fair:
            return
        borrowed_after = borrowed_gpus(share) > 0
        if delta > 0 and not borrowed_after and self._start_stays_in_share(account):
            # A start after which its share borrows no GPUs (B = 0) changes no share's value and
            # adds no reclaim candidate: other shares' refused jobs would run the same victim
            # search with less room (headroom only falls as another share's usage grows), so they
            # stay refused. Only its own share's may change (a new in-share candidate).
            share.reopened_at = self.version
        else:
            self.reopened_all_at = self.version
        self._fair_room_changed(account, delta, borrowed_before, borrowed_after)

    def on_start(self, job: Job) -> None:
        """Sections 4 and 13: a start only takes capacity (fitting gets harder for everyone), but
        the started job is a new preemption candidate: for heads of its own share that outrank it
        (in-share), and, when its share now borrows, for heads of other shares that may reclaim it.
        (Fair sharing: the version bumped by the usage change says it.)"""
        if self.fair:
            return
        account = job.account
        share = account.share
        priority = job.priority
        if share.preempts_in_share:
            equal_too = share.preempts_equal_too
            # (section 12: the groups whose jobs accept this type and others, on the same terms)
            for g in account.every_group:
                if (g.refused or g.fit_only) and g.jobs:
                    head = self._head(g)
                    if in_share_allows(True, equal_too, head.priority, head.submit, priority, job.submit):
                        self.reopen(g)
            share.refused = False
        if self.tree is not None:
            self._tree_started(account)
        elif account.borrows_now():
            lowest = account.running.lowest_priority()  # a borrowing share's jobs are all candidates
            for other in account.pool.accounts:
                if other is account or not other.share.may_reclaim:
                    continue
                reclaims_any = other.share.reclaims_any
                for g in other.every_group:
                    if (
                        (g.refused or g.fit_only)
                        and g.jobs
                        and within_quota_once_admitted(other.usage, g.count, other.quota)  # reclaim
                        and reclaim_allows(True, reclaims_any, self._head(g).priority, lowest)
                    ):
                        self.reopen(g)
                other.share.refused = False

    def on_release(self, pool: TypePool, owner: ShareState | None, victims_changed: bool = False) -> None:
        """A job of share ``owner`` ended or was preempted (or a running job changed priority:
        ``victims_changed``, no owner). Refusals may be stale, except for a group that had no
        preemption candidate at all and still cannot fit in the pool: a release gives it no
        candidate, unless it was its own share's (its usage fell: it may now reclaim).
        (Fair sharing: the version bumped by the usage change says it.)"""
        if self.fair:
            return
        if self.tree is not None:
            self._tree_released(pool, owner, victims_changed)
            return
        for account in pool.accounts:
            # Its own share's usage fell: within quota now, it may reclaim from borrowers.
            may_reclaim_now = account.share is owner and account.share.may_reclaim
            room = -1  # the share's headroom, computed once if needed
            # (section 12: a group whose jobs accept this type and others was refused on every type;
            # only this type's room and candidates changed, so the same terms hold for it)
            for g in account.every_group:
                if _assumes_nothing(g):
                    continue
                still_none = (
                    _knows_no_victims(g)
                    and not victims_changed
                    and not (
                        may_reclaim_now and within_quota_once_admitted(account.usage, g.count, account.quota)
                    )
                )
                room = self._reopen_released(account, g, still_none, room)
        self._reopen_heads()

    def on_priority_change(self, job: Job, running: bool) -> None:
        """A job's priority changed: candidates depend on priorities, so every refusal may be stale;
        a running one's change is told as a release that changes candidates."""
        self._reopen_all()
        if running:
            self.on_release(job.account.pool, owner=None, victims_changed=True)

    def on_calendar_change(self, pools: list[TypePool]) -> None:
        """Section 9: capacity or quotas changed in these pools (the capacity preemptions done):
        every refusal may be stale."""
        for pool in pools:
            for account in pool.accounts:
                for g in account.groups:
                    if g.jobs:
                        self.reopen(g)
                # Section 12: a change may help any group that accepts the type.
                for g in account.multi_groups:
                    if g.jobs:
                        self.reopen(g)
        self._reopen_heads()
        self._reopen_all()
        self.calendar_changed_at = self.version

    def on_loop_instant(self) -> None:
        """Section 8: the jobs left out for the loop rule are candidates again; a refusal may have
        come from leaving them out."""
        self._reopen_all()

    def on_new_head(self, g: Group) -> None:
        """A job became its group's head: the group's refusal said nothing about it."""
        self.reopen(g)

    def reopen(self, g: Group, fit_only: bool = False) -> None:
        g.fit_only = fit_only and (g.fit_only or g.refused == Group.NO_VICTIMS)
        g.refused = Group.OPEN
        if not g.open:
            g.open = True
            self.open_groups += 1
        if self.in_round:
            self.reopened.append(g)

    def close(self, g: Group) -> None:
        if g.open:
            g.open = False
            self.open_groups -= 1

    # --- what the rounds ask -----------------------------------------------------------------

    def holds(self, job: Job) -> bool:
        """Fair sharing: the job was refused before, and nothing since could change that (a try
        depends only on usage, running jobs, priorities and L: see ``on_usage_change``), or
        nothing could give it room (see ``_fair_room_changed``). It would be refused again."""
        if not self.memo or job.flavored:
            return False  # (the bookkeeping below follows one account)
        refused_at = job.refused_at
        account = job.account
        if refused_at >= self.reopened_all_at and refused_at >= account.share.reopened_at:
            return True
        if job.no_room:
            # (one cohort or a tree alike: see _fair_room_changed)
            return (
                refused_at >= self.room_reopened_all_at
                and account.room_released - job.room_released_at < job.room_deficit
            )
        if job.no_passing_room:
            return (
                refused_at >= self.passing_reopened_all_at
                and refused_at >= account.share.passing_reopened_at
                and account.pool.released - account.released - job.passing_released_at < job.room_deficit
            )
        return False

    def behind_refusal(self, g: Group, key: int) -> bool:
        """Fair sharing: the job ``key`` of the group is behind a refusal at the current version
        (of its group, so with the same value) and has the same candidates as the refused job
        (before ``same_until``): it would be refused too."""
        return self.memo and g.refused_at == self.version and g.refused_key < key < g.same_until

    def round_would_repeat(self, groups: list[Group]) -> bool:
        """best_effort_fifo with fair sharing: every group's first job was refused, and its reason
        noted, at the current version (an earlier round, since which nothing changed). This round
        would refuse them all again and note nothing new (why a group waits depends only on usage,
        quotas and capacity, all as they were), so it need not run. (strict_fifo notes every
        refusal.)"""
        if not self.memo:
            return False
        version = self.version
        for g in groups:
            if g.refused_at != version or g.refused_key != g.jobs[0] or g.reason_noted_at != version:
                return False
        return True

    def note_fair_try(self, job: Job, outcome_no_room: bool, outcome_no_passing_room: bool) -> None:
        """What a refusal's memo needs of a fair try: its kind, and the releases counted so far."""
        job.no_room = outcome_no_room
        job.no_passing_room = outcome_no_passing_room
        account = job.account  # (room_deficit: set by the try)
        job.room_released_at = account.room_released
        job.passing_released_at = account.pool.released - account.released

    # --- inside ------------------------------------------------------------------------------

    def _reopen_all(self) -> None:
        self.version += 1
        self.reopened_all_at = self.version
        self.room_reopened_all_at = self.version
        self.passing_reopened_all_at = self.version

    def _reopen_heads(self) -> None:
        """strict_fifo: every share's refused head may be admissible now."""
        for share in self.shares:
            share.refused = False

    def _head(self, g: Group) -> Job:
        job = self.by_arrival[g.jobs[0] % self.n_jobs]
        assert job is not None
        return job

    def _start_stays_in_share(self, account: Account) -> bool:
        """Section 13: a start whose usage stays within its share's local quota changes no cohort's
        usage, so no node's value and no other share's headroom or candidates (one more used
        above it could raise a cohort's value, which a refused job's strategies compare)."""
        return self.tree is None or self.tree.within_local_quota(account.share.index, account.type)

    def _fair_room_changed(
        self, account: Account, delta: int, borrowed_before: bool, borrowed_after: bool
    ) -> None:
        """Which NO_ROOM refusals a change of usage can end. Such a job J would not fit were every
        one of its candidates C preempted; its room then is the headroom with C's usage removed,
        and that only grows when usage outside C falls or C grows. A start adds either a job of C
        (the room with C removed is unchanged) or one outside it (less room), and C grows only
        when a share starts to borrow (its jobs become reclaim candidates): then every NO_ROOM
        refusal is reopened. A release of a job of C leaves the room unchanged (C loses it, or
        more if its share stops borrowing); one outside C adds room in its type's pool. The
        released job is in C for the other shares' jobs when its share borrowed and they reclaim
        ``any`` (``lower_priority`` depends on J's priority: counted); for its own share's
        jobs, it may not be (counted). A release of c instances adds at most c to J's room (each
        of headroom's three limits grows by at most c), so the instances released outside C
        are counted per account, and J stays refused while they are fewer than the room it
        lacked (``Job.room_deficit``). ``borrowed_before``, ``borrowed_after``: whether the share
        borrowed GPUs (B > 0) before and after the change."""
        share = account.share
        if delta > 0:
            if borrowed_after and not borrowed_before:
                self.room_reopened_all_at = self.version
            if account.usage > account.quota or self._start_passed_up(account):
                # Its share's value rose (or, over a tree, a cohort's may have): candidates may now
                # pass a NO_PASSING_ROOM job's strategy (they were left out of that job's room).
                self.passing_reopened_all_at = self.version
            return
        for other in account.pool.accounts:
            if other is account or not (borrowed_before and other.share.reclaims_any):
                other.room_released -= delta
        # A NO_PASSING_ROOM job of this share: its lowest value fell, so more shares' candidates
        # may pass. Of other shares: counted as room, whether the released job was a candidate
        # that could pass or not (a share's value only falls with a release).
        share.passing_reopened_at = self.version
        if self.tree is not None:
            self._tree_passing_released(share)
        account.pool.released -= delta
        account.released -= delta

    def _start_passed_up(self, account: Account) -> bool:
        """Section 13: the start stored usage above its share's local quota, in a cohort whose value
        may have risen (a start within it changes no node's value: the share's stays 0)."""
        return self.tree is not None and not self.tree.within_local_quota(account.share.index, account.type)

    def _tree_passing_released(self, released: ShareState) -> None:
        """Section 13: a release that lowered the usage of a cohort on another share's path lowered
        that cohort's value, which that share's NO_PASSING_ROOM jobs compare (as their side of a
        common ancestor with a farther share): more candidates may pass. Elsewhere it only lowers
        values of target sides (fewer pass) and adds room (counted, as in one cohort)."""
        tree = self.tree
        assert tree is not None
        for share in self.shares:
            if share is not released and tree.release_reaches(released.index, share.index):
                share.passing_reopened_at = self.version

    def _tree_released(self, pool: TypePool, owner: ShareState | None, victims_changed: bool) -> None:
        """Section 13: a release may raise what any share has available (every path ends at the
        root), so refusals may be stale. A group that had no preemption candidate gains one only
        when the release lowered usage below the root on its share's path (hierarchical advantage
        grows only there; a release makes no node borrow) and it now has a reclaim candidate at all;
        otherwise it is reopened only to fit."""
        tree = self.tree
        assert tree is not None
        for account in pool.accounts:
            share = account.share
            reaches = victims_changed or owner is None or tree.release_reaches(owner.index, share.index)
            # The largest job of its share that now has reclaim candidates, found once if needed.
            reach = NO_LIMIT if victims_changed or owner is None else (-2 if reaches else -1)
            room = -1  # the share's headroom, computed once if needed
            for g in account.every_group:
                if _assumes_nothing(g):
                    continue
                knows_no_victims = _knows_no_victims(g)
                if knows_no_victims and reach == -2:
                    reach = self._tree_reclaim_reach(account)
                room = self._reopen_released(account, g, knows_no_victims and g.count > reach, room)
        self._reopen_heads()

    def _reopen_released(self, account: Account, g: Group, still_no_victims: bool, room: int) -> int:
        """After a release: the group is reopened, unless it is known to have no preemption
        candidate and gains none (``still_no_victims``); then it is reopened only to fit, if it now
        fits. ``room``: the account's headroom, -1 until needed; returned as known after."""
        if not still_no_victims:
            self.reopen(g)
            return room
        if g.refused == Group.OPEN:
            return room  # still without candidates, and open
        if room < 0:
            room = account.headroom()
        if g.count <= room:
            self.reopen(g, fit_only=True)
        return room

    def _tree_reclaim_reach(self, account: Account) -> int:
        """The most instances with which a job of the account's share has hierarchical advantage at
        a common ancestor with another share of the pool where that share borrows (section 13's
        reclaim candidates, priority aside): a job that large or smaller has reclaim candidates;
        -1 when none has."""
        tree = self.tree
        assert tree is not None
        best = -1
        if not account.share.may_reclaim:
            return best
        n_shares = tree.n_shares
        s = account.share.index
        seen: list[int] = []
        for other in account.pool.accounts:
            if other is account or not other.running:
                continue
            lca = tree.lca[other.share.index * n_shares + s]
            if lca in seen or not tree.borrows_below(other.share.index, lca, account.type):
                continue
            seen.append(lca)
            reach = tree.advantage_limit(s, account.type, lca)
            if reach > best:
                best = reach
        return best

    def _tree_started(self, account: Account) -> None:
        """Section 13: a start raises usage only along its share's path; a job of another share gains
        reclaim candidates only when a node on that path now borrows (a candidate's share and its
        ancestors below the common one must). Then every group of a share that may reclaim is
        reopened (correct first: which of them gained depends on where the paths meet)."""
        tree = self.tree
        assert tree is not None
        t = account.type
        node = account.share.index
        while node >= 0 and not tree.over_quota(node, t):
            node = tree.parent[node]
        if node < 0:
            return
        n_shares = tree.n_shares
        for other in account.pool.accounts:
            if other is account or not other.share.may_reclaim:
                continue
            # Its new candidates are all at the common ancestor with the started job's share (the
            # nodes that now borrow are on that share's path): they count only with advantage there.
            lca = tree.lca[account.share.index * n_shares + other.share.index]
            reach = tree.advantage_limit(other.share.index, t, lca)
            for g in other.every_group:
                if (g.refused or g.fit_only) and g.jobs and g.count <= reach:
                    self.reopen(g)
            other.share.refused = False


def _assumes_nothing(g: Group) -> bool:
    """A group without jobs, or open with nothing assumed about it: a release changes nothing."""
    return not g.jobs or (g.refused == Group.OPEN and not g.fit_only)


def _knows_no_victims(g: Group) -> bool:
    """The group's last refusal found no preemption candidate at all (or it is open to fit only)."""
    return g.refused == Group.NO_VICTIMS or (g.refused == Group.OPEN and g.fit_only)
