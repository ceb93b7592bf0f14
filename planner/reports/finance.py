"""The finance idle-capacity report: GPU-hours and $ per share and per period (day, week or
month of the trace), summed from ``Run.metrics["periods"]`` (one value per day), with the
pool's idle capacity shown separately or shared out by quota or by usage.

Pure functions over the metrics dict: no database, no per-job data.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

DAY = 86400.0
PERIODS = ("day", "week", "month")
IDLE_MODES = ("separate", "quota", "usage")
IDLE_MODE_LABELS = {
    "separate": "shown separately",
    "quota": "shared by quota",
    "usage": "shared by usage",
}
# What a share is accounted for, in the engine's terms (metrics["periods"]["shares"][name]).
QUANTITIES = ("capacity", "own", "lent", "borrowed", "idle", "stranded", "rerun")
# Columns of the report: the engine's quantities, then the idle shared out and the charge.
COLUMNS = (*QUANTITIES, "idle_share", "charge")
UNASSIGNED = "(unassigned)"
IDLE_LINE = "(idle, not charged)"
TOTAL = "Pool total"


@dataclass(frozen=True)
class Period:
    """Consecutive days of the trace summed as one line of the report."""

    label: str
    days: tuple[int, ...]  # indexes into metrics["periods"]["day"]
    start: float  # seconds of the first day
    nominal_days: float = 1.0  # how long the period is on the calendar (7 for a week)
    covered_days: float = 1.0  # how much of it lies in the window the run is measured over

    @property
    def partial(self) -> bool:
        """Less of it is in the window than its calendar length (to a tenth of a day: a window
        that starts minutes after midnight leaves its first period whole)."""
        return round(self.covered_days, 1) < self.nominal_days


def default_period(summary: Mapping[str, Any] | None) -> str:
    """The period that gives a readable number of lines for a run's window (its summary's
    horizon): days up to a month, weeks up to half a year, months beyond."""
    horizon = (summary or {}).get("horizon") or {}
    days = float(horizon.get("seconds") or 0.0) / DAY
    return "day" if days <= 31 else ("week" if days <= 183 else "month")


@dataclass
class Amounts:
    """One value per column, in GPU-hours and in $."""

    hours: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0.0))
    usd: dict[str, float] = field(default_factory=lambda: dict.fromkeys(COLUMNS, 0.0))

    def add(self, other: Amounts) -> None:
        for key in COLUMNS:
            self.hours[key] += other.hours[key]
            self.usd[key] += other.usd[key]


@dataclass
class CapacityCheck:
    """The pool identity of one period: shares' own + lent + idle, plus unassigned lent + idle,
    equals the pool's capacity."""

    capacity_hours: float
    accounted_hours: float

    @property
    def difference(self) -> float:
        return self.accounted_hours - self.capacity_hours

    @property
    def holds(self) -> bool:
        return abs(self.difference) <= 1e-6 * max(1.0, abs(self.capacity_hours)) + 1e-3


@dataclass
class PeriodReport:
    period: Period
    shares: dict[str, Amounts]  # share name (and UNASSIGNED, IDLE_LINE) -> amounts
    total: Amounts
    check: CapacityCheck


@dataclass
class FinanceReport:
    period_kind: str
    idle_mode: str
    share_names: list[str]
    periods: list[PeriodReport]
    whole: PeriodReport  # every day of the trace
    notes: list[str]

    @property
    def line_names(self) -> list[str]:
        """The lines of each period: the shares, then unassigned capacity (if any), then the
        idle line when idle is shown separately."""
        names = list(self.share_names)
        if self.whole.shares.get(UNASSIGNED) is not None:
            names.append(UNASSIGNED)
        if self.idle_mode == "separate":
            names.append(IDLE_LINE)
        return names


# -- periods --------------------------------------------------------------------------------


def day_label(index: int, start: float, epoch_times: bool) -> str:
    if epoch_times:
        return datetime.fromtimestamp(start, tz=UTC).strftime("%Y-%m-%d")
    return f"day {index + 1}"


def group_days(day_starts: Sequence[float], kind: str, *, epoch_times: bool) -> list[Period]:
    """Days grouped into periods: ``day``; ``week`` (calendar weeks from Monday with real
    dates, else 7 days from the trace's first day); ``month`` (calendar months with real dates,
    else 30 days: "month 1 (30 days)")."""
    if kind not in PERIODS:
        raise ValueError(f"period must be one of {', '.join(PERIODS)}, not {kind!r}")
    groups: dict[Any, list[int]] = {}
    labels: dict[Any, str] = {}
    for index, start in enumerate(day_starts):
        if kind == "day":
            key, label = index, day_label(index, start, epoch_times)
        elif epoch_times:
            date = datetime.fromtimestamp(start, tz=UTC).date()
            if kind == "week":
                monday = date - timedelta(days=date.weekday())
                key, label = monday, f"week of {monday.isoformat()}"
            else:
                key, label = (date.year, date.month), date.strftime("%Y-%m")
        else:
            size = 7 if kind == "week" else 30
            number = index // size + 1
            key = number
            label = f"week {number}" if kind == "week" else f"month {number} (30 days)"
        groups.setdefault(key, []).append(index)
        labels[key] = label
    return [
        Period(labels[key], tuple(days), float(day_starts[days[0]]), _nominal_days(kind, key, epoch_times))
        for key, days in groups.items()
    ]


def _nominal_days(kind: str, key: Any, epoch_times: bool) -> float:
    if kind == "day":
        return 1.0
    if kind == "week":
        return 7.0
    if not epoch_times:
        return 30.0
    year, month = key
    following = datetime(year + month // 12, month % 12 + 1, 1, tzinfo=UTC)
    return float((following - datetime(year, month, 1, tzinfo=UTC)).days)


def with_coverage(period: Period, day_starts: Sequence[float], window: tuple[float, float]) -> Period:
    """The period with how many of its days lie in the window (a first or last period may not
    be whole: the report says so rather than compare it with whole ones)."""
    covered = sum(
        max(0.0, min(window[1], day_starts[d] + DAY) - max(window[0], day_starts[d])) for d in period.days
    )
    return Period(period.label, period.days, period.start, period.nominal_days, covered / DAY)


# -- the days as the engine reports them -----------------------------------------------------


def capacity_in_horizon(metrics: Mapping[str, Any]) -> list[float]:
    """Per day, the fraction of the day's capacity that lies inside the replay's horizon.

    The engine integrates use, lent and idle from the first submit to the last end, so a
    partly covered first or last day must count only the capacity of the covered part for
    the pool identity to hold. Capacity already limited to the horizon stays as it is.
    """
    periods = metrics["periods"]
    horizon = metrics["summary"]["horizon"]
    start, end = float(horizon["start"]), float(horizon["end"])
    pool_gpus = float(metrics.get("series", {}).get("pool_capacity", 0.0))
    fractions = []
    for index, day in enumerate(periods["day"]):
        reported = sum(share["capacity"][index] for share in periods["shares"].values())
        reported += periods.get("unassigned", {}).get("capacity", [0.0] * (index + 1))[index]
        covered_hours = max(0.0, min(end, day + DAY) - max(start, day)) / 3600
        if reported <= 0:
            fractions.append(1.0)
        else:
            fractions.append(min(1.0, pool_gpus * covered_hours / reported))
    return fractions


def unassigned_usd_rates(metrics: Mapping[str, Any]) -> dict[str, float]:
    """$ per GPU-hour of the unassigned capacity, lent and idle (the engine reports those only
    in GPU-hours per day): from the whole-horizon totals, exact for a pool of one instance type."""
    pool = metrics["pool"]
    shares = metrics["shares"]

    def total(key: str) -> float:
        return sum(float(share.get(key, 0.0)) for share in shares)

    capacity_hours = pool["capacity_gpu_hours"] - total("capacity_gpu_hours")
    capacity_usd = pool["capacity_usd"] - total("capacity_usd")
    idle_hours = pool.get("unassigned_idle_gpu_hours", 0.0)
    idle_usd = pool["idle_usd"] - total("idle_usd")
    lent_hours = pool.get("unassigned_lent_gpu_hours", 0.0)
    lent_usd = capacity_usd - idle_usd  # unassigned capacity is either lent or idle
    average = capacity_usd / capacity_hours if capacity_hours > 1e-9 else _pool_rate(metrics)

    def rate(usd: float, hours: float) -> float:
        return usd / hours if hours > 1e-9 else average

    return {"capacity": average, "idle": rate(idle_usd, idle_hours), "lent": rate(lent_usd, lent_hours)}


def _pool_rate(metrics: Mapping[str, Any]) -> float:
    pool = metrics["pool"]
    hours = pool.get("capacity_gpu_hours", 0.0)
    return pool["capacity_usd"] / hours if hours > 1e-9 else 0.0


def _day_amounts(metrics: Mapping[str, Any], fractions: Sequence[float], day: int) -> dict[str, Amounts]:
    """The engine's quantities of one day per share (and unassigned), capacity within the horizon."""
    periods = metrics["periods"]
    out: dict[str, Amounts] = {}
    for name, row in periods["shares"].items():
        amounts = Amounts()
        for key in QUANTITIES:
            scale = fractions[day] if key == "capacity" else 1.0
            amounts.hours[key] = float(row[key][day]) * scale
            amounts.usd[key] = float(row["usd"][key][day]) * scale
        out[name] = amounts
    unassigned = periods.get("unassigned")
    if unassigned and any(unassigned.get("capacity", [])):
        rates = unassigned_usd_rates(metrics)
        amounts = Amounts()
        for key in ("capacity", "lent", "idle"):
            scale = fractions[day] if key == "capacity" else 1.0
            amounts.hours[key] = float(unassigned[key][day]) * scale
            amounts.usd[key] = amounts.hours[key] * rates[key]
        out[UNASSIGNED] = amounts
    return out


# -- sharing idle capacity -------------------------------------------------------------------


def share_idle(lines: dict[str, Amounts], share_names: Sequence[str], mode: str) -> dict[str, Amounts]:
    """Fill ``idle_share`` and ``charge`` of every line of one period.

    The pool's idle capacity is every share's idle quota plus the unassigned idle capacity.
    ``separate``: each share is charged its use (own + borrowed) and the idle capacity is a
    line of its own (IDLE_LINE). ``quota`` / ``usage``: the idle capacity is shared out in
    proportion to the shares' capacity / use (own + borrowed); a period without any use is
    shared by quota. Either way the charges add up to the pool's capacity.
    """
    if mode not in IDLE_MODES:
        raise ValueError(f"idle must be one of {', '.join(IDLE_MODES)}, not {mode!r}")
    idle_hours = sum(lines[name].hours["idle"] for name in lines if name != IDLE_LINE)
    idle_usd = sum(lines[name].usd["idle"] for name in lines if name != IDLE_LINE)
    for name in share_names:
        line = lines[name]
        line.hours["charge"] = line.hours["own"] + line.hours["borrowed"]
        line.usd["charge"] = line.usd["own"] + line.usd["borrowed"]
        line.hours["idle_share"] = line.usd["idle_share"] = 0.0
    if mode == "separate":
        idle_line = Amounts()
        idle_line.hours["idle"] = idle_line.hours["idle_share"] = idle_line.hours["charge"] = idle_hours
        idle_line.usd["idle"] = idle_line.usd["idle_share"] = idle_line.usd["charge"] = idle_usd
        lines[IDLE_LINE] = idle_line
        return lines
    weights = {name: _weight(lines[name], mode) for name in share_names}
    if sum(weights.values()) <= 0:
        weights = {name: _weight(lines[name], "quota") for name in share_names}
    total_weight = sum(weights.values())
    for name in share_names:
        part = weights[name] / total_weight if total_weight > 0 else 1.0 / max(1, len(share_names))
        line = lines[name]
        line.hours["idle_share"] = idle_hours * part
        line.usd["idle_share"] = idle_usd * part
        line.hours["charge"] += line.hours["idle_share"]
        line.usd["charge"] += line.usd["idle_share"]
    return lines


def _weight(line: Amounts, mode: str) -> float:
    if mode == "quota":
        return line.hours["capacity"]
    return line.hours["own"] + line.hours["borrowed"]


def capacity_check(lines: Mapping[str, Amounts]) -> CapacityCheck:
    """Shares' own + lent + idle plus unassigned lent + idle against the pool's capacity."""
    accounted = sum(
        lines[name].hours["own"] + lines[name].hours["lent"] + lines[name].hours["idle"]
        for name in lines
        if name != IDLE_LINE
    )
    capacity = sum(lines[name].hours["capacity"] for name in lines if name != IDLE_LINE)
    return CapacityCheck(capacity_hours=capacity, accounted_hours=accounted)


def _total(lines: Mapping[str, Amounts]) -> Amounts:
    """The pool's line: every column summed over shares and unassigned capacity; the idle line
    only adds to the charge (its idle is already the shares' and unassigned idle)."""
    total = Amounts()
    for name, line in lines.items():
        if name == IDLE_LINE:
            total.hours["charge"] += line.hours["charge"]
            total.usd["charge"] += line.usd["charge"]
        else:
            total.add(line)
    return total


# -- the report ------------------------------------------------------------------------------


def finance_report(
    metrics: Mapping[str, Any], *, period: str = "day", idle: str = "separate"
) -> FinanceReport:
    """The report of one run: per period, per share (and unassigned capacity), every column in
    GPU-hours and $, the pool's total and its capacity check; plus the whole trace."""
    if idle not in IDLE_MODES:
        raise ValueError(f"idle must be one of {', '.join(IDLE_MODES)}, not {idle!r}")
    periods = metrics["periods"]
    epoch_times = bool(metrics["summary"].get("epoch_times"))
    share_names = list(periods["shares"])
    fractions = capacity_in_horizon(metrics)
    days = [_day_amounts(metrics, fractions, day) for day in range(len(periods["day"]))]

    def build(span: Period) -> PeriodReport:
        lines: dict[str, Amounts] = {}
        for day in span.days:
            for name, amounts in days[day].items():
                lines.setdefault(name, Amounts()).add(amounts)
        for name in share_names:
            lines.setdefault(name, Amounts())
        lines = share_idle(lines, share_names, idle)
        return PeriodReport(span, lines, _total(lines), capacity_check(lines))

    horizon = metrics["summary"]["horizon"]
    window = (float(horizon["start"]), float(horizon["end"]))
    groups = [
        with_coverage(group, periods["day"], window)
        for group in group_days(periods["day"], period, epoch_times=epoch_times)
    ]
    whole = Period(
        "whole trace", tuple(range(len(periods["day"]))), float(periods["day"][0]) if days else 0.0
    )
    notes = []
    if any(f < 1.0 for f in fractions):
        notes.append(
            "Capacity counts only the part of the first and last day inside the window "
            "the runs are measured over (from the first submit to the last job's end under any policy)."
        )
    return FinanceReport(
        period_kind=period,
        idle_mode=idle,
        share_names=share_names,
        periods=[build(span) for span in groups],
        whole=build(whole),
        notes=notes,
    )


@dataclass(frozen=True)
class Difference:
    """One cell of a two-policy comparison: the value under each policy and b - a."""

    a: float
    b: float

    @property
    def delta(self) -> float:
        return self.b - self.a


def compare_reports(a: FinanceReport, b: FinanceReport, unit: str = "hours") -> list[dict[str, Any]]:
    """Rows (period, line, column -> Difference) of two reports of the same study, matched by
    period label and line name; a period or line missing on one side counts as zero."""
    rows: list[dict[str, Any]] = []
    b_periods = {p.period.label: p for p in [*b.periods, b.whole]}
    a_periods = {p.period.label: p for p in [*a.periods, a.whole]}
    labels = list(a_periods) + [label for label in b_periods if label not in a_periods]
    names = list(dict.fromkeys(a.line_names + b.line_names))
    for label in labels:
        pa, pb = a_periods.get(label), b_periods.get(label)
        for name in [*names, TOTAL]:
            la = _line(pa, name)
            lb = _line(pb, name)
            if la is None and lb is None:
                continue
            cells = {}
            for column in COLUMNS:
                va = getattr(la, unit)[column] if la else 0.0
                vb = getattr(lb, unit)[column] if lb else 0.0
                cells[column] = Difference(va, vb)
            rows.append({"period": label, "line": name, "cells": cells})
    return rows


def _line(report: PeriodReport | None, name: str) -> Amounts | None:
    if report is None:
        return None
    if name == TOTAL:
        return report.total
    return report.shares.get(name)
