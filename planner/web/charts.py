"""Plotly figures as plain dicts, drawn in the browser by static/js/planner.js.

A share keeps the same colour on every page and chart (``share_color``, the site's palette in
``planner.web.palette``), a policy the same line dash and
marker (``policy_dash``, ``policy_marker``). Figures are rendered into the page with the
``{% chart %}`` tag (``planner_web`` template library), never with inline scripts.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from typing import Any

from planner.web import palette

# The site's colours, named here too: a chart's reader looks for them beside the figures.
from planner.web.colours import PALETTE as PALETTE
from planner.web.colours import name_slot as name_slot

DASHES = ("solid", "dash", "dot", "dashdot", "longdash", "longdashdot")
MARKERS = ("circle", "square", "diamond", "triangle-up", "x", "star", "cross", "triangle-down")
# Fill patterns so stacked states read without colour (own / borrowed / lent / idle / stranded).
STATE_PATTERNS = {"own": "", "borrowed": "/", "lent": "\\", "idle": ".", "stranded": "x", "unassigned": "-"}
FONT = "system-ui, -apple-system, 'Segoe UI', Roboto, sans-serif"


def share_color(name: str) -> str:
    """The colour of a share on every page and chart: the site's palette (``planner.web.palette``),
    which gives the shares of one policy or trace different colours and a share one colour."""
    return palette.share_color(name)


def share_colors(names: Iterable[str]) -> dict[str, str]:
    """``share_color`` of each name (names the site does not know get colours the others lack)."""
    return palette.share_colors(names)


def fit_range(
    values: Iterable[float], *, floor: float | None = None, ceiling: float | None = None, pad: float = 0.1
) -> list[float] | None:
    """An axis range that fits the points (not from 0): their span widened by ``pad`` of it on
    each side (a tenth of the value, or 1, when all are equal), kept within [floor, ceiling].
    None when there is no point."""
    points = [float(v) for v in values if v is not None and v == v]
    if not points:
        return None
    low, high = min(points), max(points)
    margin = (high - low) * pad or (abs(high) * pad or 1.0)
    low, high = low - margin, high + margin
    if floor is not None:
        low = max(low, floor)
    if ceiling is not None:
        high = min(high, ceiling)
    return [low, high]


def policy_dash(index: int) -> str:
    """The line dash of the ``index``-th policy of a study (the baseline is usually 0)."""
    return DASHES[index % len(DASHES)]


def policy_marker(index: int) -> str:
    """The marker symbol of the ``index``-th policy of a study."""
    return MARKERS[index % len(MARKERS)]


def state_pattern(state: str) -> str:
    """The fill pattern of a usage state (own, borrowed, lent, idle, stranded, unassigned)."""
    return STATE_PATTERNS.get(state, "")


def amount(value: float) -> str:
    """A number for a label: thousands separators, a decimal only when it is not whole."""
    return f"{value:,.0f}" if float(value).is_integer() else f"{value:,.1f}"


def gpus_text(value: float) -> str:
    """``1 GPU``, ``1,560 GPUs``, ``2.5 GPUs``."""
    return f"{amount(value)} GPU" if value == 1 else f"{amount(value)} GPUs"


# -- axes ---------------------------------------------------------------------------------


def time_axis(
    seconds: Sequence[float], *, epoch_times: bool, origin: float | None = None
) -> tuple[list, str]:
    """Bucket start times for an x axis: UTC datetimes when the trace has real (epoch) times,
    else hours since ``origin`` (default: the first value). Returns (values, axis title)."""
    if epoch_times:
        return [
            datetime.fromtimestamp(t, tz=UTC).strftime("%Y-%m-%d %H:%M:%S") for t in seconds
        ], "time (UTC)"
    start = origin if origin is not None else (seconds[0] if len(seconds) else 0.0)
    return [round((t - start) / 3600, 4) for t in seconds], "hours since the trace's start"


# -- traces (Plotly's word for one series) ---------------------------------------------------


def bar(
    x: Sequence,
    y: Sequence,
    *,
    name: str,
    color: str,
    unit: str,
    text: Sequence[str] | None = None,
    pattern: str = "",
    orientation: str = "v",
) -> dict[str, Any]:
    """One bar series; hover names the series and the value with its unit."""
    value, category = ("x", "y") if orientation == "h" else ("y", "x")
    trace: dict[str, Any] = {
        "type": "bar",
        "name": name,
        "x": list(x),
        "y": list(y),
        "orientation": orientation,
        "marker": {"color": color, "line": {"color": "#333", "width": 0.5}},
        "hovertemplate": f"{name}<br>%{{{category}}}: %{{{value}:,.4~r}} {unit}<extra></extra>",
    }
    if pattern:
        trace["marker"]["pattern"] = {"shape": pattern, "fgcolor": "#222", "size": 6, "solidity": 0.25}
    if text is not None:
        trace["text"] = list(text)
        trace["textposition"] = "auto"
    return trace


def line(
    x: Sequence,
    y: Sequence,
    *,
    name: str,
    color: str,
    unit: str,
    dash: str = "solid",
    marker: str | None = None,
    shape: str = "linear",
    hover_extra: str = "",
    customdata: Sequence | None = None,
) -> dict[str, Any]:
    """One line series (a policy's line: give its ``policy_dash`` and ``policy_marker``)."""
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines+markers" if marker else "lines",
        "name": name,
        "x": list(x),
        "y": list(y),
        "line": {"color": color, "dash": dash, "width": 2, "shape": shape},
        "hovertemplate": f"{name}<br>%{{x}}: %{{y:,.4~r}} {unit}{hover_extra}<extra></extra>",
    }
    if marker:
        trace["marker"] = {"symbol": marker, "size": 6, "maxdisplayed": 40}
    if customdata is not None:
        trace["customdata"] = list(customdata)
    return trace


def area(
    x: Sequence,
    y: Sequence,
    *,
    name: str,
    color: str,
    unit: str,
    stackgroup: str = "one",
    pattern: str = "",
    legendgroup: str | None = None,
) -> dict[str, Any]:
    """One stacked area (usage over time: own / borrowed / lent / idle, patterned per state)."""
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines",
        "name": name,
        "x": list(x),
        "y": list(y),
        "stackgroup": stackgroup,
        "line": {"color": color, "width": 0.5},
        "fillcolor": color,
        "hovertemplate": f"{name}<br>%{{x}}: %{{y:,.4~r}} {unit}<extra></extra>",
    }
    if pattern:
        trace["fillpattern"] = {"shape": pattern, "fgcolor": "#222", "size": 6, "solidity": 0.25}
    if legendgroup:
        trace["legendgroup"] = legendgroup
    return trace


# -- figures --------------------------------------------------------------------------------


def figure(
    traces: Sequence[dict[str, Any]],
    *,
    title: str,
    x_title: str,
    y_title: str,
    x_type: str | None = None,
    y_type: str | None = None,
    y_range: Sequence[float] | None = None,
    barmode: str | None = None,
    height: int = 340,
    show_legend: bool = True,
    extra_layout: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A figure with the app's defaults: a title naming the subject, axis titles with units,
    thousands separators, hover naming the series, a horizontal legend between title and plot."""
    layout: dict[str, Any] = {
        "title": {
            "text": title,
            "x": 0,
            "xanchor": "left",
            "xref": "paper",
            "y": 1,
            "yref": "container",
            "yanchor": "top",
            "pad": {"t": 8},
            "font": {"size": 15},
        },
        "height": height,
        "margin": {"l": 64, "r": 16, "t": 72 if show_legend else 44, "b": 56},
        "font": {"family": FONT, "size": 12, "color": "#1f2328"},
        "separators": ".,",
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "showlegend": show_legend,
        "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": 1.01, "yanchor": "bottom"},
        "xaxis": {
            "title": {"text": x_title},
            "gridcolor": "#e6e8eb",
            "automargin": True,
            "tickformat": ",~r" if x_type == "log" else None,
        },
        "yaxis": {
            "title": {"text": y_title},
            "gridcolor": "#e6e8eb",
            "automargin": True,
            "tickformat": ",~r",
            "rangemode": "tozero",
        },
    }
    if x_type:
        layout["xaxis"]["type"] = x_type
    if layout["xaxis"]["tickformat"] is None:
        del layout["xaxis"]["tickformat"]
    if y_type:
        layout["yaxis"]["type"] = y_type
        if y_type == "log":
            del layout["yaxis"]["rangemode"]
    if y_range is not None:
        layout["yaxis"]["range"] = list(y_range)
    if barmode:
        layout["barmode"] = barmode
    if extra_layout:
        layout.update(extra_layout)
    return {"data": list(traces), "layout": layout}


def step_line(x: Sequence, y: Sequence, *, name: str, color: str, dash: str = "dash") -> dict[str, Any]:
    """A capacity or quota in force over time (SEMANTICS.md section 9): a line that holds each
    value until the next change, then steps."""
    trace = line(x, y, name=name, color=color, unit="GPUs", dash=dash, shape="hv")
    trace["line"]["width"] = 1.5
    return trace


def capacity_steps_figure(steps: dict[str, Any], *, title: str, epoch: bool) -> dict[str, Any]:
    """The pool's capacity and each share's quota as step lines
    (``scheduling.capacity_plans.capacity_steps``)."""
    x, x_title = time_axis(steps["t"], epoch_times=epoch)
    colors = share_colors(steps["shares"])
    traces = [step_line(x, steps["pool"], name="pool capacity", color="#1f2328", dash="solid")]
    traces += [
        step_line(x, values, name=f"{name}: quota", color=colors[name])
        for name, values in steps["shares"].items()
    ]
    return figure(traces, title=title, x_title=x_title, y_title="GPUs", height=320)


def is_empty(fig: dict[str, Any]) -> bool:
    """True when no series of the figure has a value to draw."""

    def values(trace: dict[str, Any]) -> list:
        return trace.get("x", []) if trace.get("orientation") == "h" else trace.get("y", [])

    return not any(any(v not in (None, 0) for v in values(trace)) for trace in fig.get("data", []))
