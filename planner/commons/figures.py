"""Plotly figures of the commons-games page (plain dicts, drawn by static/js/planner.js): the
priority mix per share and week, bursts of small jobs per user and per week, and stranded RESERVE
quota per day. A share keeps its colour across them (``share_colors``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from planner.web import charts

PRIORITY_LEVELS = {
    "top": ("top_fraction", "at the top priority"),
    "high": ("high_fraction", "at or above the 90th-percentile priority"),
}


def period_labels(starts: Sequence[float], *, epoch_times: bool, unit: str) -> list[str]:
    """Dates (UTC) of the periods' starts when the trace has real times, else ``week 1``..."""
    if epoch_times:
        return [datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d") for t in starts]
    return [f"{unit} {n}" for n in range(1, len(starts) + 1)]


def _x_title(epoch_times: bool, unit: str) -> str:
    return f"{unit} starting (UTC)" if epoch_times else f"{unit} of the trace"


def priority_figure(inflation: dict[str, Any], level: str, colors: dict[str, str]) -> dict[str, Any]:
    """Per share, the percentage of its jobs submitted each week at the ``level`` ("top"/"high")."""
    key, words = PRIORITY_LEVELS[level]
    weeks = max(1, round(inflation["period_seconds"] / (7 * 86400))) if inflation.get("periods") else 1
    unit = "week" if weeks == 1 else f"{weeks}-week period"
    x = period_labels(
        inflation.get("periods", []), epoch_times=inflation.get("epoch_times", False), unit=unit
    )
    traces = []
    for name, share in inflation.get("shares", {}).items():
        y = [None if v is None else round(v * 100, 3) for v in share[key]]
        traces.append(
            charts.line(
                x,
                y,
                name=name,
                color=colors.get(name, charts.share_color(name)),
                unit="% of its jobs",
                marker="circle",
            )
        )
    priority = inflation.get("top_priority") if level == "top" else inflation.get("high_priority")
    return charts.figure(
        traces,
        title=f"Jobs {words} ({priority}) per share and {unit}",
        x_title=_x_title(inflation.get("epoch_times", False), unit),
        y_title="% of the share's jobs",
        extra_layout={
            "xaxis": {
                "title": {"text": _x_title(inflation.get("epoch_times", False), unit)},
                "type": "category",
                "gridcolor": "#e6e8eb",
                "automargin": True,
            }
        },
    )


def offenders_figure(splitting: dict[str, Any], colors: dict[str, str]) -> dict[str, Any]:
    """Horizontal bars: jobs in bursts per user (the top offenders), one colour per share."""
    who = "user" if splitting.get("by") == "user" else "share"
    users = list(reversed(splitting.get("users", [])))  # Plotly draws the first category at the bottom
    traces = []
    for share in dict.fromkeys(u["share"] for u in users):
        rows = [u for u in users if u["share"] == share]
        trace = charts.bar(
            [u["jobs_in_bursts"] for u in rows],
            [u["user"] for u in rows],
            name=share,
            color=colors.get(share, charts.share_color(share)),
            unit="jobs in bursts",
            orientation="h",
        )
        trace["customdata"] = [[u["bursts"], round(u["gpu_hours_fraction"] * 100, 2)] for u in rows]
        trace["hovertemplate"] = (
            f"%{{y}} ({share})<br>%{{x:,}} jobs in %{{customdata[0]:,}} bursts"
            "<br>%{customdata[1]}% of its GPU-hours<extra></extra>"
        )
        traces.append(trace)
    return charts.figure(
        traces,
        title=f"Jobs submitted in bursts of small jobs, per {who}",
        x_title="jobs in bursts",
        y_title=who,
        barmode="stack",
        height=max(260, 90 + 26 * len(users)),
        extra_layout={"yaxis": {"title": {"text": who}, "type": "category", "automargin": True}},
    )


def _period_axis(epoch_times: bool, unit: str) -> dict[str, Any]:
    """The x axis of weeks or days: categories (labels, not times), titled as ``x_title``."""
    return {"xaxis": {"title": {"text": _x_title(epoch_times, unit)}, "type": "category", "automargin": True}}


def bursts_per_week_figure(splitting: dict[str, Any], colors: dict[str, str]) -> dict[str, Any]:
    """Stacked bars: bursts per share and week."""
    x = period_labels(
        splitting.get("periods", []), epoch_times=splitting.get("epoch_times", False), unit="week"
    )
    traces = [
        charts.bar(
            x,
            share["bursts_per_period"],
            name=name,
            color=colors.get(name, charts.share_color(name)),
            unit="bursts",
        )
        for name, share in splitting.get("shares", {}).items()
        if share["bursts"]
    ]
    return charts.figure(
        traces,
        title="Bursts of small jobs per share and week",
        x_title=_x_title(splitting.get("epoch_times", False), "week"),
        y_title="bursts",
        barmode="stack",
        extra_layout=_period_axis(splitting.get("epoch_times", False), "week"),
    )


def stranded_figure(hoarding: dict[str, Any], colors: dict[str, str], unit: str = "hours") -> dict[str, Any]:
    """Grouped bars: stranded quota per share and day, in GPU-hours or $."""
    key = "stranded_usd" if unit == "usd" else "stranded_gpu_hours"
    label = "$" if unit == "usd" else "GPU-hours"
    x = period_labels(hoarding.get("days", []), epoch_times=hoarding.get("epoch_times", False), unit="day")
    traces = [
        charts.bar(
            x,
            share["days"][key],
            name=f"{name} ({share['strategy']})",
            color=colors.get(name, charts.share_color(name)),
            unit=label,
        )
        for name, share in hoarding.get("shares", {}).items()
    ]
    return charts.figure(
        traces,
        title=f"Stranded quota per day ({label}): idle while other shares had jobs waiting",
        x_title=_x_title(hoarding.get("epoch_times", False), "day"),
        y_title=f"stranded {label}",
        barmode="group",
        extra_layout=_period_axis(hoarding.get("epoch_times", False), "day"),
    )
