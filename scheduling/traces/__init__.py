"""Trace readers: every supported format turned into one columnar Trace.

``FORMATS`` maps a format name to its reader, ``reader(source, *, max_rows=None, **options)``;
``read_trace`` picks one (``"auto"``: planner CSV or JSON by file name or first bytes).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces import aws_batch_jobs, helios, itp, kueue_workloads, openb, pai, sacct
from scheduling.traces.fields import TraceInput, TraceSource, open_source
from scheduling.traces.planner import read_planner_csv, read_planner_json

TraceReader = Callable[..., Trace]

FORMATS: dict[str, TraceReader] = {
    "planner-csv": read_planner_csv,
    "planner-json": read_planner_json,
    "slurm-sacct": sacct.read,
    "itp-2021": itp.read,
    "alibaba-openb-2023": openb.read,
    "helios": helios.read,
    "philly": helios.read_philly,
    "alibaba-pai-2020": pai.read,
    "aws-batch-jobs": aws_batch_jobs.read,
    "kueue-workloads": kueue_workloads.read,
}


def detect_format(source: TraceSource) -> str:
    """``planner-json`` or ``planner-csv``: by the file name's extension (``.gz`` looked
    through), else JSON when the first non-blank character opens an object or a list."""
    name = source.name.lower()
    name = name.removesuffix(".gz")
    if name.endswith(".json"):
        return "planner-json"
    if name.endswith(".csv"):
        return "planner-csv"
    return "planner-json" if source.head().lstrip()[:1] in ("{", "[") else "planner-csv"


def read_trace(source: TraceInput | TraceSource, format: str = "auto", **options: Any) -> Trace:
    """Read a trace in any registered format (gzip-compressed or not); raises InputError."""
    if format != "auto" and format not in FORMATS:
        allowed = ", ".join(["auto", *FORMATS])
        raise InputError(f"unknown trace format {format!r}: the formats are {allowed}", field="format")
    with open_source(source) as opened:
        chosen = detect_format(opened) if format == "auto" else format
        return FORMATS[chosen](opened, **options)


__all__ = ["FORMATS", "TraceReader", "TraceSource", "detect_format", "open_source", "read_trace"]
