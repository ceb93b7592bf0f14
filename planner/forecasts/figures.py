"""The forecast page's chart: each job of the table's page as its p10-p90 band of start times with
its p50, on one time axis (hours after the snapshot). It reads the stored quantiles only."""

from __future__ import annotations

from typing import Any

from planner.web.charts import figure, share_colors

HOUR = 3600.0


def _plain(text: str) -> str:
    """A job id or share name as text, not as Plotly's pseudo-HTML (its labels read <b>, <a href>...):
    what a snapshot names is shown as written, never as markup."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _hours(value: float | None, t0: float) -> float | None:
    return None if value is None else round((value - t0) / HOUR, 3)


def band_figure(jobs: list, t0: float, shares: list[str]) -> dict[str, Any]:
    """One band trace and one p50 trace per share (colour of the share, legend naming it), jobs on
    the y axis in the table's order. A running job's band is its end; a job no sample started
    before the horizon has no band (the table says so)."""
    colors = share_colors(shares or [job.share for job in jobs])
    traces = []
    order = [_plain(job.job_id) for job in jobs]
    for share in dict.fromkeys(job.share for job in jobs):
        mine = [job for job in jobs if job.share == share]
        band_x: list = []
        band_y: list = []
        mid_x, mid_y, text = [], [], []
        for job in mine:
            running = job.state == "RUNNING"
            low, mid, high = (job.end_p10, job.end_p50, job.end_p90) if running else (
                job.start_p10, job.start_p50, job.start_p90)  # fmt: skip
            if low is not None and high is not None:
                band_x += [_hours(low, t0), _hours(high, t0), None]
                band_y += [_plain(job.job_id), _plain(job.job_id), None]
            if mid is not None:
                mid_x.append(_hours(mid, t0))
                mid_y.append(_plain(job.job_id))
                text.append(f"{_plain(job.job_id)} ({_plain(share)}): {'ends' if running else 'starts'} in "
                            f"{_hours(mid, t0):,.1f} h (p50)")  # fmt: skip
        color = colors.get(share, "#555")
        traces.append({
            "type": "scatter", "mode": "lines", "name": f"{_plain(share)}: p10-p90", "x": band_x, "y": band_y,
            "line": {"color": color, "width": 6}, "opacity": 0.45, "hoverinfo": "skip", "legendgroup": share,
        })  # fmt: skip
        traces.append({
            "type": "scatter", "mode": "markers", "name": f"{_plain(share)}: p50", "x": mid_x, "y": mid_y,
            "marker": {"color": color, "size": 9, "symbol": "line-ns-open",
                       "line": {"width": 2, "color": color}},
            "text": text, "hovertemplate": "%{text}<extra></extra>", "legendgroup": share,
        })  # fmt: skip
    return figure(
        traces,
        title="When each job on this page starts (running jobs: when they end)",
        x_title="hours after the snapshot (p10-p90 band, p50 mark)",
        y_title="job",
        height=max(260, 120 + 18 * len(order)),
        extra_layout={"yaxis": {"type": "category", "autorange": "reversed", "categoryorder": "array",
                                "categoryarray": order, "automargin": True, "title": {"text": "job"}}},
    )  # fmt: skip
