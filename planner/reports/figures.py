"""Plotly figures of the study comparison and the finance report, built with the app's chart
helpers (``planner.web.charts``): a share keeps its colour, a policy its dash, marker and
(on bars) fill pattern."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from planner.reports.comparison import HOUR, RunColumn, share_names
from planner.reports.finance import IDLE_LINE, IDLE_MODE_LABELS, UNASSIGNED, FinanceReport
from planner.web.charts import (
    area,
    bar,
    figure,
    line,
    policy_dash,
    policy_marker,
    share_colors,
    state_pattern,
    step_line,
    time_axis,
)

# Bars have no dash: a policy's bars get a fill pattern of their own (the baseline plain).
POLICY_PATTERNS = ("", "/", "x", ".", "\\", "+", "-", "|")
UNASSIGNED_COLOR = "#888888"
CAPACITY_COLOR = "#1f2328"
# Waits of zero cannot sit on a log axis: CDFs start at one second.
CDF_FLOOR_SECONDS = 1.0


def policy_pattern(index: int) -> str:
    """The fill pattern of the ``index``-th policy's bars."""
    return POLICY_PATTERNS[index % len(POLICY_PATTERNS)]


def colors_of(runs: Sequence[RunColumn]) -> dict[str, str]:
    """Every share of the study in its colour, all different (``charts.share_colors``)."""
    return share_colors(share_names(runs))


def legend_right(fig: dict[str, Any]) -> dict[str, Any]:
    """A vertical legend right of the plot, for charts with many series."""
    fig["layout"]["legend"] = {
        "orientation": "v",
        "x": 1.02,
        "xanchor": "left",
        "y": 1,
        "yanchor": "top",
        "tracegroupgap": 2,
        "font": {"size": 11},
    }
    fig["layout"]["margin"]["t"] = 44
    return fig


def _rgba(color: str, alpha: float) -> str:
    red, green, blue = (int(color[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({red},{green},{blue},{alpha})"


def _light(trace: dict[str, Any], color: str) -> dict[str, Any]:
    """Idle quota: the share's colour, pale, dotted in that colour (not a black field of dots)."""
    trace["fillcolor"] = _rgba(color, 0.18)
    if "fillpattern" in trace:
        trace["fillpattern"].update(fgcolor=color, bgcolor=_rgba(color, 0.12), solidity=0.15)
    return trace


# -- usage over time -------------------------------------------------------------------------


def usage_figures(runs: Sequence[RunColumn], view: str = "") -> list[dict[str, Any]]:
    """Usage over time, one figure per policy on a common y range.

    ``view`` empty: the pool, each share's own use and borrowed GPUs, then each share's idle
    quota and the unassigned idle capacity, stacked up to the pool's capacity (lent GPUs are
    the borrowed ones seen from the lender). ``view`` a share name: that share's own use, lent
    and idle quota stacked up to its quota, its borrowed GPUs on top."""
    figures = []
    top = 0.0
    colors = colors_of(runs)
    for run in runs:
        series = run.metrics.get("series", {})
        epoch_times = bool(run.metrics["summary"].get("epoch_times"))
        origin = run.metrics["summary"].get("horizon", {}).get("start")
        x, x_title = time_axis(series.get("t", []), epoch_times=epoch_times, origin=origin)
        steps = series.get("steps")
        step_x = time_axis(steps["t"], epoch_times=epoch_times, origin=origin)[0] if steps else None
        if view:
            traces, ceiling, title = _share_usage(series, view, x, colors, steps, step_x)
        else:
            traces, ceiling, title = _pool_usage(series, x, colors, steps, step_x)
        stack = [0.0] * len(x)
        for trace in traces:
            if trace.get("stackgroup"):
                stack = [a + b for a, b in zip(stack, trace["y"], strict=False)]
        top = max(top, ceiling, max(stack, default=0.0))
        figures.append(
            legend_right(
                figure(
                    traces,
                    title=f"{title} under {run.name}",
                    x_title=x_title,
                    y_title="GPUs (average)",
                    height=430,
                )
            )
        )
    for fig in figures:
        fig["layout"]["yaxis"]["range"] = [0, top * 1.05 if top > 0 else 1]
    return figures


def _capacity_line(
    x: list, value: float, name: str, steps: list | None = None, step_x: list | None = None, color: str = ""
) -> tuple[dict[str, Any], float]:
    """A capacity or quota as a line, and its highest value: a step line over time when the run
    stores the calendar's steps (``series.steps``, SEMANTICS.md section 9), else flat."""
    if steps and step_x:
        return step_line(step_x, steps, name=name, color=color or CAPACITY_COLOR), max(steps)
    trace = line(x, [value] * len(x), name=name, color=color or CAPACITY_COLOR, unit="GPUs", dash="dash")
    trace["line"]["width"] = 1.5
    return trace, value


def _pool_usage(
    series: dict[str, Any], x: list, colors: dict[str, str], steps: dict | None, step_x: list | None
) -> tuple[list, float, str]:
    shares = series.get("shares", {})
    traces = []
    for state, label in (("own", "own use"), ("borrowed", "borrowed"), ("idle", "idle quota")):
        for name, row in shares.items():
            trace = area(
                x,
                row.get(state, []),
                name=f"{name}: {label}",
                color=colors[name],
                unit="GPUs",
                pattern=state_pattern(state),
                legendgroup=name,
            )
            traces.append(_light(trace, colors[name]) if state == "idle" else trace)
    unassigned = series.get("unassigned", {})
    if any(unassigned.get("idle", [])):
        trace = area(
            x,
            unassigned["idle"],
            name="unassigned: idle",
            color=UNASSIGNED_COLOR,
            unit="GPUs",
            pattern=state_pattern("unassigned"),
        )
        traces.append(_light(trace, UNASSIGNED_COLOR))
    capacity = float(series.get("pool_capacity", 0.0))
    trace, capacity = _capacity_line(x, capacity, "pool capacity", (steps or {}).get("pool"), step_x)
    traces.append(trace)
    if steps and any(len(set(values)) > 1 for values in steps["shares"].values()):
        # Quotas that change over time are worth a line each; constant ones are in the areas.
        for name, values in steps["shares"].items():
            if name in shares:
                quota, _ = _capacity_line(x, 0.0, f"{name}: quota", values, step_x, colors[name])
                quota["line"]["dash"] = "dot"
                quota["legendgroup"] = name
                traces.append(quota)
    return traces, capacity, "Pool usage by share"


def _share_usage(
    series: dict[str, Any],
    name: str,
    x: list,
    colors: dict[str, str],
    steps: dict | None = None,
    step_x: list | None = None,
) -> tuple[list, float, str]:
    row = series.get("shares", {}).get(name)
    if row is None:
        return [], 0.0, f"Usage of {name} (not in this policy)"
    color = colors[name]
    traces = []
    for state, label in (
        ("own", "own use"),
        ("lent", "lent"),
        ("idle", "idle quota"),
        ("borrowed", "borrowed"),
    ):
        trace = area(
            x,
            row.get(state, []),
            name=f"{name}: {label}",
            color=color,
            unit="GPUs",
            pattern=state_pattern(state),
        )
        traces.append(_light(trace, color) if state == "idle" else trace)
    quota = float(row.get("quota", 0.0))
    trace, quota = _capacity_line(
        x, quota, f"{name}: quota", (steps or {}).get("shares", {}).get(name), step_x
    )
    traces.append(trace)
    return traces, quota, f"Usage of {name}'s quota"


# -- waits -----------------------------------------------------------------------------------


def cdf_figures(runs: Sequence[RunColumn], kind: str = "wait") -> list[dict[str, Any]]:
    """One figure per share (then all jobs): the CDF of wait (or JCT) with one line per policy,
    x in hours on a log axis, y 0-100 %, hover with the number of jobs."""
    noun = "Wait time" if kind == "wait" else "Job completion time"
    colors = colors_of(runs)
    figures = []
    for name in [*share_names(runs), ""]:
        traces = []
        for run in runs:
            cdfs = run.metrics.get("cdfs", {}).get(kind, {})
            curve = cdfs.get("shares", {}).get(name) if name else cdfs.get("all")
            if not curve or not curve.get("x"):
                continue
            n = int(curve.get("n", 0))
            x = [max(value, CDF_FLOOR_SECONDS) / HOUR for value in curve["x"]]
            y = [100 * value for value in curve["y"]]
            jobs = [round(value * n) for value in curve["y"]]
            trace = line(
                x,
                y,
                name=run.name,
                color=colors[name] if name else CAPACITY_COLOR,
                unit="%",
                dash=policy_dash(run.index),
                marker=policy_marker(run.index),
                shape="hv",
                customdata=jobs,
            )
            trace["hovertemplate"] = (
                f"{run.name}<br>{kind} ≤ %{{x:,.3~r}} h: %{{y:.1f}}% of {n:,} jobs"
                "<br>%{customdata:,} jobs<extra></extra>"
            )
            traces.append(trace)
        subject = f"{noun} of {name}" if name else f"{noun} of all jobs"
        fig = figure(
            traces,
            title=f"{subject}, by policy",
            x_title=f"{kind} (hours, log scale; under 1 s drawn at 1 s)",
            y_title="jobs (% of the share's jobs)",
            x_type="log",
            y_range=[0, 100],
            height=340,
        )
        fig["layout"]["xaxis"]["dtick"] = 1  # one tick per power of ten
        figures.append(fig)
    return figures


def percentile_figure(runs: Sequence[RunColumn], kind: str = "wait") -> dict[str, Any]:
    """p50 / p95 / p99 of wait (or JCT) per share, one bar series per policy."""
    names = share_names(runs)
    colors = colors_of(runs)
    key = f"{kind}_seconds"
    traces = []
    for run in runs:
        shares = {s["name"]: s for s in run.metrics.get("shares", [])}
        x, y, bar_colors = [], [], []
        for name in names:
            block = shares.get(name, {}).get(key) or {}
            for pct in ("p50", "p95", "p99"):
                x.append(f"{name}<br>{pct}")
                value = block.get(pct)
                y.append(None if value is None else value / HOUR)
                bar_colors.append(colors[name])
        trace = bar(
            x,
            y,
            name=run.name,
            color=bar_colors[0] if bar_colors else CAPACITY_COLOR,
            unit="h",
            pattern=policy_pattern(run.index) or " ",
        )
        trace["marker"]["color"] = bar_colors
        trace["hovertemplate"] = f"{run.name}<br>%{{x}}: %{{y:,.3~r}} h<extra></extra>"
        traces.append(trace)
    noun = "Wait time" if kind == "wait" else "Job completion time"
    fig = figure(
        traces,
        title=f"{noun} percentiles by share (bars: policies)",
        x_title="share and percentile",
        y_title="hours",
        barmode="group",
        height=360,
    )
    fig["layout"]["xaxis"]["tickangle"] = 0  # "share<br>p95" reads level, on two lines
    return fig


# -- preemptions and rerun cost ------------------------------------------------------------


# Every preemption cause of SEMANTICS.md (sections 4, 8 and 9), its words and its bar pattern.
PREEMPTION_CAUSES = (
    ("cross_share", "cross-share", ""),
    ("in_share", "in-share", "/"),
    ("fair_sharing", "fair sharing", "."),
    ("capacity", "capacity change", "x"),
)


def preemption_figure(runs: Sequence[RunColumn]) -> dict[str, Any]:
    """Preemptions per policy stacked by share and cause (cross-share plain, in-share hatched,
    fair sharing dotted, capacity changes crossed; a cause no run has is left out of the legend)."""
    names = share_names(runs)
    colors = colors_of(runs)
    policies = [run.name for run in runs]
    traces = []
    for cause, label, pattern in PREEMPTION_CAUSES:
        if cause not in ("cross_share", "in_share") and not any(
            share.get("preemptions", {}).get(cause) for run in runs for share in run.metrics.get("shares", [])
        ):
            continue
        for name in names:
            counts = []
            for run in runs:
                share = next((s for s in run.metrics.get("shares", []) if s["name"] == name), {})
                counts.append(share.get("preemptions", {}).get(cause, 0))
            trace = bar(
                policies,
                counts,
                name=f"{name}: {label}",
                color=colors[name],
                unit="preemptions",
                pattern=pattern,
            )
            trace["legendgroup"] = name
            traces.append(trace)
    return legend_right(
        figure(
            traces,
            title="Preemptions by cause and share",
            x_title="policy",
            y_title="preemptions (jobs stopped)",
            barmode="stack",
            height=340,
        )
    )


def rerun_figure(runs: Sequence[RunColumn]) -> dict[str, Any]:
    """Rerun cost (lost work + start-up) per policy stacked by share, GPU-hours with $ labels (only
    when the metrics carry $ figures: not for a role without finance access)."""
    names = share_names(runs)
    colors = colors_of(runs)
    policies = [run.name for run in runs]
    money = any("rerun_cost_usd" in s for run in runs for s in run.metrics.get("shares", []))
    traces = []
    for name in names:
        hours, labels = [], []
        for run in runs:
            share = next((s for s in run.metrics.get("shares", []) if s["name"] == name), {})
            hours.append(share.get("rerun_gpu_hours", 0.0))
            labels.append(f"${share.get('rerun_cost_usd', 0.0):,.0f}")
        trace = bar(
            policies, hours, name=name, color=colors[name], unit="GPU-hours", text=labels if money else None
        )
        if money:
            trace["customdata"] = labels
            trace["hovertemplate"] = (
                f"{name}<br>%{{x}}: %{{y:,.1f}} GPU-hours (%{{customdata}})<extra></extra>"
            )
        traces.append(trace)
    return figure(
        traces,
        title="Rerun cost of preemptions by share (GPU-hours" + ("; $ on the bars)" if money else ")"),
        x_title="policy",
        y_title="GPU-hours lost to preemption",
        barmode="stack",
        height=340,
    )


# -- why jobs waited ------------------------------------------------------------------------

# The engine's WaitReason names (metrics "waited_by_reason_seconds"), with words, a colour and a
# fill pattern each, so the chart also reads without colour.
WAIT_REASONS = (
    ("pool_full", "pool full, nothing it may preempt", "#4e79a7", ""),
    ("nothing_lendable", "idle capacity not lendable (RESERVE quota)", "#e15759", "x"),
    ("borrow_limit", "its share's borrow limit reached", "#f28e2b", "/"),
    ("over_quota_no_borrowing", "over quota, its share may not borrow", "#b07aa1", "\\"),
    ("behind_queue_head", "behind its share's first job (strict FIFO)", "#9c9c9c", "."),
)


def wait_reason_figure(runs: Sequence[RunColumn]) -> dict[str, Any]:
    """Job-hours spent waiting per share and policy, stacked by the reason the scheduler found."""
    categories, per_reason = [], {key: [] for key, *_ in WAIT_REASONS}
    for name in share_names(runs):
        for run in runs:
            share = next((s for s in run.metrics.get("shares", []) if s["name"] == name), None)
            if share is None or "waited_by_reason_seconds" not in share:
                continue
            categories.append(f"{name} · {run.name}")
            for key in per_reason:
                per_reason[key].append(share["waited_by_reason_seconds"].get(key, 0.0) / HOUR)
    traces = [
        bar(categories, per_reason[key], name=label, color=color, unit="job-hours", pattern=pattern)
        for key, label, color, pattern in WAIT_REASONS
        if any(per_reason[key])
    ]
    return legend_right(
        figure(
            traces,
            title="Why jobs waited, by share and policy",
            x_title="share · policy",
            y_title="job-hours waited",
            barmode="stack",
            height=380,
        )
    )


def job_timeline_figure(timeline: dict[str, Any]) -> dict[str, Any]:
    """One job's timeline: a bar per segment along time, waiting coloured by its reason."""
    styles = {key: (label, color, pattern) for key, label, color, pattern in WAIT_REASONS}
    traces = []
    for segment in timeline["segments"]:
        if segment["state"] == "running":
            label, color, pattern = f"running: {segment['words']}", "#59a14f", ""
        else:
            label, color, pattern = styles[segment["reason"]]
            label = f"waiting: {label}"
        trace = bar(
            [segment["seconds"] / HOUR], [timeline["job_id"]], name=label, color=color, unit="hours",
            pattern=pattern, orientation="h",
        )  # fmt: skip
        trace["base"] = [(segment["start"] - timeline["submit_time"]) / HOUR]
        traces.append(trace)
    return legend_right(
        figure(
            traces,
            title=f"Timeline of job {timeline['job_id']}",
            x_title="hours since it was submitted",
            y_title="",
            barmode="overlay",
            height=260,
        )
    )


# -- finance ---------------------------------------------------------------------------------


def finance_figure(report: FinanceReport, unit: str = "usd") -> dict[str, Any]:
    """What each share is charged per period, stacked, with the pool's capacity as a line."""
    values = "usd" if unit == "usd" else "hours"
    unit_label = "$" if unit == "usd" else "GPU-hours"
    x = [p.period.label for p in report.periods]
    colors = share_colors(report.share_names)
    traces = []
    for name in report.line_names:
        y = [
            getattr(p.shares.get(name), values)["charge"] if name in p.shares else 0.0 for p in report.periods
        ]
        if name == UNASSIGNED:
            continue  # unassigned capacity is charged through the idle line or the shares
        color = UNASSIGNED_COLOR if name == IDLE_LINE else colors[name]
        pattern = state_pattern("idle") if name == IDLE_LINE else ""
        label = "idle capacity (not charged)" if name == IDLE_LINE else name
        traces.append(bar(x, y, name=label, color=color, unit=unit_label, pattern=pattern))
    capacity = [getattr(p.total, values)["capacity"] for p in report.periods]
    cap = line(
        x,
        capacity,
        name="pool capacity",
        color=CAPACITY_COLOR,
        unit=unit_label,
        dash="dash",
        marker="line-ew",
    )
    cap["mode"] = "markers"
    cap["marker"] = {"symbol": "line-ew-open", "size": 28, "line": {"width": 2, "color": CAPACITY_COLOR}}
    traces.append(cap)
    return figure(
        traces,
        title=(
            f"Pool cost by share and {report.period_kind}, "
            f"idle {IDLE_MODE_LABELS[report.idle_mode]} ({unit_label})"
        ),
        x_title=report.period_kind,
        y_title=unit_label,
        barmode="stack",
        height=360,
    )
