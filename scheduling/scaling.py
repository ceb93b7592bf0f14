"""A policy at another pool size: the pool's capacity of a type set to a new count, and every
share's quota and the unassigned part of that type scaled in proportion, rounded to whole
instances by largest remainders (their sum is exactly the new capacity).

Two ways to size a pool (``SizeMode``): ``proportional`` scales every instance type by the same
factor (the *sized type*, by default the one holding the most GPUs, gets exactly the count asked
for; the others are rounded half up), ``one_type`` changes one type only and leaves the rest.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from scheduling.errors import InputError
from scheduling.model import Policy, parse_enum, parse_policy

HOURS_PER_MONTH = 730.0  # 8,760 hours a year / 12: a month at list price (choice)


class SizeMode(str, Enum):
    PROPORTIONAL = "proportional"  # every type scaled by the same factor
    ONE_TYPE = "one_type"  # only the sized type changes


def apportion(parts: Sequence[int], total: int) -> list[int]:
    """``total`` whole instances split in proportion to ``parts`` (Hamilton's largest remainders):
    each part gets the floor of its exact share, and the instances left go to the largest
    remainders, ties to the larger part, then the earlier one **(choice)**. All-zero parts get
    zero (there is nothing to be in proportion to)."""
    if total < 0:
        raise InputError(f"{total} instances: a pool size cannot be negative", field="size")
    old = sum(parts)
    if old == 0:
        return [0] * len(parts)
    exact = [part * total / old for part in parts]
    shares = [math.floor(value + 1e-9) for value in exact]
    left = total - sum(shares)
    order = sorted(range(len(parts)), key=lambda i: (-(exact[i] - shares[i]), -parts[i], i))
    for i in order[:left]:
        shares[i] += 1
    return shares


def scaled_limit(limit: int, factor: float) -> int:
    """An absolute borrowing or lending limit at a pool ``factor`` times as large: rounded half up
    (choice), so a limit keeps its meaning as a part of the pool."""
    return math.floor(limit * factor + 0.5)


def sized_type(policy: Mapping[str, Any]) -> str:
    """The instance type a pool size is counted in: the one with the most GPUs in the pool (ties:
    the first name in alphabetical order)."""
    parsed = parse_policy(policy)
    return min(
        parsed.capacity,
        key=lambda name: (-parsed.capacity[name] * parsed.instance_types[name].gpus, name),
    )


def capacity_at(
    policy: Mapping[str, Any],
    size: int,
    *,
    mode: SizeMode | str = SizeMode.PROPORTIONAL,
    instance_type: str = "",
) -> dict[str, int]:
    """The pool's capacity per type when ``instance_type`` (default ``sized_type``) has ``size``
    instances: the other types scaled by the same factor (proportional) or left as they are."""
    mode = _mode(mode)
    parsed = parse_policy(policy)
    name = instance_type or sized_type(policy)
    if name not in parsed.capacity or parsed.capacity[name] == 0:
        raise InputError(f"the pool has no capacity of {name!r} to scale", field="instance_type")
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise InputError(f"{size!r}: a pool size is a whole number of instances, at least 1", field="size")
    factor = size / parsed.capacity[name]
    capacity = dict(parsed.capacity)
    for type_name, count in parsed.capacity.items():
        if type_name == name:
            capacity[type_name] = size
        elif mode is SizeMode.PROPORTIONAL:
            capacity[type_name] = math.floor(count * factor + 0.5)
    return capacity


def scale_policy(policy: Mapping[str, Any], capacity: Mapping[str, int], *, name: str = "") -> dict[str, Any]:
    """``policy`` (the JSON of SEMANTICS.md section 7) on a pool of ``capacity`` per type: per type,
    the shares' quotas and the unassigned part are apportioned over the new count; absolute
    borrowing and lending limits scale with the type (``scaled_limit``); percentages, strategies
    and preemption settings stay. A policy with a calendar (section 9) is only "scaled" to its own
    capacity, where it stays as it is: how its dated changes would scale is nobody's checked rule.
    Returns a valid policy dict (raises InputError otherwise)."""
    base = parse_policy(policy)
    if policy.get("changes") and any(int(count) != base.capacity.get(t) for t, count in capacity.items()):
        # Today's size (every type at its own count) is the policy unchanged: replayed as it is.
        raise InputError(
            "a policy whose capacity changes over time (training plans) is not scaled: only its own "
            "size is replayed; scale its base policy and add the plan afterwards",
            field="changes",
        )
    out = copy.deepcopy(dict(policy))
    out["capacity"] = dict(base.capacity)
    for type_name, count in capacity.items():
        if type_name not in base.capacity:
            raise InputError(f"the pool has no capacity of {type_name!r}", field=f"capacity.{type_name}")
        _scale_type(base, out, type_name, int(count))
    gpus = pool_gpus(parse_policy(out))
    out["name"] = name or f"{base.name} at {gpus:,.0f} GPUs"
    parse_policy(out)  # what it returns is what the engine will replay: refuse anything else here
    return out


def _scale_type(base: Policy, out: dict[str, Any], type_name: str, count: int) -> None:
    old = base.capacity[type_name]
    if count == old:
        return
    parts = [share.quota(type_name) for share in base.shares] + [base.unassigned(type_name)]
    quotas = apportion(parts, count) if old else [0] * len(base.shares) + [count]
    factor = count / old if old else 1.0
    out["capacity"][type_name] = count
    for share, quota in zip(out["shares"], quotas, strict=False):
        if type_name in share.get("capacity", {}) or quota:
            share.setdefault("capacity", {})[type_name] = quota
        for key in ("borrowing_limit", "lending_limit"):
            limit = share.get(key)
            if isinstance(limit, Mapping) and type_name in limit:
                limit[type_name] = scaled_limit(int(limit[type_name]), factor)
            elif isinstance(limit, (int, float)) and not isinstance(limit, bool):
                # A bare number applies to every type: spell it out per type before scaling one.
                share[key] = {name: int(limit) for name in base.instance_types}
                share[key][type_name] = scaled_limit(int(limit), factor)


def policy_at(
    policy: Mapping[str, Any],
    size: int,
    *,
    mode: SizeMode | str = SizeMode.PROPORTIONAL,
    instance_type: str = "",
) -> dict[str, Any]:
    """``policy`` scaled so that its sized type has ``size`` instances (see ``capacity_at``)."""
    return scale_policy(policy, capacity_at(policy, size, mode=mode, instance_type=instance_type))


def pool_gpus(policy: Policy) -> float:
    """GPUs in the pool: instances x GPUs per instance, over the types."""
    return float(sum(count * policy.instance_types[name].gpus for name, count in policy.capacity.items()))


def monthly_list_price(policy: Policy) -> float:
    """What the pool costs a month at its instance types' hourly list prices."""
    hourly = sum(count * policy.instance_types[name].hourly_price for name, count in policy.capacity.items())
    return float(hourly * HOURS_PER_MONTH)


def _mode(mode: SizeMode | str) -> SizeMode:
    return parse_enum(SizeMode, mode, "mode")
