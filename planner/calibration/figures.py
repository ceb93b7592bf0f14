"""The calibration page's charts: per share, the recorded against the simulated wait-time CDF
(x in hours on a log axis, recorded solid, simulated dashed, in the share's colour)."""

from __future__ import annotations

import math
from typing import Any

from planner.web.charts import figure, line, policy_dash, share_colors

HOUR = 3600.0
# Waits of zero cannot sit on a log axis: the curves start at one second.
FLOOR_SECONDS = 1.0
ALL_JOBS_COLOR = "#1f2328"
CURVES = (("recorded", "recorded", 0), ("simulated", "simulated", 1))  # key, label, dash index


def _steps(curve: dict[str, Any], right_end: float) -> tuple[list[float], list[float], list[int]]:
    """The CDF as a drawable step line: from 0 % at its first wait up to 100 % at ``right_end``."""
    n = int(curve.get("n") or 0)
    xs = [max(x, FLOOR_SECONDS) / HOUR for x in curve["x"]]
    ys = [100 * y for y in curve["y"]]
    x = [xs[0], *xs, max(right_end, xs[-1])]
    y = [0.0, *ys, ys[-1]]
    return x, y, [round(value / 100 * n) for value in y]


def cdf_figure(block: dict[str, Any], color: str) -> dict[str, Any]:
    """Recorded (solid) against simulated (dashed) waits of one share (or all jobs)."""
    curves = block.get("cdfs", {})
    drawn = [curves.get(key) for key, _, _ in CURVES]
    right_end = max(
        (max(c["x"][-1], FLOOR_SECONDS) / HOUR for c in drawn if c and c.get("x")),
        default=FLOOR_SECONDS / HOUR,
    )
    traces = []
    for (_key, label, dash_index), curve in zip(CURVES, drawn, strict=True):
        if not curve or not curve.get("x"):
            continue
        x, y, jobs = _steps(curve, right_end)
        trace = line(
            x, y, name=f"{label} ({block['name']})", color=color, unit="%", dash=policy_dash(dash_index),
            shape="hv", customdata=jobs,
        )  # fmt: skip
        trace["hovertemplate"] = (
            f"{label}<br>wait ≤ %{{x:,.3~r}} h: %{{y:.1f}}% of {int(curve['n']):,} jobs"
            "<br>%{customdata:,} jobs<extra></extra>"
        )
        traces.append(trace)
    subject = "all jobs" if block["name"] == "all" else block["name"]
    fig = figure(
        traces,
        title=f"Wait time of {subject}: simulated against recorded",
        x_title="wait (hours, log scale; under 1 s drawn at 1 s)",
        y_title="jobs (% of the jobs compared)",
        x_type="log",
        y_range=[0, 100],
        height=340,
    )
    fig["layout"]["xaxis"]["dtick"] = 1  # one tick per power of ten
    # A little room left of the 1 s floor, so a curve rising there is not hidden by the axis.
    fig["layout"]["xaxis"]["range"] = [math.log10(FLOOR_SECONDS / HOUR) - 0.25, math.log10(right_end) + 0.1]
    return fig


def share_figures(metrics: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """``(block, figure)`` for each share, then for all jobs; shares in their app-wide colours."""
    shares = metrics.get("shares", [])
    colors = share_colors(block["name"] for block in shares)
    out = [(block, cdf_figure(block, colors[block["name"]])) for block in shares]
    if metrics.get("all"):
        out.append((metrics["all"], cdf_figure(metrics["all"], ALL_JOBS_COLOR)))
    return out
