"""Importer for Slurm accounting records (``sacct --parsable2``, with or without ``--noheader``):
job steps, array elements and heterogeneous components folded into the jobs a quota plan is about,
GPUs from the TRES strings, local timestamps made absolute with a time zone.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator
from dataclasses import replace
from typing import Any
from zoneinfo import ZoneInfo

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces.mapping import (
    SKIP_ZERO_DURATION,  # started and ended in the same second
    CsvTable,
    PriorityMode,
    TraceImport,
    TraceMapping,
    parse_local_time,
    resolve_mapping,
    text_stream,
    zone_named,
)

FORMAT = "slurm-sacct"
DEFAULT_COLUMNS = (
    "JobID|Account|Partition|QOS|Priority|User|Submit|Start|End|Elapsed|AllocTRES|ReqTRES|State|JobName"
)
# sacct's own spellings: headers are matched to these without regard to case.
KNOWN_FIELDS = (
    "JobID",
    "JobIDRaw",
    "JobName",
    "Account",
    "Partition",
    "QOS",
    "Priority",
    "User",
    "Group",
    "State",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "Elapsed",
    "ElapsedRaw",
    "AllocTRES",
    "ReqTRES",
    "AllocGRES",
    "ReqGRES",
    "NNodes",
    "NCPUS",
    "AllocCPUS",
    "ReqCPUS",
    "Timelimit",
    "ExitCode",
    "Cluster",
    "WCKey",
    "Reservation",
    "NodeList",
    "UID",
    "GID",
)
_CANONICAL = {name.lower(): name for name in KNOWN_FIELDS}

# Priority keeps Slurm's order on the planner's 0..9999 scale (rank mode, see mapping.rank_priorities).
DEFAULT_MAPPING = TraceMapping(
    share_column="Account",
    priority_column="Priority",
    priority_mode=PriorityMode.RANK,
    user_column="User",
    name_column="JobName",
)

# Jobs left out (choice), counted in stats["skipped"]:
SKIP_NEVER_STARTED = "never_started"  # PENDING, or cancelled before it started: no work to replay
SKIP_NOT_FINISHED = "not_finished"  # still running when sacct ran: its length is unknown
SKIP_NO_GPU = "no_gpu"  # no GPU in AllocTRES/ReqTRES: it does not use the GPU pool

_ABSENT = {"", "unknown", "none", "n/a", "invalid"}
_JOB_ID = re.compile(r"^(?P<job>\d+(?:_(?:\d+|\[[^\]]*\]))?(?:\+\d+)?)(?:\.(?P<step>.+))?$")
_RANGE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+))?)?$")
_GPU_TRES = re.compile(r"^gres/gpu(?::(?P<model>[^=]+))?$")
MAX_ARRAY_EXPANSION = 100_000


class _Job:
    """One Slurm job while its rows are folded together."""

    __slots__ = (
        "cells",
        "components",
        "elapsed",
        "end",
        "gpus",
        "has_job_row",
        "key",
        "model",
        "row",
        "start",
        "state",
        "step_end",
        "step_gpus",
        "step_model",
        "step_row",
        "step_start",
        "step_submit",
        "submit",
    )

    def __init__(self, key: str):
        self.key = key
        self.row = 0
        self.has_job_row = False
        self.cells: dict[str, str] = {}
        self.state = ""
        self.submit: float | None = None
        self.start: float | None = None
        self.end: float | None = None
        self.elapsed: float | None = None
        self.gpus = 0
        self.model: str | None = None
        self.step_submit: float | None = None
        self.step_start: float | None = None
        self.step_end: float | None = None
        self.step_gpus = 0
        self.step_model: str | None = None
        self.step_row = 0
        self.components = 0


def source_columns(
    source: Any, *, header: bool | None = None, columns: Any = None, **options: Any
) -> list[str]:
    with text_stream(source) as stream:
        return _open_table(stream, header, columns).columns


def read(
    source: Any,
    *,
    mapping: TraceMapping | dict | None = None,
    timezone: str = "UTC",
    header: bool | None = None,
    columns: str | list[str] | None = None,
    stats: dict | None = None,
    max_rows: int | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
) -> Trace | None:
    """Jobs from ``sacct --parsable2`` output.

    ``header``: ``None`` detects it (a first line starting with ``JobID``); without one the fields
    are ``columns`` (the ``--format`` list, ``|``- or ``,``-separated; default DEFAULT_COLUMNS).
    ``timezone``: the zone sacct printed its local times in (an IANA name, default UTC).
    Duration is ``Elapsed`` (or ``ElapsedRaw``), else End - Start; the recorded start is ``Start``.
    Steps (``123.batch``, ``123.0``) fold into job ``123``; array elements (``123_4``) are jobs of
    their own and pending ranges (``123_[1-3]``) are expanded (then skipped: they never started);
    heterogeneous components (``123+0``, ``123+1``) fold into one job ``123`` holding all their GPUs
    from the earliest start to the latest end. A job listed again (``sacct --duplicates``: requeued)
    keeps its first submit time and its last attempt.
    """
    zone = zone_named(timezone)
    with text_stream(source) as stream:
        table = _open_table(stream, header, columns)
        chosen = _mapping_for(mapping, table)
        run = TraceImport(
            FORMAT, chosen, max_rows=max_rows, stats=stats, field_names=_field_names(table, chosen)
        )
        table.require("JobID", "Submit", "Start")
        if not (table.has("Elapsed") or table.has("ElapsedRaw") or table.has("End")):
            raise InputError(
                "the column is missing: durations come from Elapsed, ElapsedRaw or End", field="Elapsed"
            )
        gpu_columns = [c for c in ("AllocTRES", "ReqTRES", "AllocGRES", "ReqGRES") if table.has(c)]
        if not gpu_columns:
            raise InputError(
                "the column is missing: GPUs are read from AllocTRES or ReqTRES", field="AllocTRES"
            )
        chosen.check_columns(table.columns)
        kept = {
            c
            for c in (chosen.share_column, chosen.priority_column, chosen.user_column, chosen.name_column)
            if c
        }
        jobs: dict[str, _Job] = {}
        for row, cells in table.rows(source_rows):
            _fold_row(run, table, jobs, row, cells, zone, gpu_columns, kept)
        run.source_rows = table.data_row
    for job in jobs.values():
        _add_job(run, chosen, job)
    return run.finish(epoch_times=True, allow_empty=allow_empty)


# -- reading rows -----------------------------------------------------------------------------


def _open_table(lines: Iterator[str], header: bool | None, columns: Any) -> CsvTable:
    if header is None:
        first = next(lines, "")
        header = first.split("|", 1)[0].strip().lower() in ("jobid", "jobidraw")
        lines = itertools.chain([first], lines)
    if header:
        table = CsvTable(lines, delimiter="|")
    else:
        table = CsvTable(lines, fieldnames=_column_list(columns), delimiter="|")
    if table.columns and table.columns[-1] == "":  # --parsable ends every line with a '|'
        table.columns.pop()
    table.columns = [_CANONICAL.get(name.lower(), name) for name in table.columns]
    table.index = {name: i for i, name in enumerate(table.columns) if name}
    return table


def _column_list(columns: Any) -> list[str]:
    if columns is None:
        columns = DEFAULT_COLUMNS
    if isinstance(columns, str):
        names = [c.strip() for c in re.split(r"[|,]", columns)]
    elif isinstance(columns, (list, tuple)):
        names = [str(c).strip() for c in columns]
    else:
        raise InputError(f"{columns!r} is not a list of sacct fields", field="columns")
    # a --format width suffix (JobName%30) is not part of the name
    names = [name.split("%", 1)[0] for name in names]
    if not names or not all(names):
        raise InputError(f"{columns!r} has an empty field name", field="columns")
    return names


def _mapping_for(mapping: TraceMapping | dict | None, table: CsvTable) -> TraceMapping:
    """The format's default adapts to what this sacct output has; anything the caller set is kept."""
    given = mapping if isinstance(mapping, dict) else {}
    chosen = resolve_mapping(mapping, DEFAULT_MAPPING)
    if isinstance(mapping, TraceMapping):
        return chosen
    if "share_column" not in given and not table.has(chosen.share_column or ""):
        fallback = table.first_present("Account", "Partition", "QOS", "User")
        if fallback is None:
            raise InputError(
                "no column to take shares from (Account, Partition, QOS or User)", field="Account"
            )
        chosen = replace(chosen, share_column=fallback)
    if "priority_column" not in given and not table.has(chosen.priority_column or ""):
        chosen = replace(chosen, priority_column=None, priority_mode=PriorityMode.NONE)
    for key in ("user_column", "name_column"):
        if key not in given and not table.has(getattr(chosen, key) or ""):
            chosen = replace(chosen, **{key: None})
    return chosen


def _field_names(table: CsvTable, mapping: TraceMapping) -> dict[str, str]:
    names = {
        "job_id": "JobID",
        "submit_time": "Submit",
        "recorded_start": "Start",
        "instance_count": "AllocTRES",
    }
    names["duration"] = "Elapsed" if table.has("Elapsed") else "End"
    names.update(mapping.field_columns("share", "priority", "user", "name"))
    return names


def _fold_row(
    run: TraceImport,
    table: CsvTable,
    jobs: dict[str, _Job],
    row: int,
    cells: list[str],
    zone: ZoneInfo,
    gpu_columns: list[str],
    kept: set[str],
) -> None:
    at = table.index
    raw_id = cells[at["JobID"]].strip()
    match = _JOB_ID.match(raw_id)
    if match is None:
        raise InputError(
            f"{raw_id!r} is not a Slurm job id (123, 123_4, 123_[1-3], 123+0, 123.batch)",
            row=row,
            field="JobID",
        )
    job_part, step = match.group("job"), match.group("step")
    component = "+" in job_part
    base = job_part.split("+", 1)[0]
    submit = parse_local_time(cells[at["Submit"]], row, "Submit", zone)
    start = parse_local_time(cells[at["Start"]], row, "Start", zone)
    end = parse_local_time(cells[at["End"]], row, "End", zone) if "End" in at else None
    gpus, model = _gpus(cells, at, gpu_columns, row)

    if step is not None:
        for key in _keys(base, row):
            job = jobs.get(key)
            if job is None:
                job = jobs[key] = _Job(key)
                job.step_row = row
            job.step_submit = _earliest(job.step_submit, submit)
            job.step_start = _earliest(job.step_start, start)
            job.step_end = _latest(job.step_end, end)
            if gpus > job.step_gpus:
                job.step_gpus, job.step_model = gpus, model
            run.note("steps_folded")
        return

    elapsed = _elapsed(cells, at, row)
    state = cells[at["State"]].strip().split(" ", 1)[0].upper() if "State" in at else ""
    keys = _keys(base, row)
    if len(keys) > 1:
        run.note("array_ranges_expanded")
    for key in keys:
        job = jobs.get(key)
        if job is None:
            job = jobs[key] = _Job(key)
        if job.has_job_row and component:
            # another component of a heterogeneous job: it adds its GPUs and its time span
            job.components += 1
            run.note("heterogeneous_components_folded")
            job.submit = _earliest(job.submit, submit)
            job.start = _earliest(job.start, start)
            job.end = _latest(job.end, end)
            job.elapsed = None
            job.gpus += gpus
            job.model = job.model or model
            if start is not None and state:
                job.state = state
            continue
        if job.has_job_row and job.start is not None:
            run.note("requeued_attempts_folded")
            first_submit = job.submit
        else:
            first_submit = submit
        job.row = row
        job.has_job_row = True
        job.components = 1
        job.cells = {name: cells[at[name]] for name in kept}
        job.state = state
        job.submit = _earliest(first_submit, submit)
        job.start, job.end, job.elapsed = start, end, elapsed
        job.gpus, job.model = gpus, model


def _keys(base: str, row: int) -> list[str]:
    """The job ids a JobID names: itself, or each element of a pending array range."""
    if "[" not in base:
        return [base]
    array_id, _, spec = base.partition("_[")
    spec = spec.rstrip("]").split("%", 1)[0]
    keys = []
    for part in spec.split(","):
        match = _RANGE.match(part.strip())
        if match is None:
            raise InputError(
                f"{part!r} is not an array index range (like 1-3 or 1-9:2)", row=row, field="JobID"
            )
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) else first
        stride = int(match.group(3)) if match.group(3) else 1
        if last < first or stride < 1:
            raise InputError(f"{part!r} is an empty array range", row=row, field="JobID")
        if len(keys) + (last - first) // stride + 1 > MAX_ARRAY_EXPANSION:
            raise InputError(
                f"the array range expands to more than {MAX_ARRAY_EXPANSION} jobs", row=row, field="JobID"
            )
        keys.extend(f"{array_id}_{index}" for index in range(first, last + 1, stride))
    return keys


def _elapsed(cells: list[str], at: dict[str, int], row: int) -> float | None:
    if "Elapsed" in at:
        text = cells[at["Elapsed"]].strip()
        if text.lower() not in _ABSENT:
            return parse_slurm_duration(text, row, "Elapsed")
    if "ElapsedRaw" in at:
        text = cells[at["ElapsedRaw"]].strip()
        if text.lower() not in _ABSENT:
            try:
                seconds = float(text)
            except ValueError:
                raise InputError(
                    f"{text!r} is not a number of seconds", row=row, field="ElapsedRaw"
                ) from None
            if not math.isfinite(seconds) or seconds < 0:
                raise InputError(f"{text!r} is not a duration", row=row, field="ElapsedRaw")
            return seconds
    return None


def parse_slurm_duration(text: str, row: int | None = None, field: str = "Elapsed") -> float:
    """Slurm's ``[DD-][HH:]MM:SS[.mmm]`` as seconds."""
    days = 0
    clock = text
    if "-" in text:
        day_text, _, clock = text.partition("-")
        if not day_text.isdigit():
            raise InputError(f"{text!r} is not a Slurm duration ([DD-]HH:MM:SS)", row=row, field=field)
        days = int(day_text)
    parts = clock.split(":")
    try:
        numbers = [float(p) for p in parts]
    except ValueError:
        numbers = []
    if not 2 <= len(parts) <= 3 or len(numbers) != len(parts) or any(n < 0 for n in numbers):
        raise InputError(f"{text!r} is not a Slurm duration ([DD-]HH:MM:SS)", row=row, field=field)
    if len(numbers) == 2:
        numbers.insert(0, 0.0)
    hours, minutes, seconds = numbers
    return days * 86400 + hours * 3600 + minutes * 60 + seconds


def _gpus(cells: list[str], at: dict[str, int], gpu_columns: list[str], row: int) -> tuple[int, str | None]:
    """GPUs and GPU model from the first of AllocTRES, ReqTRES, AllocGRES, ReqGRES that names any."""
    for column in gpu_columns:
        text = cells[at[column]].strip()
        if not text:
            continue
        found = _tres_gpus(text, row, column) if column.endswith("TRES") else _gres_gpus(text, row, column)
        if found[0] > 0:
            return found
    return 0, None


def _tres_gpus(text: str, row: int, column: str) -> tuple[int, str | None]:
    total: int | None = None
    typed: dict[str, int] = {}
    for entry in text.split(","):
        name, _, value = entry.strip().partition("=")
        match = _GPU_TRES.match(name.strip())
        if match is None:
            continue
        count = _count(value, row, column, name)
        if match.group("model"):
            typed[match.group("model")] = typed.get(match.group("model"), 0) + count
        else:
            total = count
    if total is None:
        total = sum(typed.values())
    model = max(typed, key=lambda m: typed[m]) if typed else None
    return total, model


def _gres_gpus(text: str, row: int, column: str) -> tuple[int, str | None]:
    """Older sacct GRES strings: ``gpu:4``, ``gpu:a100:4``, ``gpu:a100:4(IDX:0-3)``."""
    total = 0
    model = None
    for entry in re.split(r",(?![^(]*\))", text):
        parts = entry.split("(", 1)[0].strip().split(":")
        if not parts or parts[0] != "gpu":
            continue
        if len(parts) == 2:
            total += _count(parts[1], row, column, entry)
        elif len(parts) >= 3:
            total += _count(parts[-1], row, column, entry)
            model = model or parts[1]
    return total, model


def _count(value: str, row: int, column: str, entry: str) -> int:
    value = value.strip()
    if not value.isdigit():
        raise InputError(f"{entry.strip()!r}: {value!r} is not a whole number of GPUs", row=row, field=column)
    return int(value)


def _earliest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def _latest(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else max(a, b)


# -- one folded job -> one planner job ----------------------------------------------------------


def _add_job(run: TraceImport, mapping: TraceMapping, job: _Job) -> None:
    if job.has_job_row:
        row, submit, start, end, gpus, model = job.row, job.submit, job.start, job.end, job.gpus, job.model
        if gpus == 0:
            gpus, model = job.step_gpus, job.step_model
    else:  # only steps were listed
        row, submit, start, end = job.step_row, job.step_submit, job.step_start, job.step_end
        gpus, model = job.step_gpus, job.step_model
    if job.state == "PENDING" or start is None:
        run.skip(SKIP_NEVER_STARTED)
        return
    if job.components > 1:
        duration = None if end is None else end - start
    else:
        duration = job.elapsed if job.elapsed is not None else (None if end is None else end - start)
    if job.state in ("RUNNING", "REQUEUED", "SUSPENDED", "RESIZING") or duration is None:
        run.skip(SKIP_NOT_FINISHED)
        return
    if duration < 0:
        raise InputError(f"the job ends {-duration:g} s before it starts", row=row, field="End")
    if gpus == 0:
        run.skip(SKIP_NO_GPU)
        return
    if duration == 0:
        run.skip(SKIP_ZERO_DURATION)
        return
    if submit is None:
        raise InputError("is unknown for a job that started", row=row, field="Submit")
    cells = job.cells
    share_column = mapping.share_column
    run.add(
        row,
        job_id=job.key,
        submit_time=submit,
        share=mapping.share_of(cells.get(share_column) if share_column else None, row, share_column or ""),
        duration=duration,
        priority=run.priority.value(cells.get(mapping.priority_column), row)
        if mapping.priority_column
        else 0,
        instance_type=mapping.instance_type_of(model),
        instance_count=mapping.instances_for(gpus),
        user=cells.get(mapping.user_column) if mapping.user_column else None,
        name=cells.get(mapping.name_column) if mapping.name_column else None,
        recorded_start=start,
    )
