"""A sweep's points from its finished runs, the Pareto front under its constraints, and the chart:
utilization against the urgent shares' p95 wait, rerun cost as marker size."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.accounts.money import shows_money
from planner.advisor.models import Sweep, SweepVariant
from planner.studies.models import RunStatus
from planner.web import charts
from scheduling.advisor import Assessment, Constraint, assess, parse_constraints, point_from_metrics


@dataclass(frozen=True)
class FrontRow:
    """One replayed policy of the sweep: the base (variant None) or a variant, with its verdict."""

    assessment: Assessment
    variant: SweepVariant | None
    policy_name: str
    policy_id: int | None
    rerun_cost_usd: float | None  # None for a role that may not read $ figures

    @property
    def label(self) -> str:
        return self.variant.label if self.variant else "the base policy, unchanged"

    def as_dict(self) -> dict[str, Any]:
        point = self.assessment.point
        return {
            "variant": self.variant.number if self.variant else None,
            "policy": self.policy_id,
            "policy_name": self.policy_name,
            "label": self.label,
            "kept": bool(self.variant and self.variant.kept),
            "utilization": point.utilization,
            "urgent_p95_wait_seconds": point.urgent_p95_wait_seconds,
            "rerun_gpu_hours": point.rerun_gpu_hours,
            "rerun_cost_usd": self.rerun_cost_usd,
            "share_p95_wait_seconds": dict(point.share_p95_wait_seconds),
            "on_front": self.assessment.on_front,
            "violations": list(self.assessment.violations),
            "preemption_loops": point.preemption_loops,
        }


def run_metrics(summary: dict) -> dict:
    """``Run.summary`` (summary keys and a short shares list) in the shape of ReplayResult.metrics."""
    return {"summary": summary, "shares": summary.get("shares", [])}


def sweep_constraints(sweep: Sweep) -> list[Constraint]:
    share_names = [share["name"] for share in sweep.base_policy.to_policy_dict()["shares"]]
    return parse_constraints(sweep.constraints, share_names)


def sweep_rows(sweep: Sweep, user=None) -> list[FrontRow]:
    """Every succeeded run of the sweep's study, assessed; front first, then by utilization. With a
    ``user`` who may not read $ figures, the rows carry no rerun cost in $."""
    money = user is None or shows_money(user)
    if sweep.study_id is None:
        return []
    variants = {v.policy_id: v for v in sweep.variants.all() if v.policy_id is not None}
    runs = sweep.study.runs.filter(status=RunStatus.SUCCEEDED).only("policy_id", "policy_name", "summary")
    constraints = sweep_constraints(sweep)
    found = [
        (run, point_from_metrics(run.policy_id, run_metrics(run.summary), sweep.urgent_shares))
        for run in runs
        if run.summary
    ]
    verdicts = assess([point for _, point in found], constraints=constraints)
    rows = [
        FrontRow(
            assessment=verdict,
            variant=variants.get(run.policy_id),
            policy_name=run.policy_name,
            policy_id=run.policy_id,
            rerun_cost_usd=float(run.summary.get("rerun_cost_usd") or 0.0) if money else None,
        )
        for (run, _), verdict in zip(found, verdicts, strict=True)
    ]
    return sorted(rows, key=lambda r: (not r.assessment.on_front, -r.assessment.point.utilization))


def _hover(row: FrontRow) -> str:
    point = row.assessment.point
    lines = [
        f"<b>{row.policy_name}</b>",
        row.label,
        f"utilization {point.utilization * 100:.1f}%",
        f"urgent p95 wait {point.urgent_p95_wait_seconds / 3600:,.2f} h",
        f"rerun {point.rerun_gpu_hours:,.1f} GPU-hours"
        + (f" (${row.rerun_cost_usd:,.0f})" if row.rerun_cost_usd is not None else ""),
    ]
    lines += [f"breaks: {v}" for v in row.assessment.violations]
    if point.loops:
        lines.append(f"preemptions loop ({point.preemption_loops:,} jobs left out)")
    return "<br>".join(lines)


def front_figure(rows: list[FrontRow]) -> dict[str, Any]:
    """Utilization (%) against the urgent p95 wait (hours): front points solid, dominated ones
    faded, constraint breakers as crosses, the base as a star; marker area grows with rerun cost."""
    most = max((r.assessment.point.rerun_gpu_hours for r in rows), default=0.0) or 1.0
    groups = [
        ("On the front", lambda r: r.assessment.on_front and r.variant, "circle", 1.0, "#1f6feb"),
        ("Dominated", lambda r: r.assessment.feasible and not r.assessment.on_front and r.variant,
         "circle-open", 0.35, "#57606a"),
        ("Breaks a constraint", lambda r: not r.assessment.feasible and r.variant, "x", 0.6, "#cf222e"),
        ("Base policy", lambda r: r.variant is None, "star", 1.0, "#1a7f37"),
    ]  # fmt: skip
    traces = []
    for name, belongs, symbol, opacity, color in groups:
        chosen = [r for r in rows if belongs(r)]
        if not chosen:
            continue
        traces.append(
            {
                "type": "scatter",
                "mode": "markers",
                "name": name,
                "x": [r.assessment.point.urgent_p95_wait_seconds / 3600 for r in chosen],
                "y": [r.assessment.point.utilization * 100 for r in chosen],
                "text": [_hover(r) for r in chosen],
                "hovertemplate": "%{text}<extra>" + name + "</extra>",
                "opacity": opacity,
                "marker": {
                    "symbol": symbol,
                    "color": color,
                    "size": [8 + 22 * (r.assessment.point.rerun_gpu_hours / most) ** 0.5 for r in chosen],
                    "line": {"width": 1, "color": color},
                },
            }
        )
    figure = charts.figure(
        traces,
        title="Utilization against the urgent shares' p95 wait (marker size: rerun cost)",
        x_title="urgent shares' worst p95 wait (hours)",
        y_title="GPU utilization (%)",
        height=420,
    )
    # The axes fit the points, not from 0: a sweep's variants differ by a few points of
    # utilization and minutes of wait, which a 0-based axis squeezes into one corner.
    points = [r.assessment.point for r in rows]
    x_range = charts.fit_range([p.urgent_p95_wait_seconds / 3600 for p in points], floor=0.0, pad=0.12)
    y_range = charts.fit_range([p.utilization * 100 for p in points], floor=0.0, ceiling=100.0, pad=0.12)
    figure["layout"]["yaxis"].pop("rangemode", None)
    if x_range:
        figure["layout"]["xaxis"]["range"] = x_range
    if y_range:
        figure["layout"]["yaxis"]["range"] = y_range
    return figure
