"""Section 9: capacity and quotas over time. The policy's dated changes grouped by instant, the
limits of section 6 at every instant of the calendar, and which running jobs go when capacity or
a quota goes down.
"""

from __future__ import annotations

from collections.abc import Iterator

from scheduling.model import Change, Policy, Share, UnschedulableReason
from scheduling.replay.quota_tree import QuotaTree, quota_tree, tree_limit
from scheduling.replay.rules import (
    NO_LIMIT,
    capacity_victim_key,
    instances,
    unschedulable_in_tree,
    unschedulable_over_calendar,
    unschedulable_reason,
)
from scheduling.replay.state import Account, Job, TypePool
from scheduling.replay.victims import PoolValid, drop_unneeded, take_until_fits


def change_instants(policy: Policy) -> list[tuple[float, list[Change]]]:
    """The changes grouped by instant, in time order (changes at one time apply together, a later
    one in the list winning over an earlier one for the same share and type)."""
    out: list[tuple[float, list[Change]]] = []
    for change in policy.changes:
        if out and out[-1][0] == change.time:
            out[-1][1].append(change)
        else:
            out.append((change.time, [change]))
    return out


def borrow_limit_at(share: Share, type_name: str, quota: int) -> int:
    """A share's borrow limit with the quota in force: AWS's borrowLimit is a percentage of the
    share's capacity, so it follows a changed quota; Kueue's absolute limit does not."""
    if not share.strategy.borrows:
        return 0
    return instances(share.borrow_limit(type_name, quota))


def limits_over_calendar(policy: Policy, types: list[str]) -> list[list[list[tuple[int, int, int, int]]]]:
    """For every share, type and distinct state of the calendar (before any change, then after
    each instant with changes): (pool capacity, quota, borrow limit, everything borrowable), the
    inputs of section 6's test."""
    capacity = {t: int(policy.capacity.get(t, 0)) for t in types}
    quotas = {s.name: {t: int(s.quota(t)) for t in types} for s in policy.shares}
    states = [_limits(policy, types, capacity, quotas)]
    for _, changes in change_instants(policy):
        for change in changes:
            target = capacity if change.share is None else quotas[change.share]
            for type_name, count in change.capacity.items():
                if type_name in target:
                    target[type_name] = int(count)
        states.append(_limits(policy, types, capacity, quotas))
    # shares x types x states
    return [[[state[s][t] for state in states] for t in range(len(types))] for s in range(len(policy.shares))]


def _limits(policy: Policy, types: list[str], capacity: dict[str, int], quotas: dict[str, dict[str, int]]):
    out = []
    for share in policy.shares:
        row = []
        for type_name in types:
            quota = quotas[share.name][type_name]
            unassigned = capacity[type_name] - sum(q[type_name] for q in quotas.values())
            borrowable = 0
            if share.strategy.borrows:
                borrowable = unassigned + sum(
                    min(instances(other.lend_limit(type_name)), quotas[other.name][type_name])
                    for other in policy.shares
                    if other is not share and other.strategy.lends
                )
            row.append((capacity[type_name], quota, borrow_limit_at(share, type_name, quota), borrowable))
        out.append(row)
    return out


def potentials_over_calendar(policy: Policy, types: list[str]) -> list[list[tuple[int, int]]]:
    """Section 13 with a calendar: for every (share, type) account key, at every distinct state of
    the calendar, (pool capacity, the share's potential available in the tree)."""
    tree = quota_tree(policy, types)
    n_types = len(types)
    index = policy.share_index()
    capacity = [int(policy.capacity.get(t, 0)) for t in types]
    out: list[list[tuple[int, int]]] = [[] for _ in range(len(policy.shares) * n_types)]

    def note() -> None:
        for s in range(len(policy.shares)):
            for t in range(n_types):
                out[s * n_types + t].append((capacity[t], tree.potential(s, t)))

    note()
    for _, changes in change_instants(policy):
        for change in changes:
            for type_name, count in change.capacity.items():
                t = types.index(type_name)
                if change.share is None:
                    capacity[t] = int(count)
                else:
                    share = policy.shares[index[change.share]]
                    limit = tree_limit(borrow_limit_at(share, type_name, int(count)))
                    tree.set_quota(index[change.share], t, int(count), limit)
        for t in range(n_types):
            tree.set_capacity(t, capacity[t])
        tree.recompute()
        note()
    return out


def unschedulable_at_every_instant(
    count: int, limits: list[tuple[int, int, int, int]]
) -> UnschedulableReason | None:
    """Section 9: a job is unschedulable only if section 6 finds it so at every instant."""
    return unschedulable_over_calendar(
        [
            unschedulable_reason(count, capacity, quota, limit, borrowable)
            for capacity, quota, limit, borrowable in limits
        ]
    )


class NeverRuns:
    """Section 6: why a job of some size can never run on an account, or None; under a calendar
    (section 9), only if it cannot at every instant of it; in a tree of cohorts (section 13), by
    the share's potential available. Computed once per (account, size) under a calendar."""

    def __init__(self, policy: Policy, types: list[str], tree: QuotaTree | None, has_changes: bool):
        self.tree = tree
        self.has_changes = has_changes
        self.limits = limits_over_calendar(policy, types) if has_changes and tree is None else []
        # Section 13 with a calendar: each share's potential available per type at every instant.
        self.potentials = potentials_over_calendar(policy, types) if has_changes and tree else []
        self.known: dict[tuple[int, int], UnschedulableReason | None] = {}

    def reason(self, count: int, account: Account) -> UnschedulableReason | None:
        if self.tree is not None:
            return self._in_tree(count, account, self.tree)
        if not self.has_changes:
            return unschedulable_reason(
                count, account.pool.capacity, account.quota, account.borrow_limit, account.borrowable_ever
            )
        key = (account.key, count)
        if key not in self.known:
            limits = self.limits[account.share.index][account.type]
            self.known[key] = unschedulable_at_every_instant(count, limits)
        return self.known[key]

    def _in_tree(self, count: int, account: Account, tree: QuotaTree) -> UnschedulableReason | None:
        if not self.has_changes:
            potential = tree.potential(account.share.index, account.type)
            return unschedulable_in_tree(count, account.pool.capacity, potential)
        key = (account.key, count)
        if key not in self.known:
            self.known[key] = unschedulable_over_calendar(
                [
                    unschedulable_in_tree(count, capacity, potential)
                    for capacity, potential in self.potentials[account.key]
                ]
            )
        return self.known[key]


def capacity_victims(pool: TypePool) -> list[Job]:
    """Section 9: while the pool holds more than its capacity or the borrowing invariant fails,
    take the next running job in ``capacity_victim_key``'s order, chosen anew after each one (a
    share stops borrowing as its jobs go); then walk the taken list backwards and keep running
    every job that is not needed. Usage is left as it was: the caller preempts the victims."""
    fit = PoolValid(pool)
    taken: list[Job] = []
    if not fit.holds():
        take_until_fits(_capacity_order(pool), fit, taken)  # (not holding at the end: an invalid calendar)
    return drop_unneeded(taken, fit, last_needed=False)


def _capacity_order(pool: TypePool) -> Iterator[Job]:
    """The running jobs in ``capacity_victim_key``'s order, the next one chosen with usage as the
    ones before left it. Within one account the order is the same at every pick, so each account
    gives its jobs in victim order and only the accounts' next jobs are compared."""
    queues: list[Iterator[Job]] = [account.running.in_victim_order(NO_LIMIT) for account in pool.accounts]
    heads: list[Job | None] = [next(queue, None) for queue in queues]
    while True:
        best = -1
        best_key: tuple = ()
        for i, job in enumerate(heads):
            if job is None:
                continue
            account: Account = pool.accounts[i]
            key = capacity_victim_key(account.usage > account.quota, job.priority, job.start_time, job.rank)
            if best < 0 or key < best_key:
                best, best_key = i, key
        if best < 0:
            return  # nothing left running: only reachable with an invalid calendar
        victim = heads[best]
        assert victim is not None
        heads[best] = next(queues[best], None)
        yield victim
