"""Importer for the Alibaba PAI 2020 GPU trace (``cluster-trace-gpu-v2020``): the task table gives
each job's GPUs and run time, the job table (optional) its user and submission time. The published
tables have no header line; their column order comes from the ``.header`` files.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces.fields import is_absent, parse_seconds, parse_text
from scheduling.traces.mapping import (
    SKIP_ZERO_DURATION,  # started and ended in the same second
    CsvTable,
    TraceImport,
    TraceMapping,
    resolve_mapping,
    text_stream,
)

FORMAT = "alibaba-pai-2020"
# pai_task_table.header and pai_job_table.header (alibaba/clusterdata, cluster-trace-gpu-v2020/data)
TASK_COLUMNS = (
    "job_name",
    "task_name",
    "inst_num",
    "status",
    "start_time",
    "end_time",
    "plan_cpu",
    "plan_mem",
    "plan_gpu",
    "gpu_type",
)
JOB_COLUMNS = ("job_name", "inst_id", "user", "status", "start_time", "end_time")
# Columns a mapping may name: the job table's (user, inst_id, job_name) and the task table's gpu_type
# (a job's is that of its task with the most GPUs).
MAPPABLE_COLUMNS = ("job_name", "inst_id", "user", "gpu_type")
SINGLE_SHARE = "pai"

# The share is the user (choice): the trace names no team or quota group, and the user is the only
# tenant it has. Without a job table there is no user, so every job goes to one share "pai" unless
# the mapping says otherwise.
DEFAULT_MAPPING = TraceMapping(share_column="user", user_column="user")

# Jobs left out (choice), counted in stats["skipped"]:
SKIP_NO_GPU = "no_gpu"  # plan_gpu is 0 or empty in every task
SKIP_NEVER_STARTED = "never_started"  # no task has a start_time (Waiting, or failed before launch)
SKIP_NOT_FINISHED = "not_finished"  # a started task has no end_time: running when the trace was cut
SKIP_NOT_IN_JOB_TABLE = "not_in_job_table"  # with a job table: tasks of a job it does not list


class _Job:
    """A job's tasks folded: GPU units (whole GPUs or tenths), earliest start, latest end."""

    __slots__ = ("end", "gpu_type", "row", "start", "top_units", "unfinished", "units")

    def __init__(self, row: int):
        self.row = row
        self.units = 0
        self.top_units = 0
        self.gpu_type: str | None = None
        self.start: float | None = None
        self.end: float | None = None
        self.unfinished = False


def source_columns(source: Any, **options: Any) -> list[str]:
    return list(MAPPABLE_COLUMNS)


def read(
    source: Any,
    *,
    job_table: Any = None,
    mapping: TraceMapping | dict | None = None,
    stats: dict | None = None,
    max_rows: int | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
) -> Trace | None:
    """Jobs from ``pai_task_table.csv`` (``source``) and, when given, ``pai_job_table.csv``
    (``job_table``: a path, bytes or file). Header lines are optional.

    A job's GPUs = the sum over its tasks of ``inst_num`` x ``plan_gpu`` / 100, each instance's
    fraction rounded up to a whole GPU (or counted in tenths, mapping ``fractional_gpus``); its
    work = latest task end - earliest task start; its recorded start = the earliest task start;
    its submit time = the job table's ``start_time`` (the submission), or without a job table the
    recorded start (no wait known). The instance type follows ``gpu_type`` through the mapping.
    Times are seconds from an undisclosed origin, not calendar times.
    """
    chosen = _mapping_for(mapping, job_table is not None)
    run = TraceImport(
        FORMAT,
        chosen,
        max_rows=max_rows,
        stats=stats,
        field_names={"instance_count": "plan_gpu", "recorded_start": "start_time", "duration": "end_time"},
    )
    with text_stream(source) as lines:
        table = _open(lines, TASK_COLUMNS, "the task table (pai_task_table.csv)")
        jobs = _fold_tasks(run, chosen, table, source_rows)
        run.source_rows = table.data_row
    if job_table is None:
        for job_name, job in jobs.items():
            _add(
                run,
                chosen,
                job_name,
                job,
                submit=job.start,
                cells={"job_name": job_name},
                where=(job.row, ""),
            )
        return run.finish(epoch_times=False, allow_empty=allow_empty)
    with text_stream(job_table) as lines:
        table = _open(lines, JOB_COLUMNS, "the job table (pai_job_table.csv)", prefix="job_table.")
        at = table.index
        for row, cells in table.rows():
            if not jobs:
                break  # every folded job has found its row; the rest are jobs without GPU tasks
            job_name = parse_text(cells[at["job_name"]], row, "job_table.job_name")
            job = jobs.pop(job_name, None)
            if job is None:
                continue  # a job without GPU tasks in the (possibly partial) task table
            submit_cell = cells[at["start_time"]]
            submit = None if _unset(submit_cell) else parse_seconds(submit_cell, row, "job_table.start_time")
            values = {name: cells[at[name]] for name in ("job_name", "inst_id", "user") if name in at}
            _add(run, chosen, job_name, job, submit=submit, cells=values, where=(row, "job_table."))
    for _ in jobs:
        run.skip(SKIP_NOT_IN_JOB_TABLE)
    return run.finish(epoch_times=False, allow_empty=allow_empty)


def _mapping_for(mapping: TraceMapping | dict | None, has_job_table: bool) -> TraceMapping:
    chosen = resolve_mapping(mapping, DEFAULT_MAPPING)
    given = mapping if isinstance(mapping, dict) else {}
    if not has_job_table and not isinstance(mapping, TraceMapping):
        if "share_column" not in given and chosen.share_column == "user":
            chosen = replace(chosen, share_column=None, share_default=chosen.share_default or SINGLE_SHARE)
        if "user_column" not in given and chosen.user_column == "user":
            chosen = replace(chosen, user_column=None)
    chosen.check_columns(MAPPABLE_COLUMNS if has_job_table else ("job_name", "gpu_type"))
    return chosen


def _open(lines: Iterator[str], published: tuple[str, ...], what: str, prefix: str = "") -> CsvTable:
    first = next(lines, "")
    lines = itertools.chain([first], lines)
    has_header = first.split(",", 1)[0].strip().lstrip("\ufeff") == "job_name"
    table = CsvTable(lines) if has_header else CsvTable(lines, fieldnames=published)
    missing = [name for name in published if name not in table.index]
    if missing:
        raise InputError(
            f"{what} lacks the column: the published layout is {','.join(published)}",
            field=prefix + missing[0],
        )
    if not has_header and first.strip():
        width = len(first.rstrip("\r\n").split(","))
        if width != len(published):
            raise InputError(
                f"the first line has {width} fields but {what} has {len(published)} ({','.join(published)})",
                row=1,
            )
    return table


def _unset(cell: str) -> bool:
    """PAI writes a missing time as empty or 0."""
    text = cell.strip()
    return is_absent(text) or text.lower() == "nan" or text in ("0", "0.0")


def _fold_tasks(
    run: TraceImport, mapping: TraceMapping, table: CsvTable, limit: int | None
) -> dict[str, _Job]:
    at = table.index
    jobs: dict[str, _Job] = {}
    for row, cells in table.rows(limit):
        job_name = parse_text(cells[at["job_name"]], row, "job_name")
        instances = _number(cells[at["inst_num"]], row, "inst_num")
        percent = _number(cells[at["plan_gpu"]], row, "plan_gpu")
        if instances != int(instances):
            raise InputError(
                f"{cells[at['inst_num']]!r} is not a whole number of instances", row=row, field="inst_num"
            )
        job = jobs.get(job_name)
        if job is None:
            job = jobs[job_name] = _Job(row)
        else:
            run.note("tasks_folded")
        units = int(instances) * mapping.gpu_units(percent / 100)
        job.units += units
        if units > job.top_units:
            job.top_units = units
            job.gpu_type = cells[at["gpu_type"]].strip() or None
        start_cell, end_cell = cells[at["start_time"]], cells[at["end_time"]]
        if _unset(start_cell):
            continue
        start = parse_seconds(start_cell, row, "start_time")
        job.start = start if job.start is None else min(job.start, start)
        if _unset(end_cell):
            job.unfinished = True
            continue
        end = parse_seconds(end_cell, row, "end_time")
        if end < start:
            raise InputError(f"{end:g} is before start_time {start:g}", row=row, field="end_time")
        job.end = end if job.end is None else max(job.end, end)
    return jobs


def _number(cell: str, row: int, field: str) -> float:
    if _unset(cell):
        return 0.0
    return parse_seconds(cell, row, field)  # a non-negative finite number, with the same messages


def _add(
    run: TraceImport,
    mapping: TraceMapping,
    job_name: str,
    job: _Job,
    *,
    submit: float | None,
    cells: dict[str, str],
    where: tuple[int, str],
) -> None:
    """Add one folded job; ``where`` is the row and field prefix that mapped cells came from."""
    if job.units == 0:
        run.skip(SKIP_NO_GPU)
        return
    if job.start is None:
        run.skip(SKIP_NEVER_STARTED)
        return
    if job.unfinished or job.end is None:
        run.skip(SKIP_NOT_FINISHED)
        return
    duration = job.end - job.start
    if duration == 0:
        run.skip(SKIP_ZERO_DURATION)
        return
    if submit is None:
        submit = job.start
    elif submit > job.start:
        run.note("submit_after_first_task_start_moved_back")  # a job cannot launch before it is submitted
        submit = job.start
    cells = {**cells, "gpu_type": job.gpu_type or ""}
    share_column = mapping.share_column

    def origin(column: str) -> tuple[int, str]:
        # gpu_type comes from the task table, the rest from where the job's cells were read
        return (job.row, column) if column == "gpu_type" else (where[0], where[1] + column)

    priority = 0
    if mapping.priority_column:
        row, run.priority.column = origin(mapping.priority_column)
        priority = run.priority.value(cells.get(mapping.priority_column), row)
    share_row, share_field = origin(share_column or "")
    run.add(
        job.row,
        job_id=job_name,
        submit_time=submit,
        share=mapping.share_of(cells.get(share_column) if share_column else None, share_row, share_field),
        duration=duration,
        priority=priority,
        instance_type=mapping.instance_type_of(job.gpu_type),
        instance_count=mapping.instances_for_units(job.units),
        user=cells.get(mapping.user_column) if mapping.user_column else None,
        name=cells.get(mapping.name_column) if mapping.name_column else None,
        recorded_start=job.start,
    )
