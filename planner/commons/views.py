"""The commons-games page (any role): pick a trace, and a run of a study on it for RESERVE
hoarding; both choices live in the query string (``?trace=<id>&run=<id>&unit=hours|usd``)."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from planner.accounts.money import for_user, shows_money
from planner.commons import figures
from planner.commons.report import commons_report, default_run, runs_of
from planner.traces.models import Trace
from planner.web.access import reader_required
from planner.web.charts import share_colors
from planner.web.query import query_id
from scheduling.commons import MIN_TREND_PERIODS


def _int(request: HttpRequest, name: str) -> int | None:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        return None


def _trend_text(trend: dict[str, Any]) -> str:
    points = trend["slope"] * 100
    if trend["points"] < 2:
        return "too few weeks"
    t = "exact" if trend["t"] is None else f"t = {trend['t']:.1f}"
    return f"{points:+.2f} pts/week, {t}"


def priority_rows(inflation: dict[str, Any], colors: dict[str, str]) -> list[dict[str, Any]]:
    rows = []
    for name, share in inflation["shares"].items():
        total = share["total"]
        active = [v for v in share["top_fraction"] if v is not None]
        rows.append(
            {
                "name": name,
                "color": colors.get(name),
                "jobs": total["jobs"],
                "top": total["top"],
                "top_fraction": total["top"] / total["jobs"] if total["jobs"] else 0.0,
                "high_fraction": total["high"] / total["jobs"] if total["jobs"] else 0.0,
                "first": active[0] if active else None,
                "last": active[-1] if active else None,
                "top_trend": _trend_text(share["trend"]["top"]),
                "top_slope": share["trend"]["top"]["slope"],
                "high_trend": _trend_text(share["trend"]["high"]),
                "growing": share["trend"]["top"]["growing"] or share["trend"]["high"]["growing"],
                "too_few": share["trend"]["top"]["points"] < MIN_TREND_PERIODS,
                "weeks": share["trend"]["top"]["points"],
            }
        )
    return rows


@reader_required
def commons_page(request: HttpRequest) -> HttpResponse:
    traces = list(Trace.objects.ready().only("id", "name", "job_count").order_by("-created_at", "-id"))
    by_id = {trace.pk: trace for trace in traces}
    trace = by_id.get(query_id(request.GET, "trace") or -1, traces[0] if traces else None)
    money = shows_money(request.user)
    units = ("hours", "usd") if money else ("hours",)
    unit = request.GET.get("unit") if request.GET.get("unit") in units else "hours"
    context: dict[str, Any] = {
        "traces": traces,
        "trace": trace,
        "unit": unit,
        "shows_money": money,
        "runs": [],
        "run": None,
    }
    if trace is None:
        return render(request, "commons/report.html", context)
    runs = list(runs_of(trace))
    run = next((r for r in runs if r.pk == _int(request, "run")), None) or default_run(runs)
    report = for_user(request.user, commons_report(trace, run))
    inflation, splitting, hoarding = (
        report["priority_inflation"],
        report["job_splitting"],
        report["reserve_hoarding"],
    )
    colors = share_colors(set(inflation["shares"]) | set((hoarding or {}).get("shares", {})))
    rows = priority_rows(inflation, colors)
    context.update(
        runs=runs,
        run=run,
        inflation=inflation,
        splitting=splitting,
        hoarding=hoarding,
        priority_rows=rows,
        growing=[row["name"] for row in rows if row["growing"]],
        trend_ready=any(not row["too_few"] for row in rows),
        min_trend_weeks=MIN_TREND_PERIODS,
        splitting_rows=[
            {"name": name, "color": colors.get(name), **share} for name, share in splitting["shares"].items()
        ],
        hoarding_rows=[
            {"name": name, "color": colors.get(name), **share}
            for name, share in (hoarding or {}).get("shares", {}).items()
        ],
        top_figure=figures.priority_figure(inflation, "top", colors),
        high_figure=figures.priority_figure(inflation, "high", colors),
        offenders_figure=figures.offenders_figure(splitting, colors),
        bursts_figure=figures.bursts_per_week_figure(splitting, colors),
        stranded_figure=figures.stranded_figure(hoarding, colors, unit) if hoarding else None,
    )
    return render(request, "commons/report.html", context)
