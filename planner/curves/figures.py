"""What the curve and search pages draw and list: rows over the curve's common window, the three
curve charts (one line per policy against GPUs, or $ a month for finance), the search's sentence
and its chart of A's tries against B's target."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner.curves.models import CapacityCurve, PointRole, WorthSearch
from planner.curves.search import criterion
from planner.studies.models import RunStatus
from planner.web import charts
from scheduling.capacity_curve import (
    CurveRow,
    PlanRow,
    common_window,
    curve_lines,
    curve_rows,
    per_month,
    plan_effect,
    plan_row,
    plan_sentence,
    worst_p95,
)
from scheduling.model import Policy as EnginePolicy
from scheduling.worth import METRIC_WORDS, Metric, compared_values, worth_sentence

LINE_COLORS = ("#1f2328", "#4477AA", "#EE6677", "#228833", "#AA3377", "#CCBB44", "#66CCEE", "#EE7733")


def line_style(index: int) -> dict[str, str]:
    """A policy's colour, dash and marker on every curve chart."""
    return {
        "color": LINE_COLORS[index % len(LINE_COLORS)],
        "dash": charts.policy_dash(index),
        "marker": charts.policy_marker(index),
    }


def curve_window(curve: CapacityCurve) -> tuple[float, float]:
    """The union of the horizons of the curve's succeeded replays, its training plans' included."""
    summaries = curve.points.filter(status=RunStatus.SUCCEEDED).values_list("summary", flat=True)
    return common_window(summaries)


def rows_of(curve: CapacityCurve, window: tuple[float, float] | None = None) -> list[CurveRow]:
    """The curve's succeeded points on its lines as rows (by line, then size), over its window."""
    points = curve.points.filter(status=RunStatus.SUCCEEDED, plan__isnull=True).order_by("line", "size")
    return curve_rows(
        [(point.policy_name, point.size, point.summary) for point in points],
        curve.urgent_shares,
        window or curve_window(curve),
    )


def plan_rows_of(
    curve: CapacityCurve, rows: list[CurveRow], window: tuple[float, float] | None = None
) -> list[tuple[int, PlanRow]]:
    """(index in the curve's plans, its row) for each plan whose replay and base point are in."""
    window = window or curve_window(curve)
    base = {(row.policy, row.size): row for row in rows}
    out = []
    points = curve.points.filter(status=RunStatus.SUCCEEDED, plan__isnull=False).order_by("plan")
    for point in points:
        if (point.policy_name, point.size) not in base:
            continue
        policy = EnginePolicy.from_dict(point.policy_snapshot)
        plan = curve.training_plan(point.plan)
        row = plan_row(
            plan, policy, point.summary, base[point.policy_name, point.size], window, curve.urgent_shares
        )
        out.append((point.plan, row))
    return out


def share_names(curve: CapacityCurve) -> list[str]:
    names: list[str] = []
    for point in curve.points.filter(status=RunStatus.SUCCEEDED).only("summary"):
        for name in point.summary["shares"]:
            if name not in names:
                names.append(name)
    return names


def curve_figures(
    curve: CapacityCurve,
    rows: list[CurveRow],
    *,
    share: str = "",
    money: bool = False,
    x: str = "gpus",
    plans: list[tuple[int, PlanRow]] = (),
) -> list[dict[str, Any]]:
    """Wait (the chosen share's p95, else the urgent shares' worst), utilization and rerun cost
    against pool size: GPUs, or $ a month at list price (``x="usd"``, finance only). Each training
    plan is a labelled star on the wait chart, at its average GPUs (or $ a month) over the window."""
    by_dollars = money and x == "usd"
    x_title = "pool, $ a month at list price" if by_dollars else "pool size, GPUs"
    urgent = ", ".join(curve.urgent_shares) or "every share"
    wait_title = f"p95 wait of {share}" if share else f"Worst p95 wait ({urgent})"
    order = [line["name"] for line in curve.lines]
    lines = curve_lines(rows)
    wait, utilization, rerun = [], [], []
    for name, line in sorted(
        lines.items(), key=lambda item: order.index(item[0]) if item[0] in order else 99
    ):
        style = line_style(order.index(name) if name in order else len(order))
        xs = [row.monthly_price_usd if by_dollars else row.gpus for row in line]
        waits = [row.share_p95_seconds.get(share) if share else row.worst_p95_seconds for row in line]
        common = {
            "name": name, "color": style["color"], "dash": style["dash"], "marker": style["marker"],
            # a pool too small for some jobs refuses them, and its waits look short: say so on hover
            "customdata": [row.unschedulable for row in line],
            "hover_extra": "<br>unschedulable jobs: %{customdata:,}",
        }  # fmt: skip
        wait.append(charts.line(xs, [_hours(v) for v in waits], unit="h", **common))
        utilization.append(
            charts.line(xs, [round(row.utilization * 100, 2) for row in line], unit="%", **common)
        )
        rerun_values = [row.rerun_usd_per_month if money else row.rerun_gpu_hours_per_month for row in line]
        rerun.append(
            charts.line(xs, rerun_values, unit="$ a month" if money else "GPU-hours a month", **common)
        )
    for _, plan in plans:
        style = line_style(order.index(plan.row.policy) if plan.row.policy in order else len(order))
        value = plan.row.share_p95_seconds.get(share) if share else plan.row.worst_p95_seconds
        name = f"{plan.row.policy} {plan.label}"
        marker = charts.line(
            [plan.row.monthly_price_usd if by_dollars else plan.row.gpus], [_hours(value)],
            name=name, color=style["color"], unit="h", marker="star",
            customdata=[plan.row.unschedulable],
            hover_extra="<br>average over the window, with the plan<br>unschedulable jobs: %{customdata:,}",
        )  # fmt: skip
        marker.update(mode="markers+text", text=[plan.label], textposition="top center")
        marker["marker"].update(size=15, line={"color": "#ffffff", "width": 1})
        wait.append(marker)
    return [
        charts.figure(wait, title=f"{wait_title} by pool size", x_title=x_title, y_title="p95 wait, hours"),
        charts.figure(
            utilization, title="Utilization by pool size", x_title=x_title, y_title="utilization, %"
        ),
        charts.figure(
            rerun,
            title="Rerun cost by pool size",
            x_title=x_title,
            y_title="rerun cost, $ a month" if money else "rerun, GPU-hours a month",
        ),
    ]


def line_headlines(curve: CapacityCurve, rows: list[CurveRow]) -> list[dict[str, Any]]:
    """Per policy, in words: its worst p95 wait at today's size, and the smallest size on the curve
    from which it stays within a minute of its best (with the unschedulable jobs there)."""
    out = []
    order = [line["name"] for line in curve.lines]
    for name, line in curve_lines(rows).items():
        waits = [row.worst_p95_seconds for row in line]
        known = [w for w in waits if w is not None]
        today = next((row for row in line if row.size == curve.today), None)
        settled = None
        if known:
            best = min(known)
            for i, row in enumerate(line):
                rest = [w for w in waits[i:] if w is not None]
                if rest and max(rest) <= best + 60 and row.unschedulable <= line[-1].unschedulable:
                    settled = row
                    break
        out.append(
            {
                "name": name,
                "style": line_style(order.index(name) if name in order else len(order)),
                "today": today,
                "settled": settled,
            }
        )
    return out


def _hours(seconds: float | None) -> float | None:
    return None if seconds is None else round(seconds / 3600, 4)


@dataclass
class SearchView:
    sentence: str
    target: Any
    answer: Any
    tries: list


def search_view(search: WorthSearch, *, money: bool) -> SearchView:
    """The sentence (with $ only when ``money``), B's target point, A's point at the answer and
    every try in size order."""
    points = list(search.points.all())
    target = next((p for p in points if p.role == PointRole.TARGET), None)
    tries = sorted((p for p in points if p.role == PointRole.CANDIDATE), key=lambda p: p.size)
    answer = next((p for p in tries if p.size == search.answer_size), None)
    sentence = ""
    if search.status == RunStatus.SUCCEEDED and target is not None and target.summary:
        words = METRIC_WORDS[Metric(search.metric)]
        if search.metric == Metric.URGENT_P95 and search.urgent_shares:
            words = f"p95 wait of {', '.join(search.urgent_shares)}"
        window = target.summary["horizon"]["end"] - target.summary["horizon"]["start"]
        top = max((p.gpus for p in tries), default=target.gpus)
        extra = None
        if money and answer is not None:
            extra = answer.summary["monthly_price_usd"] - target.summary["monthly_price_usd"]
        sentence = worth_sentence(
            policy_a=search.policy_a_name,
            policy_b=search.policy_b_name,
            metric_words=words,
            today_gpus=target.gpus,
            answer_gpus=answer.gpus if answer is not None else None,
            top_gpus=top,
            extra_monthly_usd=extra,
            b_rerun_monthly_usd=per_month(target.summary["rerun_cost_usd"], window) if money else None,
            b_rerun_gpu_hours_month=per_month(target.summary["rerun_gpu_hours"], window),
        )
    return SearchView(sentence=sentence, target=target, answer=answer, tries=tries)


def compared_figure(search: WorthSearch, view: SearchView) -> dict[str, Any]:
    """A's compared value at each size tried (the worst one when several shares are compared),
    B's value at today's size as a line, matches as filled markers, misses as open ones."""
    rule = criterion(search)

    def value(summary) -> float | None:
        if search.metric == Metric.SHARE_P95:
            return worst_p95(summary)
        values = [v for v in compared_values(summary, rule).values() if v is not None]
        return max(values) if values else None

    done = [p for p in view.tries if p.summary]
    traces = []
    for matched, label, symbol in ((True, "matches", "circle"), (False, "falls short", "circle-open")):
        chosen = [p for p in done if p.matches is matched]
        trace = charts.line(
            [p.gpus for p in chosen],
            [_hours(value(p.summary)) for p in chosen],
            name=f"{search.policy_a_name}: {label}",
            color=LINE_COLORS[1] if matched else LINE_COLORS[2],
            unit="h",
            marker=symbol,
        )
        trace["mode"] = "markers"
        trace["marker"]["size"] = 10
        traces.append(trace)
    if view.target is not None and view.target.summary and done:
        target_value = _hours(value(view.target.summary))
        xs = [min(p.gpus for p in done), max(p.gpus for p in done)]
        traces.append(
            charts.line(
                xs,
                [target_value, target_value],
                name=f"{search.policy_b_name} at {view.target.gpus:,.0f} GPUs",
                color=LINE_COLORS[0],
                unit="h",
                dash="dash",
            )
        )
    metric = (
        "worst share's p95 wait" if search.metric == Metric.SHARE_P95 else METRIC_WORDS[Metric(search.metric)]
    )
    return charts.figure(
        traces,
        title=f"{search.policy_a_name}'s {metric} at each size tried",
        x_title="pool size, GPUs",
        y_title="hours",
    )


def plan_views(
    curve: CapacityCurve, plans: list[tuple[int, PlanRow]], *, share: str = "", money: bool = False
) -> list[dict[str, Any]]:
    """Per replayed plan, what the page lists: its label and policy, its row, its effect on its
    own share's p95 (or on the share picked on the page) and on the worst p95, and the sentence."""
    order = [line["name"] for line in curve.lines]
    out = []
    for index, plan in plans:
        effect = plan_effect(plan, share or plan.plan.share)
        out.append(
            {
                "index": index,
                "plan": plan,
                "policy": curve.plans[index]["policy"],
                "style": line_style(order.index(plan.row.policy) if plan.row.policy in order else len(order)),
                "effect": effect,
                "worst": plan_effect(plan),
                "sentence": plan_sentence(plan, effect, money=money),
            }
        )
    return out
