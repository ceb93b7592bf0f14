"""A policy's calendar of dated changes (SEMANTICS.md section 9) the way people plan it: a training
plan is a block of instances added to the pool and to one share's quota for a while; charts draw
the capacity and the quotas in force over a window as step lines.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from scheduling.errors import InputError
from scheduling.model import Change, Policy, validate_policy


@dataclass(frozen=True)
class TrainingPlan:
    """``instances`` more of ``instance_type`` in the pool and in ``share``'s quota, from ``start``
    (inclusive) to ``end`` (exclusive), as a SageMaker training plan reserves them."""

    instance_type: str
    instances: int
    share: str
    start: float
    end: float


def check_training_plan(policy: Policy, plan: TrainingPlan) -> None:
    """InputError naming the field of the plan that cannot be applied to ``policy``."""
    if plan.instance_type not in policy.instance_types:
        raise InputError(f"the policy has no instance type {plan.instance_type!r}", field="instance_type")
    if isinstance(plan.instances, bool) or not isinstance(plan.instances, int) or plan.instances < 1:
        raise InputError(
            f"{plan.instances!r}: a plan adds a whole number of instances, at least 1", field="instances"
        )
    if plan.share not in {s.name for s in policy.shares}:
        raise InputError(f"{plan.share!r} is not a share of the policy", field="share")
    if not plan.end > plan.start:
        raise InputError("the plan must end after it starts", field="end")


def add_training_plan(policy: Policy, plan: TrainingPlan) -> Policy:
    """The policy with the plan in its calendar: its four changes (pool and share up at the start,
    both back at the end) and, so that the plan adds on top of whatever else the calendar says,
    every change of that type for the pool or that share inside the plan raised by the plan's
    instances too. Validated (section 1 at every instant); InputError otherwise."""
    check_training_plan(policy, plan)
    type_name, n = plan.instance_type, plan.instances
    targets: tuple[str | None, ...] = (None, plan.share)

    def value_at(target: str | None, time: float) -> int:
        counts = policy.capacity_at(time) if target is None else policy.quota_at(target, time)
        return counts.get(type_name, 0)

    def sets(change: Change, target: str | None, time: float) -> bool:
        return change.share == target and change.time == time and type_name in change.capacity

    changes: list[Change] = []
    for change in policy.changes:
        if change.share in targets and type_name in change.capacity and plan.start <= change.time < plan.end:
            change = replace(change, capacity={**change.capacity, type_name: change.capacity[type_name] + n})
        changes.append(change)
    for target in targets:
        if not any(sets(c, target, plan.start) for c in policy.changes):
            changes.append(Change(plan.start, {type_name: value_at(target, plan.start) + n}, target))
        if not any(sets(c, target, plan.end) for c in policy.changes):
            changes.append(Change(plan.end, {type_name: value_at(target, plan.end)}, target))
    planned = replace(policy, changes=tuple(sorted(changes, key=lambda c: c.time)))
    validate_policy(planned)
    return planned


def capacity_steps(policy: Policy, start: float, end: float) -> dict[str, Any]:
    """The pool's capacity and each share's quota in GPUs over ``[start, end]``, as step lines:
    ``pool[i]`` and ``shares[name][i]`` hold from ``t[i]`` until ``t[i + 1]``; the last point
    repeats the last value at ``end`` so that a chart draws the last step to the window's end.

    One sweep of the calendar in time order (a change at T applies from T on), each target's total
    made again only when a change touches it: linear in the changes, where asking
    ``capacity_at``/``quota_at`` at every step was quadratic (39 s at 16,000 changes)."""
    gpus = {name: instance_type.gpus for name, instance_type in policy.instance_types.items()}

    def total(counts: dict[str, int]) -> float:
        return float(sum(count * gpus.get(type_name, 1) for type_name, count in counts.items()))

    changes = sorted(policy.changes, key=lambda c: c.time)  # stable: a later one at T wins
    steps = [float(start), *sorted({c.time for c in changes if start < c.time < end})]
    counts: dict[str | None, dict[str, int]] = {None: dict(policy.capacity)}
    counts.update((s.name, dict(s.capacity)) for s in policy.shares)
    totals = {target: total(values) for target, values in counts.items()}
    lines: dict[str | None, list[float]] = {target: [] for target in counts}
    applied = 0
    for step in steps:
        touched: set[str | None] = set()
        while applied < len(changes) and changes[applied].time <= step:
            change = changes[applied]
            applied += 1
            if change.share in counts:
                counts[change.share].update(change.capacity)
                touched.add(change.share)
        for target in touched:
            totals[target] = total(counts[target])
        for target, line in lines.items():
            line.append(totals[target])
    for line in lines.values():
        line.append(line[-1])
    return {
        "t": [*steps, float(max(end, start))],
        "pool": lines[None],
        "shares": {s.name: lines[s.name] for s in policy.shares},
    }


NOTED_CHANGES = 10  # changes written out in an export's notes; the rest are counted


def changes_in_words(
    changes: Sequence[Change], target: Callable[[str | None], str], limit: int = NOTED_CHANGES
) -> str:
    """The first ``limit`` changes as "at 60 s the pool: 12 x gpu", then how many more: a note
    stays a line or two however long the calendar (the changes themselves are in the export's
    data)."""
    listed = "; ".join(
        f"at {change.time:g} s {target(change.share)}: "
        + ", ".join(f"{n} x {t}" for t, n in change.capacity.items())
        for change in changes[:limit]
    )
    more = len(changes) - limit
    return listed + (f"; and {more:,} more" if more > 0 else "")
