"""The study comparison: one column per policy, compared with the study's baseline run.

Built from ``Run.metrics`` alone (summary, shares, CDFs): verdict cards, the policy table
and the per-share table, each value with its difference to the baseline and whether that
difference is better or worse. Pure functions: no database.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

HOUR = 3600.0


@dataclass(frozen=True)
class RunColumn:
    """A finished run as the comparison sees it: its policy's name and position, and metrics."""

    run_id: int
    name: str
    index: int  # position of the policy in the study (its line style and marker)
    is_baseline: bool
    metrics: Mapping[str, Any]


@dataclass(frozen=True)
class Column:
    """A column of a table: ``better`` is "higher", "lower" or "" (no verdict on differences)."""

    key: str
    label: str
    unit: str = ""
    better: str = ""
    digits: int = 2

    @property
    def heading(self) -> str:
        return f"{self.label} ({self.unit})" if self.unit else self.label


@dataclass
class Cell:
    value: float | str | None
    delta: float | None = None  # value minus the baseline's, None for the baseline itself
    verdict: str = ""  # "better", "worse", "same" or ""


@dataclass
class Table:
    """A table of the page, also downloadable as ``<slug>.csv``."""

    slug: str
    title: str
    keys: list[Column]  # the identifying columns (policy, share)
    columns: list[Column]  # the compared values
    rows: list[dict[str, Cell]] = field(default_factory=list)

    def sorted(self, key: str | None, descending: bool) -> Table:
        """The rows ordered by one column (missing values last); the table as is for an unknown key."""
        known = {c.key for c in self.keys + self.columns}
        if not key or key not in known:
            return self

        present = [row for row in self.rows if row[key].value is not None]
        missing = [row for row in self.rows if row[key].value is None]

        def order(row: dict[str, Cell]):
            value = row[key].value
            return value.lower() if isinstance(value, str) else value

        rows = sorted(present, key=order, reverse=descending) + missing
        return Table(self.slug, self.title, self.keys, self.columns, rows)


def hours(seconds: float | None) -> float | None:
    return None if seconds is None else seconds / HOUR


def percent(fraction: float | None) -> float | None:
    """A fraction as a percentage; a metric the replay could not compute (null) stays missing."""
    return None if fraction is None else 100 * fraction


def verdict(delta: float | None, better: str, digits: int = 2) -> str:
    """ "better" / "worse" / "same" for a difference, given which direction is better; a
    difference that rounds to zero at the shown precision is "same"."""
    if delta is None or not better:
        return ""
    if round(abs(delta), digits) == 0:
        return "same"
    return "better" if (delta > 0) == (better == "higher") else "worse"


def _cell(value: float | None, base: float | None, column: Column, is_baseline: bool) -> Cell:
    if is_baseline or value is None or base is None:
        return Cell(value)
    delta = value - base
    return Cell(value, delta, verdict(delta, column.better, column.digits))


RERUN_ONLY = "rerun"  # the verdict of a utilization gain that is only rerun work


def rerun_only(utilization: Cell, useful: Cell) -> Cell:
    """A rise in utilization is no gain when useful utilization did not rise with it: the extra
    busy hours are lost work and start-ups redone after preemptions (SEMANTICS.md section 5).
    Such a cell gets the verdict ``rerun`` (no ▲, "only rerun work" in words)."""
    if utilization.verdict == "better" and useful.verdict in ("same", "worse"):
        return Cell(utilization.value, utilization.delta, RERUN_ONLY)
    return utilization


def compared(value: float | None, base: float | None, column: Column, is_baseline: bool) -> Cell:
    """A value as a cell, with its difference to the baseline's and the verdict on it."""
    return _cell(value, base, column, is_baseline)


def baseline_of(runs: Sequence[RunColumn]) -> RunColumn | None:
    for run in runs:
        if run.is_baseline:
            return run
    return runs[0] if runs else None


def share_names(runs: Sequence[RunColumn]) -> list[str]:
    """Every share of the study's runs, in the order the policies list them."""
    names: dict[str, None] = {}
    for run in runs:
        for share in run.metrics.get("shares", []):
            names.setdefault(share["name"], None)
    return list(names)


# -- the values of a run -------------------------------------------------------------------


def _dist(block: Mapping[str, Any] | None, key: str) -> float | None:
    if not block:
        return None
    return hours(block.get(key))


def _common_values(block: Mapping[str, Any]) -> dict[str, float | None]:
    """What the summary and every share have alike: waits, JCTs, preemptions and rerun cost."""
    preemptions = block.get("preemptions", {})
    values: dict[str, float | None] = {
        "jobs": block.get("jobs"),
        "unschedulable": block.get("unschedulable"),
        "cancelled": block.get("cancelled", 0),
    }
    for kind in ("wait", "jct"):
        for p in ("p50", "p95", "p99"):
            values[f"{kind}_{p}"] = _dist(block.get(f"{kind}_seconds"), p)
    values.update(
        preempt_cross=preemptions.get("cross_share", 0),
        preempt_in=preemptions.get("in_share", 0),
        preempt_fair=preemptions.get("fair_sharing", 0),
        preempt_capacity=preemptions.get("capacity", 0),
        rerun_gpu_hours=block.get("rerun_gpu_hours", 0.0),
        rerun_usd=block.get("rerun_cost_usd", 0.0),
    )
    return values


def summary_values(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    s = metrics["summary"]
    return {
        "utilization": percent(s.get("utilization", 0.0)),
        "useful_utilization": percent(s.get("useful_utilization", 0.0)),
        "succeeded": s.get("succeeded"),
        **_common_values(s),
    }


def share_values(share: Mapping[str, Any]) -> dict[str, float | None]:
    return {
        **_common_values(share),
        "own_gpu_hours": share.get("own_gpu_hours"),
        "borrowed_gpu_hours": share.get("borrowed_gpu_hours"),
        "lent_gpu_hours": share.get("lent_gpu_hours"),
        "idle_gpu_hours": share.get("idle_gpu_hours"),
        "stranded_gpu_hours": share.get("stranded_gpu_hours"),
    }


# -- tables --------------------------------------------------------------------------------

POLICY = Column("policy", "Policy")
SHARE = Column("share", "Share")
# What happened to the jobs: both tables show it (the policy table over all the shares).
JOB_OUTCOME_COLUMNS = [
    Column("unschedulable", "Unschedulable jobs", "", "lower", 0),
    Column("wait_p50", "Wait p50", "h", "lower"),
    Column("wait_p95", "Wait p95", "h", "lower"),
    Column("wait_p99", "Wait p99", "h", "lower"),
    Column("jct_p50", "JCT p50", "h", "lower"),
    Column("jct_p95", "JCT p95", "h", "lower"),
    Column("jct_p99", "JCT p99", "h", "lower"),
    Column("preempt_cross", "Preemptions, cross-share", "", "lower", 0),
    Column("preempt_in", "Preemptions, in-share", "", "lower", 0),
    Column("rerun_gpu_hours", "Rerun cost", "GPU-hours", "lower", 1),
    Column("rerun_usd", "Rerun cost", "$", "lower", 0),
]
# Sections 8-10: each table shows them after its older columns.
LATER_JOB_OUTCOME_COLUMNS = [
    Column("preempt_fair", "Preemptions, fair sharing", "", "lower", 0),
    Column("preempt_capacity", "Preemptions, capacity change", "", "lower", 0),
    Column("cancelled", "Cancelled jobs (RUNNABLE limit)", "", "lower", 0),
]
POLICY_COLUMNS = [
    Column("utilization", "Utilization", "%", "higher", 1),
    Column("useful_utilization", "Useful utilization", "%", "higher", 1),
    *JOB_OUTCOME_COLUMNS,
    # Sections 8-10, after the older columns: a shared ?sort=<table>:<index> keeps its column.
    *LATER_JOB_OUTCOME_COLUMNS,
]
SHARE_COLUMNS = [
    Column("jobs", "Jobs", "", "", 0),
    *JOB_OUTCOME_COLUMNS,
    Column("own_gpu_hours", "Own use", "GPU-hours", "", 0),
    Column("borrowed_gpu_hours", "Borrowed", "GPU-hours", "", 0),
    Column("lent_gpu_hours", "Lent", "GPU-hours", "", 0),
    Column("idle_gpu_hours", "Idle", "GPU-hours", "lower", 0),
    Column("stranded_gpu_hours", "Stranded", "GPU-hours", "lower", 0),
    # Sections 8-10, after the older columns: a shared ?sort=<table>:<index> keeps its column.
    *LATER_JOB_OUTCOME_COLUMNS,
]


def policy_table(runs: Sequence[RunColumn]) -> Table:
    """One row per policy: utilization, waits, JCT, preemptions, rerun cost, against the baseline."""
    baseline = baseline_of(runs)
    base = summary_values(baseline.metrics) if baseline else {}
    table = Table("policies", "Policies compared with the baseline", [POLICY], POLICY_COLUMNS)
    for run in runs:
        values = summary_values(run.metrics)
        row = {"policy": Cell(run.name)}
        for column in POLICY_COLUMNS:
            row[column.key] = _cell(values[column.key], base.get(column.key), column, run is baseline)
        if "utilization" in row and "useful_utilization" in row:
            row["utilization"] = rerun_only(row["utilization"], row["useful_utilization"])
        table.rows.append(row)
    return table


def share_table(runs: Sequence[RunColumn]) -> Table:
    """One row per share and policy, each value with its difference to the same share under
    the baseline policy."""
    baseline = baseline_of(runs)
    base_shares = {s["name"]: share_values(s) for s in baseline.metrics.get("shares", [])} if baseline else {}
    table = Table("shares", "Shares compared with the baseline", [SHARE, POLICY], SHARE_COLUMNS)
    for name in share_names(runs):
        for run in runs:
            share = next((s for s in run.metrics.get("shares", []) if s["name"] == name), None)
            if share is None:
                continue
            values = share_values(share)
            base = base_shares.get(name, {})
            row = {"share": Cell(name), "policy": Cell(run.name)}
            for column in SHARE_COLUMNS:
                row[column.key] = _cell(values[column.key], base.get(column.key), column, run is baseline)
            table.rows.append(row)
    return table


# -- verdict cards -------------------------------------------------------------------------


@dataclass
class CardLine:
    label: str
    column: Column
    cell: Cell


@dataclass
class Card:
    run: RunColumn
    lines: list[CardLine]


def pool_values(metrics: Mapping[str, Any]) -> dict[str, float | None]:
    """The pool's idle capacity and the stranded part of it (every share's), GPU-hours and $."""
    pool = metrics.get("pool") or {}
    shares = metrics.get("shares", [])

    def total(key: str) -> float | None:
        values = [s.get(key) for s in shares if s.get(key) is not None]
        return sum(values) if values else None

    return {
        "idle_gpu_hours": pool.get("idle_gpu_hours"),
        "idle_usd": pool.get("idle_usd"),
        "stranded_gpu_hours": total("stranded_gpu_hours"),
        "stranded_usd": total("stranded_usd"),
    }


POOL_COLUMNS = {
    "idle_gpu_hours": Column("idle_gpu_hours", "Idle", "GPU-hours", "lower", 0),
    "idle_usd": Column("idle_usd", "Idle", "$", "lower", 0),
    "stranded_gpu_hours": Column("stranded_gpu_hours", "Stranded", "GPU-hours", "lower", 0),
    "stranded_usd": Column("stranded_usd", "Stranded", "$", "lower", 0),
}


def verdict_cards(
    runs: Sequence[RunColumn], shares: Sequence[str] | None = None, *, pool: bool = False
) -> list[Card]:
    """One card per policy: utilization (total, useful), p95 wait of each share (``shares``,
    default every one), rerun cost in GPU-hours and in $, unschedulable and cancelled jobs; with
    ``pool``, all jobs' p95 wait and the pool's idle and stranded capacity too; each with its
    difference to the baseline."""
    baseline = baseline_of(runs)
    names = share_names(runs) if shares is None else list(shares)
    base_summary = summary_values(baseline.metrics) if baseline else {}
    base_shares = {s["name"]: share_values(s) for s in baseline.metrics.get("shares", [])} if baseline else {}
    columns = {c.key: c for c in POLICY_COLUMNS}
    wait_p95 = Column("wait_p95", "p95 wait", "h", "lower")
    cards = []
    for run in runs:
        values = summary_values(run.metrics)
        shares = {s["name"]: share_values(s) for s in run.metrics.get("shares", [])}
        is_base = run is baseline
        lines = [
            CardLine(
                "Utilization",
                columns["utilization"],
                _cell(
                    values["utilization"], base_summary.get("utilization"), columns["utilization"], is_base
                ),
            ),
            CardLine(
                "Useful utilization",
                columns["useful_utilization"],
                _cell(
                    values["useful_utilization"],
                    base_summary.get("useful_utilization"),
                    columns["useful_utilization"],
                    is_base,
                ),
            ),
        ]
        lines[0] = CardLine(lines[0].label, lines[0].column, rerun_only(lines[0].cell, lines[1].cell))
        for name in names:
            value = shares.get(name, {}).get("wait_p95")
            lines.append(
                CardLine(
                    f"p95 wait, {name}",
                    wait_p95,
                    _cell(value, base_shares.get(name, {}).get("wait_p95"), wait_p95, is_base),
                )
            )
        if pool:
            lines.append(
                CardLine(
                    "p95 wait, all jobs",
                    wait_p95,
                    _cell(values["wait_p95"], base_summary.get("wait_p95"), wait_p95, is_base),
                )
            )
            own, base_pool = pool_values(run.metrics), pool_values(baseline.metrics) if baseline else {}
            for key, column in POOL_COLUMNS.items():
                label = f"{column.label} capacity" if column.label == "Idle" else f"{column.label} quota"
                lines.append(CardLine(label, column, _cell(own[key], base_pool.get(key), column, is_base)))
        lines.append(
            CardLine(
                "Rerun cost",
                columns["rerun_gpu_hours"],
                _cell(
                    values["rerun_gpu_hours"],
                    base_summary.get("rerun_gpu_hours"),
                    columns["rerun_gpu_hours"],
                    is_base,
                ),
            )
        )
        lines.append(  # the same in $: finance and admin only (planner.accounts.money)
            CardLine(
                "Rerun cost",
                columns["rerun_usd"],
                _cell(values["rerun_usd"], base_summary.get("rerun_usd"), columns["rerun_usd"], is_base),
            )
        )
        lines.append(
            CardLine(
                "Unschedulable jobs",
                columns["unschedulable"],
                _cell(
                    values["unschedulable"],
                    base_summary.get("unschedulable"),
                    columns["unschedulable"],
                    is_base,
                ),
            )
        )
        lines.append(
            CardLine(
                "Cancelled jobs (RUNNABLE limit)",
                columns["cancelled"],
                _cell(values["cancelled"], base_summary.get("cancelled"), columns["cancelled"], is_base),
            )
        )
        cards.append(Card(run, lines))
    return cards


# -- formatting ----------------------------------------------------------------------------


def format_number(value: float | str | None, digits: int = 2) -> str:
    """Thousands separators, ``digits`` decimals (fewer trailing zeros for whole numbers)."""
    if value is None:
        return "–"
    if isinstance(value, str):
        return value
    if digits == 0 or float(value).is_integer() and abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:,.{digits}f}"


def format_delta(cell: Cell, column: Column) -> str:
    """The difference as text that does not need colour: "+1.2 h, worse"."""
    if cell.delta is None:
        return ""
    sign = "+" if cell.delta > 0 else ("−" if cell.delta < 0 else "±")
    unit = {"%": " pts", "": ""}.get(column.unit, f" {column.unit}")
    if column.unit == "$":
        text = f"{sign}${format_number(abs(cell.delta), column.digits)}"
    else:
        text = f"{sign}{format_number(abs(cell.delta), column.digits)}{unit}"
    if cell.verdict == RERUN_ONLY:
        return f"{text}, only rerun work"
    return (
        f"{text}, {cell.verdict}"
        if cell.verdict and cell.verdict != "same"
        else (f"{text}, same" if cell.verdict == "same" else text)
    )


def format_value(cell: Cell, column: Column, *, with_unit: bool = False) -> str:
    """The value with thousands separators; $ and % always, other units when ``with_unit``."""
    if column.unit == "$" and isinstance(cell.value, (int, float)):
        return f"${format_number(cell.value, column.digits)}"
    if column.unit == "%" and isinstance(cell.value, (int, float)):
        return f"{format_number(cell.value, column.digits)}%"
    text = format_number(cell.value, column.digits)
    if with_unit and column.unit and isinstance(cell.value, (int, float)):
        return f"{text} {column.unit}"
    return text
