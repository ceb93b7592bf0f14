"""Training plans as policy changes (SEMANTICS.md section 9): "add N instances of type T for share
S from A to B" is the pool's capacity of T and S's quota of T both raised by N at A and both put
back at B. On a policy without changes that is the four changes of section 9; on one that has
some, every change of T between A and B is raised by N too, so the plan adds N on top of whatever
the pool and the share have at each instant.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduling.errors import InputError
from scheduling.model import parse_policy


@dataclass(frozen=True)
class TrainingPlan:
    share: str
    instance_type: str
    count: int
    start: float | str  # seconds, or an ISO-8601 timestamp, as trace times are
    end: float | str

    def describe(self) -> str:
        return f"+{self.count:,} {self.instance_type} for {self.share} from {self.start} to {self.end}"


def plan_time(value: Any, field: str) -> float:
    """A change time as a number to order changes by: seconds as given, ISO-8601 as epoch seconds
    (naive timestamps are UTC, as in traces)."""
    if isinstance(value, bool):
        raise InputError(f"{value!r} is not a time", field=field)
    if isinstance(value, (int, float)):
        return float(value)
    try:
        moment = datetime.fromisoformat(str(value).strip().replace("Z", "+00:00"))
    except ValueError:
        raise InputError(f"{value!r} is neither seconds nor an ISO-8601 time", field=field) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def with_training_plan(policy: Mapping[str, Any], plan: TrainingPlan, *, name: str = "") -> dict[str, Any]:
    """``policy`` with ``plan`` written into its ``changes``; raises InputError naming the field
    (share, instance_type, count, start, end) when the plan does not fit the policy."""
    base = parse_policy(policy)
    if plan.share not in base.share_index():
        raise InputError(f"{plan.share!r} is not a share of {base.name}", field="share")
    if plan.instance_type not in base.instance_types:
        raise InputError(
            f"{plan.instance_type!r} is not an instance type of {base.name}", field="instance_type"
        )
    if isinstance(plan.count, bool) or not isinstance(plan.count, int) or plan.count < 1:
        raise InputError(
            f"{plan.count!r}: a plan adds a whole number of instances, at least 1", field="count"
        )
    start, end = plan_time(plan.start, "start"), plan_time(plan.end, "end")
    if end <= start:
        raise InputError(f"the plan ends ({plan.end}) before it starts ({plan.start})", field="end")
    changes = [copy.deepcopy(dict(change)) for change in policy.get("changes") or []]
    times = []
    for i, change in enumerate(changes):
        if not isinstance(change, Mapping) or "time" not in change:
            raise InputError("a change needs a time", field=f"changes[{i}].time")
        times.append(plan_time(change["time"], f"changes[{i}].time"))
    share_quota = base.shares[base.share_index()[plan.share]].quota(plan.instance_type)
    targets = (
        (None, int(base.capacity.get(plan.instance_type, 0))),  # the pool
        (plan.share, share_quota),
    )
    added = []
    for target, base_value in targets:
        mine = [i for i, change in enumerate(changes) if _sets(change, target, plan.instance_type)]

        def value_at(moment: float, mine=mine, base_value=base_value, target=target) -> int:
            value = base_value
            for i in sorted(mine, key=lambda i: times[i]):
                if times[i] <= moment:
                    value = int(changes[i]["capacity"][plan.instance_type])
            return value

        at_start, at_end = value_at(start) + plan.count, value_at(end)
        for i in mine:  # the plan adds its instances to whatever is set during it
            if start < times[i] < end:
                changes[i]["capacity"][plan.instance_type] += plan.count
        if not any(times[i] == start for i in mine):
            added.append((start, _change(plan.start, target, plan.instance_type, at_start)))
        else:
            for i in mine:
                if times[i] == start:
                    changes[i]["capacity"][plan.instance_type] += plan.count
        if not any(times[i] == end for i in mine):
            added.append((end, _change(plan.end, target, plan.instance_type, at_end)))
    merged = [(times[i], change) for i, change in enumerate(changes)] + added
    merged.sort(key=lambda item: item[0])  # stable: a pool change stays before its share's
    out = copy.deepcopy(dict(policy))
    out["changes"] = [change for _, change in merged]
    if name:
        out["name"] = name
    return out


def _sets(change: Mapping[str, Any], share: str | None, instance_type: str) -> bool:
    return change.get("share") == share and instance_type in (change.get("capacity") or {})


def _change(time: float | str, share: str | None, instance_type: str, count: int) -> dict[str, Any]:
    change: dict[str, Any] = {"time": time}
    if share is not None:
        change["share"] = share
    change["capacity"] = {instance_type: count}
    return change
