"""The policy advisor's pure part: policy variants swept over the knobs that matter (each share's
strategy, borrow limit, lending limit, in-share preemption, fair-sharing weight; fair sharing on or
off for the policy), and the Pareto front of their replays
(utilization up, the urgent shares' p95 wait and the rerun cost down) under the user's constraints.
"""

from __future__ import annotations

import copy
import math
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import product
from typing import Any

from scheduling.errors import InputError
from scheduling.model import InSharePreemption, Policy, Strategy

MAX_VARIANTS = 1000  # the most variants one sweep may replay
MODES = ("grid", "random")
UNLIMITED_PERCENT = -1
DEFAULT_KNOBS: dict[str, list] = {
    "strategy": ["RESERVE", "LEND", "LEND_AND_BORROW"],
    "borrow_limit_percent": [UNLIMITED_PERCENT, 0, 50, 100, 200],
    "lending_limit": [None, 0, 0.5],  # fraction of the share's quota it may lend; None = all of it
    "in_share_preemption": ["never", "lower_priority"],
    "fair_weight": [None],  # Kueue fairSharing.weight per share; None = the base's weight
}
# Knobs of the whole policy: fair sharing on (true) or off (false); None = as in the base.
POLICY_KNOBS: dict[str, list] = {"fair_sharing": [None]}
KNOB_NAMES = ("shares", *DEFAULT_KNOBS, *POLICY_KNOBS)


@dataclass(frozen=True)
class ShareSetting:
    """One share's value of every swept knob (borrow and lending limits are None when the strategy
    has no such limit; ``borrow_limit_percent`` -1 is unlimited)."""

    strategy: str
    borrow_limit_percent: float | None
    lending_fraction: float | None
    in_share_preemption: str
    fair_weight: float | None = None  # None: the base's weight (the knob is not swept)

    def describe(self) -> str:
        words = [self.strategy]
        if self.strategy == Strategy.LEND_AND_BORROW.value:
            limit = self.borrow_limit_percent
            words.append("borrow unlimited" if limit is None or limit < 0 else f"borrow {limit:g}%")
        if self.strategy != Strategy.RESERVE.value:
            words.append(
                "lend all" if self.lending_fraction is None else f"lend {self.lending_fraction * 100:g}%"
            )
        words.append(
            "no in-share preemption" if self.in_share_preemption == "never" else "preempts lower priority"
        )
        if self.fair_weight is not None:
            words.append(f"fair weight {self.fair_weight:g}")
        return ", ".join(words)


@dataclass(frozen=True)
class Variant:
    """A policy dict (valid for ``Policy.from_dict``) and what it changes from the base, per share."""

    label: str
    policy: dict[str, Any]
    changes: dict[str, ShareSetting] = field(default_factory=dict)
    fair_sharing: bool | None = None  # turned on (True) or off (False) from the base; None: as the base


def variants(
    base_policy_dict: Mapping[str, Any],
    knobs: Mapping[str, Any] | None = None,
    mode: str = "grid",
    size: int = 50,
    seed: int = 0,
) -> list[Variant]:
    """At most ``size`` variants of the base policy, none equal to it, each changing the swept
    knobs of some shares. ``knobs`` maps a knob of DEFAULT_KNOBS to the values to try (missing
    knobs take the defaults; ``shares`` names the shares to vary, default all). ``grid`` walks the
    whole grid when it has at most ``size`` points, else takes points spread evenly over it (each
    share's settings about equally often);
    ``random`` draws ``size`` distinct points with ``seed``. The same arguments give the same list.
    """
    base = Policy.from_dict(base_policy_dict)
    if mode not in MODES:
        raise InputError(f"{mode!r} is not a sweep mode: choose grid or random", field="mode")
    if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_VARIANTS:
        raise InputError(f"{size!r}: the number of variants must be 1 to {MAX_VARIANTS}", field="size")
    knobs = parse_knobs(knobs or {}, [share.name for share in base.shares])
    varied = knobs["shares"]
    weights_swept = knobs["fair_weight"] != [None]
    current = {share.name: _setting_of(share, weights_swept) for share in base.shares}
    options: list[list[Any]] = [share_options(knobs) for _ in varied]
    # Fair sharing on/off is one more dimension of the grid, after the shares.
    fair_options = list(dict.fromkeys(knobs["fair_sharing"]))
    fair_swept = fair_options != [None]
    base_fair = base.fair_sharing is not None
    if fair_swept:
        options.append([base_fair if value is None else value for value in fair_options])
    total = math.prod(len(o) for o in options)
    # The base's own point is skipped, so ask for one more than size and cut.
    wanted = min(total, size + 1)
    if mode == "grid" and total <= wanted:
        points = (_decode(index, options) for index in range(total))
    elif mode == "grid":
        points = _spread(options, tries=50 * wanted)
    else:
        points = (_decode(index, options) for index in random.Random(seed).sample(range(total), wanted))
    out = []
    seen = set()
    for point in points:
        settings, fair = (point[:-1], point[-1]) if fair_swept else (point, base_fair)
        changes = {
            name: setting for name, setting in zip(varied, settings, strict=True) if setting != current[name]
        }
        fair_change = fair if fair != base_fair else None
        key = (tuple(sorted(changes.items(), key=lambda item: item[0])), fair_change)
        if (not changes and fair_change is None) or key in seen:
            continue
        seen.add(key)
        out.append(_variant(base_policy_dict, changes, number=len(out) + 1, fair_sharing=fair_change))
        if len(out) == size:
            break
    return out


def parse_knobs(raw: Mapping[str, Any], share_names: Sequence[str]) -> dict[str, list]:
    """The knobs to sweep, checked: defaults for missing ones; InputError naming the knob."""
    if not isinstance(raw, Mapping):
        raise InputError("knobs must be an object of knob names to lists of values", field="knobs")
    for key in raw:
        if key not in KNOB_NAMES:
            raise InputError(
                f"unknown knob {key!r}: choose from {', '.join(KNOB_NAMES)}", field=f"knobs.{key}"
            )
    knobs: dict[str, list] = {}
    shares = raw.get("shares")
    if shares is None:
        knobs["shares"] = list(share_names)
    else:
        if not isinstance(shares, list) or not shares:
            raise InputError("give a non-empty list of share names", field="knobs.shares")
        for name in shares:
            if name not in share_names:
                raise InputError(
                    f"{name!r} is not a share of the base policy ({', '.join(share_names)})",
                    field="knobs.shares",
                )
        knobs["shares"] = [name for name in share_names if name in shares]
    for knob, default in {**DEFAULT_KNOBS, **POLICY_KNOBS}.items():
        values = raw.get(knob, default)
        where = f"knobs.{knob}"
        if not isinstance(values, list) or not values:
            raise InputError("give a non-empty list of values", field=where)
        knobs[knob] = [_knob_value(knob, value, where) for value in values]
    return knobs


def _knob_value(knob: str, value: Any, where: str) -> Any:
    if knob == "strategy":
        if value not in {s.value for s in Strategy}:
            raise InputError(f"{value!r} is not RESERVE, LEND or LEND_AND_BORROW", field=where)
        return value
    if knob == "in_share_preemption":
        if value not in {p.value for p in InSharePreemption}:
            raise InputError(f"{value!r} is not an in-share preemption setting", field=where)
        return value
    if value is None and knob in ("lending_limit", "fair_weight", "fair_sharing"):
        return None
    if knob == "fair_sharing":
        if not isinstance(value, bool):
            raise InputError(f"{value!r}: fair sharing is true (on) or false (off)", field=where)
        return value
    if knob == "fair_weight":
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
        ):
            raise InputError(f"{value!r}: a fair-sharing weight is a number of at least 0", field=where)
        return value
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{value!r} is not a number", field=where)
    if knob == "borrow_limit_percent":
        if value < 0 and value != UNLIMITED_PERCENT:
            raise InputError(f"{value!r}: a borrow limit is -1 (unlimited) or at least 0 %", field=where)
        return value
    if not 0 <= value <= 1:
        raise InputError(f"{value!r}: a lending limit is a fraction of quota from 0 to 1", field=where)
    return value


def share_options(knobs: Mapping[str, list]) -> list[ShareSetting]:
    """Every distinct setting of one share the knobs allow: a borrow limit only with
    LEND_AND_BORROW, a lending limit only with a strategy that lends."""
    out: list[ShareSetting] = []
    for strategy in dict.fromkeys(knobs["strategy"]):
        borrows = strategy == Strategy.LEND_AND_BORROW.value
        lends = strategy != Strategy.RESERVE.value
        limits = list(dict.fromkeys(knobs["borrow_limit_percent"])) if borrows else [None]
        fractions = list(dict.fromkeys(knobs["lending_limit"])) if lends else [None]
        for limit, fraction, preemption, weight in product(
            limits,
            fractions,
            dict.fromkeys(knobs["in_share_preemption"]),
            dict.fromkeys(knobs["fair_weight"]),
        ):
            setting = ShareSetting(strategy, limit, fraction, preemption, weight)
            if setting not in out:
                out.append(setting)
    return out


def _decode(index: int, options: Sequence[Sequence[ShareSetting]]) -> list[ShareSetting]:
    """The grid point number ``index``, the last share's setting varying fastest."""
    out = []
    for choices in reversed(options):
        index, pick = divmod(index, len(choices))
        out.append(choices[pick])
    return out[::-1]


def _spread(options: Sequence[Sequence[ShareSetting]], tries: int) -> Iterable[list[ShareSetting]]:
    """Points spread evenly over a grid too big to walk: a Kronecker sequence, one irrational step
    per share (square roots of primes), so each share's settings come up about equally often and
    the shares vary independently. Deterministic."""
    steps = [math.sqrt(prime) % 1 for prime in _primes(len(options))]
    for i in range(1, tries + 1):
        yield [
            choices[int((i * step) % 1 * len(choices))] for choices, step in zip(options, steps, strict=True)
        ]


def _primes(count: int) -> list[int]:
    found: list[int] = []
    candidate = 2
    while len(found) < count:
        if all(candidate % p for p in found):
            found.append(candidate)
        candidate += 1
    return found


def _setting_of(share, weights_swept: bool = False) -> ShareSetting:
    """The base share's setting in the swept terms (an absolute borrowing limit or a per-type
    lending limit that is no fraction of quota reads as "other", so any swept value changes it)."""
    borrows = share.strategy is Strategy.LEND_AND_BORROW
    limit = None
    if borrows:
        if share.borrowing_limit is not None:
            limit = math.nan
        else:
            percent = share.borrow_limit_percent
            limit = UNLIMITED_PERCENT if percent is None or percent < 0 else percent
    fraction = None
    if share.strategy.lends and share.lending_limit is not None:
        fractions = {share.lending_limit.get(t, 0) / q for t, q in share.capacity.items() if q} or {math.nan}
        fraction = fractions.pop() if len(fractions) == 1 else math.nan
        if fraction is not math.nan and any(
            math.floor(q * fraction) != share.lending_limit.get(t, 0) for t, q in share.capacity.items()
        ):
            fraction = math.nan
    weight = share.fair_weight if weights_swept else None
    return ShareSetting(share.strategy.value, limit, fraction, share.in_share_preemption.value, weight)


def _variant(
    base: Mapping[str, Any],
    changes: Mapping[str, ShareSetting],
    number: int,
    fair_sharing: bool | None = None,
) -> Variant:
    policy = copy.deepcopy(dict(base))
    if fair_sharing is True:
        policy["fair_sharing"] = {}  # Kueue's default strategies
    elif fair_sharing is False:
        policy.pop("fair_sharing", None)
    for share in policy["shares"]:
        setting = changes.get(share["name"])
        if setting is None:
            continue
        share["strategy"] = setting.strategy
        share["in_share_preemption"] = setting.in_share_preemption
        share.pop("borrowing_limit", None)
        share.pop("borrow_limit_percent", None)
        share.pop("lending_limit", None)
        if setting.borrow_limit_percent is not None:
            share["borrow_limit_percent"] = setting.borrow_limit_percent
        if setting.lending_fraction is not None:
            fraction = setting.lending_fraction
            share["lending_limit"] = {
                t: math.floor(q * fraction + 1e-9) for t, q in share.get("capacity", {}).items()
            }
        if setting.fair_weight is not None:
            share["fair_weight"] = setting.fair_weight
    words = [f"{name}: {setting.describe()}" for name, setting in changes.items()]
    if fair_sharing is not None:
        words.insert(0, "fair sharing on" if fair_sharing else "fair sharing off")
    label = "; ".join(words)
    policy["name"] = f"{base.get('name') or 'policy'} v{number}"
    policy["description"] = f"Advisor variant of {base.get('name') or 'the base policy'}: {label}."
    Policy.from_dict(policy)  # every variant is a valid policy
    return Variant(label=label, policy=policy, changes=dict(changes), fair_sharing=fair_sharing)


# -- the Pareto front ----------------------------------------------------------------------------

# Objective name -> "max" or "min".
OBJECTIVES: dict[str, str] = {
    "utilization": "max",
    "urgent_p95_wait_seconds": "min",
    "rerun_gpu_hours": "min",
}
CONSTRAINT_METRICS = {
    "p95_wait_seconds": "max",  # a share's p95 wait: needs "share"
    "urgent_p95_wait_seconds": "max",
    "utilization": "min",
    "rerun_gpu_hours": "max",
}


@dataclass(frozen=True)
class SweepPoint:
    """One replayed variant in the advisor's terms. ``share_p95_wait_seconds`` per share name."""

    key: Any
    utilization: float
    urgent_p95_wait_seconds: float
    rerun_gpu_hours: float
    share_p95_wait_seconds: Mapping[str, float] = field(default_factory=dict)
    # Section 8's preemption loops of its replay (findings): a variant that loops is marked, as Kueue
    # would keep evicting and re-admitting those workloads.
    preemption_loops: int = 0

    @property
    def loops(self) -> bool:
        return self.preemption_loops > 0

    def value(self, metric: str, share: str | None = None) -> float:
        if metric == "p95_wait_seconds":
            return self.share_p95_wait_seconds.get(share, 0.0)
        return getattr(self, metric)


@dataclass(frozen=True)
class Constraint:
    """``metric`` (of ``share`` for p95_wait_seconds) at most / at least ``limit``."""

    metric: str
    limit: float
    at_most: bool = True
    share: str | None = None

    def holds(self, point: SweepPoint) -> bool:
        value = point.value(self.metric, self.share)
        return value <= self.limit if self.at_most else value >= self.limit

    def describe(self) -> str:
        subject = f"{self.share} p95 wait" if self.share else self.metric.replace("_", " ")
        if self.metric.endswith("seconds"):
            subject = subject.replace(" seconds", "")
            bound = f"{self.limit / 3600:g} h"
        elif self.metric == "utilization":
            bound = f"{self.limit * 100:g}%"
        else:
            bound = f"{self.limit:g} GPU-hours"
        return f"{subject} {'<=' if self.at_most else '>='} {bound}"


@dataclass(frozen=True)
class Assessment:
    """A point with its verdict: the constraints it breaks and whether it is on the front."""

    point: SweepPoint
    violations: tuple[str, ...]
    on_front: bool

    @property
    def feasible(self) -> bool:
        return not self.violations


def point_from_metrics(key: Any, metrics: Mapping[str, Any], urgent_shares: Iterable[str]) -> SweepPoint:
    """A SweepPoint from ``ReplayResult.metrics``: the urgent p95 wait is the worst p95 wait among
    the urgent shares (all shares when none is named)."""
    summary = metrics.get("summary", {})
    waits = {
        share["name"]: float(share.get("wait_seconds", {}).get("p95") or 0.0)
        for share in metrics.get("shares", [])
    }
    urgent = [name for name in urgent_shares if name in waits] or list(waits)
    return SweepPoint(
        key=key,
        utilization=float(summary.get("utilization") or 0.0),
        urgent_p95_wait_seconds=max((waits[name] for name in urgent), default=0.0),
        rerun_gpu_hours=float(summary.get("rerun_gpu_hours") or 0.0),
        share_p95_wait_seconds=waits,
        preemption_loops=int((summary.get("preemption_loops") or {}).get("count") or 0),
    )


def parse_constraints(raw: Any, share_names: Sequence[str] = ()) -> list[Constraint]:
    """User constraints, e.g. ``[{"metric": "p95_wait_seconds", "share": "prod", "max": 3600},
    {"metric": "utilization", "min": 0.7}]``; InputError naming the constraint and field."""
    if raw in (None, ""):
        return []
    if not isinstance(raw, list):
        raise InputError("constraints must be a list of objects", field="constraints")
    out = []
    for i, item in enumerate(raw):
        where = f"constraints[{i}]"
        if not isinstance(item, Mapping):
            raise InputError("must be an object with metric and max or min", field=where)
        metric = item.get("metric")
        if metric not in CONSTRAINT_METRICS:
            raise InputError(
                f"{metric!r} is not one of {', '.join(CONSTRAINT_METRICS)}", field=f"{where}.metric"
            )
        share = item.get("share")
        if metric == "p95_wait_seconds":
            if share not in share_names:
                raise InputError(f"{share!r} is not a share of the base policy", field=f"{where}.share")
        elif share is not None:
            raise InputError(f"{metric} is not per share: remove share", field=f"{where}.share")
        bound = CONSTRAINT_METRICS[metric]
        if bound not in item or set(item) - {"metric", "share", bound}:
            raise InputError(f"{metric} takes a {bound} bound (and nothing else)", field=f"{where}.{bound}")
        limit = item[bound]
        if isinstance(limit, bool) or not isinstance(limit, (int, float)) or not math.isfinite(limit):
            raise InputError(f"{limit!r} is not a number", field=f"{where}.{bound}")
        out.append(Constraint(metric=metric, limit=float(limit), at_most=bound == "max", share=share))
    return out


def dominates(a: SweepPoint, b: SweepPoint, objectives: Mapping[str, str] = OBJECTIVES) -> bool:
    """``a`` is no worse than ``b`` on every objective and better on at least one."""
    better = False
    for metric, sense in objectives.items():
        x, y = a.value(metric), b.value(metric)
        if sense == "max":
            x, y = -x, -y
        if x > y:
            return False
        better = better or x < y
    return better


def assess(
    points: Sequence[SweepPoint],
    objectives: Mapping[str, str] = OBJECTIVES,
    constraints: Sequence[Constraint] = (),
) -> list[Assessment]:
    """Each point with the constraints it breaks and whether it is on the Pareto front of the
    points that break none (constraints filter first). Points with equal values are all kept."""
    for metric, sense in objectives.items():
        if sense not in ("max", "min"):
            raise InputError(f"{sense!r}: an objective is max or min", field=f"objectives.{metric}")
    violations = [tuple(c.describe() for c in constraints if not c.holds(p)) for p in points]
    feasible = [p for p, broken in zip(points, violations, strict=True) if not broken]
    return [
        Assessment(
            point=p,
            violations=broken,
            on_front=not broken and not any(dominates(q, p, objectives) for q in feasible),
        )
        for p, broken in zip(points, violations, strict=True)
    ]


def pareto_front(
    points: Sequence[SweepPoint],
    objectives: Mapping[str, str] = OBJECTIVES,
    constraints: Sequence[Constraint] = (),
) -> list[SweepPoint]:
    """The non-dominated points among those meeting every constraint, highest utilization first."""
    front = [a.point for a in assess(points, objectives, constraints) if a.on_front]
    return sorted(front, key=lambda p: (-p.utilization, p.urgent_p95_wait_seconds, p.rerun_gpu_hours))
