"""The common window of compared runs, in words for the pages: from when to when every figure is
counted, and which policies end their last job before it (and are idle after)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from planner.reports.comparison import RunColumn
from scheduling.window import measured_over, span_of

DAY = 86400.0
HOUR = 3600.0


def moment(seconds: float, *, epoch_times: bool, scale: float | None = None) -> str:
    """An instant of the trace: a UTC date and time, or the time from the trace's time 0 in
    seconds, hours or days, whichever reads best for ``scale`` (default: the instant itself), so
    that a window's start and end come in one unit."""
    if epoch_times:
        return datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    size = abs(seconds if scale is None else scale)
    if size < HOUR:
        return f"{seconds:,.0f} s"
    if size < 2 * DAY:
        return f"{seconds / HOUR:,.1f} h"
    return f"day {seconds / DAY:,.1f}"


def duration(seconds: float) -> str:
    """A length in the unit that reads best: minutes, hours or days."""
    if seconds < HOUR:
        return f"{seconds / 60:,.0f} min"
    if seconds < 2 * DAY:
        return f"{seconds / HOUR:,.1f} h"
    return f"{seconds / DAY:,.1f} days"


@dataclass(frozen=True)
class WindowNote:
    start: str
    end: str
    length: str
    common: bool  # every run is measured over the same window
    earlier: list[tuple[str, str]]  # (policy, when its last job ended) for policies idle at the end


def window_note(runs: Sequence[RunColumn]) -> WindowNote | None:
    """The window the runs are measured over (the first run's, when they differ: a study whose
    runs have not all been put on one window yet)."""
    if not runs:
        return None
    epoch = bool(runs[0].metrics["summary"].get("epoch_times"))
    windows = [measured_over(run.metrics) for run in runs]
    start, end = windows[0]
    earlier = []
    for run in runs:
        span_end = span_of(run.metrics)[1]
        if span_end < end - 1e-6:
            earlier.append((run.name, moment(span_end, epoch_times=epoch, scale=end)))
    return WindowNote(
        start=moment(start, epoch_times=epoch, scale=end),
        end=moment(end, epoch_times=epoch),
        length=duration(end - start),
        common=len(set(windows)) == 1,
        earlier=earlier,
    )
