"""What a policy's tree of cohorts, or its jobs' fallback to other types, changes for each team: a
sentence per pair of runs in a study where one policy is exactly the other without it (its
"flattened" or "no fallback" variant, ``planner.web.variants``), from the runs' policy snapshots
and per-share p95 waits.

Pure functions over ``RunColumn`` and the policy dicts replayed: no database, no Django.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.reports.comparison import RunColumn
from planner.reports.decision import _hours, _p95_hours, same

# Kueue flavorFungibility with both MayStopSearch: a job stops at the first type where it fits,
# could borrow or could preempt (the "no fallback" variant's setting).
NO_FALLBACK = {
    "when_can_borrow": "MayStopSearch",
    "when_can_preempt": "MayStopSearch",
    "preference": "BorrowingOverPreemption",
}


def flattened(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy without its tree: no cohorts, every share directly under the root."""
    out = copy.deepcopy(dict(policy))
    out.pop("cohorts", None)
    for share in out.get("shares", []):
        share.pop("cohort", None)
    return out


def without_fallback(policy: Mapping[str, Any]) -> dict[str, Any]:
    """The policy with every share's flavorFungibility MayStopSearch / MayStopSearch."""
    out = copy.deepcopy(dict(policy))
    for share in out.get("shares", []):
        share["flavor_fungibility"] = dict(NO_FALLBACK)
    return out


@dataclass(frozen=True)
class Feature:
    name: str  # as the sentence says it
    remove: Callable[[Mapping[str, Any]], dict[str, Any]]
    present: Callable[[Mapping[str, Any]], bool]


FEATURES = (
    Feature("cohort tree", flattened, lambda policy: bool(policy.get("cohorts"))),
    Feature(
        "fallback to other instance types",
        without_fallback,
        lambda policy: len(policy.get("instance_types") or {}) > 1,
    ),
)


def _comparable(policy: Mapping[str, Any]) -> dict[str, Any]:
    """A policy dict without what a variant changes by its nature (its name and description)."""
    out = dict(policy)
    out.pop("name", None)
    out.pop("description", None)
    return out


@dataclass(frozen=True)
class ShareChange:
    share: str
    with_it: float | None  # p95 wait in hours under the policy with the feature
    without_it: float | None


@dataclass(frozen=True)
class Effect:
    feature: str
    policy: str  # the run with the feature
    variant: str  # the run without it
    shares: tuple[ShareChange, ...]

    @property
    def text(self) -> str:
        known = [(c.share, c.with_it, c.without_it) for c in self.shares
                 if c.with_it is not None and c.without_it is not None]  # fmt: skip
        changed = [
            f"{share} {_hours(a)} instead of {_hours(b)}" for share, a, b in known if not same("wait", a, b)
        ]
        unchanged = [f"{share} unchanged at {_hours(a)}" for share, a, b in known if same("wait", a, b)]
        head = f"What the {self.feature} of {self.policy} changes for each team, against {self.variant}"
        if not changed:
            return f"{head}: no team's p95 wait changes."
        text = f"{head}: p95 wait of {', '.join(changed)}"
        return text + ("; " + ", ".join(unchanged) if unchanged else "") + "."


def share_waits(column: RunColumn) -> dict[str, float | None]:
    return {share["name"]: _p95_hours(share) for share in column.metrics.get("shares", [])}


def variant_effects(columns: Sequence[RunColumn], snapshots: Mapping[int, Mapping[str, Any]]) -> list[Effect]:
    """Every pair of runs (A, B) where B's policy is A's with one feature removed, exactly (a variant
    edited since is no such pair), with each team's p95 wait under both."""
    effects = []
    for feature in FEATURES:
        for column in columns:
            policy = snapshots.get(column.run_id)
            if policy is None or not feature.present(policy):
                continue
            expected = _comparable(feature.remove(policy))
            if expected == _comparable(policy):
                continue  # the feature changes nothing in this policy (already without it)
            for other in columns:
                if other is column or _comparable(snapshots.get(other.run_id) or {}) != expected:
                    continue
                mine, theirs = share_waits(column), share_waits(other)
                shares = tuple(ShareChange(name, mine[name], theirs[name]) for name in mine if name in theirs)
                effects.append(Effect(feature.name, column.name, other.name, shares))
    return effects
