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
# Points of a CDF as drawn: the engine keeps up to 1,000 exact ones; a chart line needs fewer,
# and every point is bytes of the page.
CDF_DRAWN_POINTS = 160
OTHER_SHARES = "other shares"
OTHER_COLOR = "#b0b0b0"


def thin(x: Sequence[float], y: Sequence[float], points: int = CDF_DRAWN_POINTS) -> tuple[list, list]:
    """At most ``points`` points of a step curve, evenly spread over its index, always keeping
    the first and the last."""
    n = len(x)
    if n <= points:
        return list(x), list(y)
    picks = sorted({round(i * (n - 1) / (points - 1)) for i in range(points)})
    return [x[i] for i in picks], [y[i] for i in picks]


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


def legend_below(fig: dict[str, Any], *, shown: bool = True) -> dict[str, Any]:
    """A legend under the plot (taller figure), or none: charts drawn side by side with the same
    colours share the first one's legend."""
    layout = fig["layout"]
    layout["margin"]["t"] = 44
    if not shown:
        layout["showlegend"] = False
        return fig
    entries = sum(1 for trace in fig["data"] if trace.get("showlegend", True))
    rows = -(-entries // 3)
    layout["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.18, "yanchor": "top",
                        "font": {"size": 11}, "tracegroupgap": 2}  # fmt: skip
    layout["height"] = layout.get("height", 360) + 20 * rows
    layout["margin"]["b"] = 56 + 20 * rows
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


def usage_figures(
    runs: Sequence[RunColumn], view: str = "", shares: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """Usage over time, one figure per policy on a common y range.

    ``view`` empty: the pool, each share's own use and borrowed GPUs, then each share's idle
    quota and the unassigned idle capacity, stacked up to the pool's capacity (lent GPUs are
    the borrowed ones seen from the lender); shares not in ``shares`` are summed as one
    "other shares" group, so the legend stays short. ``view`` a share name: that share's own
    use, lent and idle quota stacked up to its quota, its borrowed GPUs on top."""
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
            traces, ceiling, title = _pool_usage(
                _grouped(series, shares), x, {**colors, OTHER_SHARES: OTHER_COLOR}, steps, step_x
            )
        stack = [0.0] * len(x)
        for trace in traces:
            if trace.get("stackgroup"):
                stack = [a + b for a, b in zip(stack, trace["y"], strict=False)]
        top = max(top, ceiling, max(stack, default=0.0))
        figures.append(
            legend_below(
                figure(
                    traces,
                    title=f"{title} under {run.name}",
                    x_title=x_title,
                    y_title="GPUs (average)",
                    height=360,
                ),
                shown=not figures,  # a share's colour is the same on every chart: one legend
            )
        )
    for fig in figures:
        fig["layout"]["yaxis"]["range"] = [0, top * 1.05 if top > 0 else 1]
    return figures


def _rounded(values: Sequence[float]) -> list[float]:
    """Average GPUs to the hundredth: finer is invisible on a chart and costs page bytes."""
    return [round(v, 2) for v in values]


def _grouped(series: dict[str, Any], shares: Sequence[str] | None) -> dict[str, Any]:
    """The series with every share outside ``shares`` summed into one OTHER_SHARES row."""
    rows = series.get("shares", {})
    if shares is None or set(rows) <= set(shares):
        return series
    kept = {name: row for name, row in rows.items() if name in shares}
    others = [row for name, row in rows.items() if name not in shares]
    merged: dict[str, Any] = {}
    for key in ("own", "borrowed", "lent", "idle", "stranded"):
        columns = [row.get(key, []) for row in others]
        merged[key] = [round(sum(values), 4) for values in zip(*columns, strict=False)]
    merged["quota"] = sum(float(row.get("quota", 0.0)) for row in others)
    return {**series, "shares": {**kept, OTHER_SHARES: merged}}


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
                _rounded(row.get(state, [])),
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
            _rounded(unassigned["idle"]),
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


def cdf_figures(
    runs: Sequence[RunColumn], kind: str = "wait", shares: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """One figure per share (``shares``, default every one), then all jobs: the CDF of wait (or
    JCT) with one line per policy, x in hours on a log axis, y 0-100 %, hover with job counts."""
    noun = "Wait time" if kind == "wait" else "Job completion time"
    colors = colors_of(runs)
    figures = []
    for name in [*(share_names(runs) if shares is None else shares), ""]:
        traces = []
        for run in runs:
            cdfs = run.metrics.get("cdfs", {}).get(kind, {})
            curve = cdfs.get("shares", {}).get(name) if name else cdfs.get("all")
            if not curve or not curve.get("x"):
                continue
            n = int(curve.get("n", 0))
            xs, ys = thin(curve["x"], curve["y"])
            x = [float(f"{max(value, CDF_FLOOR_SECONDS) / HOUR:.4g}") for value in xs]
            y = [round(100 * value, 2) for value in ys]
            jobs = [round(value * n) for value in ys]
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


def percentile_figure(
    runs: Sequence[RunColumn], kind: str = "wait", shares: Sequence[str] | None = None
) -> dict[str, Any]:
    """p50 / p95 / p99 of wait (or JCT) per share, one bar series per policy, bars lying down:
    the labels ("share · p95") stay level and legible whatever their number."""
    names = list(share_names(runs) if shares is None else shares)
    colors = colors_of(runs)
    key = f"{kind}_seconds"
    categories = [f"{name} · {pct}" for name in names for pct in ("p50", "p95", "p99")]
    traces = []
    for run in runs:
        by_name = {s["name"]: s for s in run.metrics.get("shares", [])}
        x, bar_colors = [], []
        for name in names:
            block = by_name.get(name, {}).get(key) or {}
            for pct in ("p50", "p95", "p99"):
                value = block.get(pct)
                x.append(None if value is None else float(f"{value / HOUR:.4g}"))
                bar_colors.append(colors[name])
        trace = bar(
            x,
            categories,
            name=run.name,
            color=bar_colors[0] if bar_colors else CAPACITY_COLOR,
            unit="h",
            pattern=policy_pattern(run.index) or " ",
            orientation="h",
        )
        trace["marker"]["color"] = bar_colors
        trace["hovertemplate"] = f"{run.name}<br>%{{y}}: %{{x:,.3~r}} h<extra></extra>"
        traces.append(trace)
    noun = "Wait time" if kind == "wait" else "Job completion time"
    fig = figure(
        traces,
        title=f"{noun} percentiles by share (bars: policies)",
        x_title="hours",
        y_title="",
        barmode="group",
        height=max(260, 90 + len(categories) * (10 + 7 * len(runs))),
    )
    fig["layout"]["yaxis"]["autorange"] = "reversed"  # the first share on top
    fig["layout"]["yaxis"].pop("rangemode", None)
    fig["layout"]["yaxis"].pop("tickformat", None)
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


def wait_reason_figure(runs: Sequence[RunColumn], shares: Sequence[str] | None = None) -> dict[str, Any]:
    """Per share and policy, how its queued time splits by the reason the scheduler found: each
    bar is 100 % of that share's job-hours waited (written on the label), so a share that waited
    little is as readable as one that waited much."""
    categories, totals = [], []
    per_reason: dict[str, list[float]] = {key: [] for key, *_ in WAIT_REASONS}
    for name in share_names(runs) if shares is None else shares:
        for run in runs:
            share = next((s for s in run.metrics.get("shares", []) if s["name"] == name), None)
            if share is None or "waited_by_reason_seconds" not in share:
                continue
            waited = share["waited_by_reason_seconds"]
            total = sum(waited.get(key, 0.0) for key in per_reason)
            categories.append(f"{name} · {run.name} ({total / HOUR:,.0f} job-h)")
            totals.append(total)
            for key in per_reason:
                per_reason[key].append(round(100 * waited.get(key, 0.0) / total, 2) if total > 0 else 0.0)
    traces = [
        bar(per_reason[key], categories, name=label, color=color, unit="% of the time waited",
            pattern=pattern, orientation="h")
        for key, label, color, pattern in WAIT_REASONS
        if any(per_reason[key])
    ]  # fmt: skip
    fig = figure(
        traces,
        title="Why jobs waited: each share's queued time by reason, per policy",
        x_title="% of the share's job-hours waited",
        y_title="",
        barmode="stack",
        height=max(260, 110 + 22 * len(categories)),
    )
    fig["layout"]["xaxis"]["range"] = [0, 100]
    fig["layout"]["yaxis"]["autorange"] = "reversed"
    fig["layout"]["yaxis"].pop("rangemode", None)
    fig["layout"]["yaxis"].pop("tickformat", None)
    return fig


def segment_labels(segments: Sequence[dict[str, Any]]) -> list[str]:
    """'wait 1: pool full, ...', 'run 1: succeeded': numbered per state, one label per segment."""
    styles = {key: label for key, label, _, _ in WAIT_REASONS}
    counts = {"waiting": 0, "running": 0}
    labels = []
    for segment in segments:
        counts[segment["state"]] += 1
        if segment["state"] == "running":
            labels.append(f"run {counts['running']}: {segment['words']}")
        else:
            labels.append(f"wait {counts['waiting']}: {styles.get(segment['reason'], segment['reason'])}")
    return labels


def job_timeline_figure(timeline: dict[str, Any]) -> dict[str, Any]:
    """One job's timeline: a bar per segment along time, waiting coloured by its reason. Each
    segment has its own legend label, numbered as in the table under it ("wait 2: ..."), so two
    waits for one reason are two entries a reader can tell apart, not one name twice."""
    styles = {key: (label, color, pattern) for key, label, color, pattern in WAIT_REASONS}
    traces = []
    for segment, label in zip(timeline["segments"], segment_labels(timeline["segments"]), strict=True):
        if segment["state"] == "running":
            color, pattern = "#59a14f", ""
        else:
            _, color, pattern = styles[segment["reason"]]
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


def finance_figure(report: FinanceReport, unit: str = "usd", policy: str = "") -> dict[str, Any]:
    """What each share is charged per period, stacked, with the pool's capacity as a line; the
    title names the policy (two are drawn side by side in a comparison)."""
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
            f"{'Under ' + policy + ': p' if policy else 'P'}ool cost by share and {report.period_kind}, "
            f"idle {IDLE_MODE_LABELS[report.idle_mode]} ({unit_label})"
        ),
        x_title=report.period_kind,
        y_title=unit_label,
        barmode="stack",
        height=360,
    )
