"""Finance's first screen: the study's policies side by side over the same hours (pool cost,
idle, stranded, lent and rerun cost, in $ and GPU-hours), each against the baseline, and one
sentence saying what switching from the baseline would change.

Pure functions over each run's pool totals (``FinanceReport`` period totals): no database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

# The columns, in the order finance reads them; lower is better for idle, stranded and rerun
# (money spent on nothing), while lending and the pool's cost are facts, not verdicts.
COLUMNS = ("capacity", "idle", "stranded", "lent", "rerun")
LABELS = {"capacity": "Pool cost", "idle": "Idle", "stranded": "Stranded", "lent": "Lent", "rerun": "Rerun"}
LOWER_IS_BETTER = frozenset({"idle", "stranded", "rerun"})


@dataclass(frozen=True)
class PolicyTotals:
    """One run's pool totals over the chosen range: ``usd`` and ``hours`` keyed by column."""

    run_id: int
    name: str
    is_baseline: bool
    usd: Mapping[str, float]
    hours: Mapping[str, float]


def _verdict(column: str, delta: float) -> str:
    if round(delta) == 0:
        return "same"
    if column not in LOWER_IS_BETTER:
        return ""
    return "better" if delta < 0 else "worse"


def baseline_of(policies: Sequence[PolicyTotals]) -> PolicyTotals | None:
    return next((p for p in policies if p.is_baseline), policies[0] if policies else None)


def policy_rows(policies: Sequence[PolicyTotals]) -> list[dict[str, Any]]:
    """A row per policy: each column's $ and GPU-hours, and (not for the baseline) the $
    difference from the baseline with its verdict; "same" when it rounds to $0."""
    base = baseline_of(policies)
    rows = []
    for policy in policies:
        cells = []
        for column in COLUMNS:
            usd, hours = policy.usd[column], policy.hours[column]
            cell: dict[str, Any] = {"column": column, "usd": usd, "hours": hours}
            cell.update(delta=None, verdict="")
            if base is not None and policy is not base:
                cell["delta"] = usd - base.usd[column]
                cell["verdict"] = _verdict(column, cell["delta"])
            cells.append(cell)
        rows.append(
            {"run_id": policy.run_id, "name": policy.name, "is_baseline": policy is base, "cells": cells}
        )
    return rows


def _money(value: float) -> str:
    return f"${abs(value):,.0f}"


def _gpu_hours(value: float) -> str:
    return f"{abs(value):,.0f} GPU-hours"


def switch_sentence(policies: Sequence[PolicyTotals], *, priced: bool = True) -> str:
    """What moving off the baseline would change: the alternative that leaves the least idle
    capacity (then the least stranded, then the least rerun cost; the study's order on a tie),
    its idle, stranded and rerun cost against the baseline's, in $ (in GPU-hours when the pool
    has no prices: its $ are all 0); "" with a single policy."""
    base = baseline_of(policies)
    others = [p for p in policies if p is not base]
    if base is None or not others:
        return ""

    def amounts(p: PolicyTotals) -> Mapping[str, float]:
        return p.usd if priced else p.hours

    def key(p: PolicyTotals) -> tuple[float, float, float]:
        a = amounts(p)
        return (round(a["idle"]), round(a["stranded"]), round(a["rerun"]))

    def lends(p: PolicyTotals) -> float:
        return round(amounts(p)["lent"])

    text = _money if priced else _gpu_hours
    changing = [p for p in others if key(p) != key(base) or lends(p) != lends(base)]
    if not changing:
        names = [p.name for p in others]
        who = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        unit = "$" if priced else "GPU-hours"
        return f"Switching from {base.name} to {who} changes no idle, stranded, lent or rerun {unit}."
    best = min(changing, key=key)
    parts = []
    for column, noun in (("idle", "idle"), ("stranded", "stranded"), ("rerun", "rerun cost")):
        before, after = amounts(base)[column], amounts(best)[column]
        if round(after - before) == 0:
            parts.append(f"the same {noun} ({text(before)})")
        else:
            way = "less" if after < before else "more"
            parts.append(f"{text(after - before)} {way} {noun} ({text(before)} → {text(after)})")
    return f"Switching from {base.name} to {best.name} would leave {', '.join(parts[:-1])} and {parts[-1]}."
