"""Importer for the Helios (SenseTime, ``cluster_log.csv``) and Philly (Microsoft) job logs: each
virtual cluster (``vc``) becomes a share. Philly comes flattened to the same CSV layout
(HeliosArtifact's ``philly_trace.csv``) or as its original ``cluster_job_log`` JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces.fields import is_absent, parse_int, parse_seconds, parse_text
from scheduling.traces.mapping import (
    SKIP_ZERO_DURATION,  # ran zero seconds (the Philly JSON's jobs; TraceImport.add_row the CSV's)
    CsvTable,
    TraceImport,
    TraceMapping,
    parse_local_time,
    resolve_mapping,
    text_stream,
    zone_named,
)

# Published layout (S-Lab-System-Group/HeliosData README): one row per Slurm job.
COLUMNS = (
    "job_id",
    "user",
    "vc",
    "gpu_num",
    "cpu_num",
    "node_num",
    "state",
    "submit_time",
    "start_time",
    "end_time",
    "duration",
    "queue",
)
# Other spellings of the same columns, as the Philly JSON keys have them.
ALIASES = {"job_id": ("jobid",), "submit_time": ("submitted_time",), "state": ("status",)}
DEFAULT_MAPPING = TraceMapping(share_column="vc", user_column="user")

# Jobs left out (choice), counted in stats["skipped"]:
SKIP_NO_GPU = "no_gpu"  # CPU jobs (about half of Helios) do not use the GPU pool
SKIP_NEVER_STARTED = "never_started"  # no start time (Philly: no attempt): no work to replay
SKIP_NOT_FINISHED = "not_finished"  # no end time: still running when the log was cut

# Philly JSON: what a job's work is (choice). Each attempt held its GPUs from its start to its
# end; the gaps between attempts were spent queued. So work = the sum of the attempts' run times,
# GPUs = those of the first attempt that lists any, recorded start = the first attempt's start.
MAX_JOB_CHARS = 1_000_000  # no real job object is this long: past it, a decode error is final
PHILLY_JSON_COLUMNS = ("jobid", "user", "vc", "status", "submitted_time", "attempts")


def source_columns(source: Any, *, layout: str = "helios", **options: Any) -> list[str]:
    with text_stream(source) as lines:
        first, lines = _peek(lines)
        if first.lstrip().startswith(("[", "{")):
            return list(PHILLY_JSON_COLUMNS)
        return CsvTable(lines).columns


def read(
    source: Any,
    *,
    layout: str = "helios",
    mapping: TraceMapping | dict | None = None,
    timezone: str = "UTC",
    stats: dict | None = None,
    max_rows: int | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
) -> Trace | None:
    """Jobs from a Helios or Philly log. ``layout`` (``helios`` or ``philly``) only names the
    format in messages and stats: the CSV layout is the same and JSON is recognised by its
    first character. Timestamps (``2020-06-09 18:41:01``) are wall-clock times in ``timezone``
    (default UTC, which keeps the log's own calendar days; Helios wrote Beijing time, Philly
    US Pacific time: pass ``Asia/Shanghai`` or ``America/Los_Angeles`` for true instants).
    Duration is the ``duration`` column when present, else end - start."""
    if layout not in ("helios", "philly"):
        raise InputError(f"{layout!r} is not helios or philly", field="layout")
    chosen = resolve_mapping(mapping, DEFAULT_MAPPING)
    zone = zone_named(timezone)
    with text_stream(source) as lines:
        first, lines = _peek(lines)
        if first.lstrip().startswith(("[", "{")):
            run = TraceImport(
                "philly",
                chosen,
                max_rows=max_rows,
                stats=stats,
                field_names={"job_id": "jobid", "submit_time": "submitted_time"},
            )
            chosen.check_columns(PHILLY_JSON_COLUMNS)
            _read_philly_json(run, chosen, lines, zone, source_rows)
            return run.finish(epoch_times=True, allow_empty=allow_empty)
        table = CsvTable(lines)
        _apply_aliases(table)
        run = TraceImport(
            layout,
            chosen,
            max_rows=max_rows,
            stats=stats,
            field_names={"instance_count": "gpu_num", "recorded_start": "start_time"},
        )
        table.require("job_id", "gpu_num", "submit_time", "start_time")
        if not (table.has("duration") or table.has("end_time")):
            raise InputError(
                "the column is missing: durations come from duration or end_time", field="duration"
            )
        chosen.check_columns(table.columns)
        epoch = _read_csv(run, chosen, table, zone, source_rows)
        run.source_rows = table.data_row
    return run.finish(epoch_times=epoch, allow_empty=allow_empty)


def read_philly(source: Any, **options: Any) -> Trace | None:
    """``read`` with ``layout="philly"``: the flattened CSV or the original JSON log."""
    return read(source, layout="philly", **options)


def _peek(lines: Iterator[str]) -> tuple[str, Iterator[str]]:
    first = ""
    skipped: list[str] = []
    for line in lines:
        skipped.append(line)
        if line.strip():
            first = line
            break

    def chained() -> Iterator[str]:
        yield from skipped
        yield from lines

    return first, chained()


def _apply_aliases(table: CsvTable) -> None:
    for name, others in ALIASES.items():
        if name not in table.index:
            for other in others:
                if other in table.index:
                    table.index[name] = table.index[other]
                    break


# -- the CSV layout --------------------------------------------------------------------------


def _read_csv(run: TraceImport, mapping: TraceMapping, table: CsvTable, zone: Any, limit: int | None) -> bool:
    at = table.index
    i_end = at.get("end_time")
    i_duration = at.get("duration")
    i_state = at.get("state")
    run.locate_mapped_columns(at)
    epoch: bool | None = None
    for row, cells in table.rows(limit):
        job_id = parse_text(cells[at["job_id"]], row, "job_id")
        gpus = parse_int(cells[at["gpu_num"]], row, "gpu_num", minimum=0)
        if gpus == 0:
            run.skip(SKIP_NO_GPU)
            continue
        submit, is_epoch = _time(cells[at["submit_time"]], row, "submit_time", zone)
        if submit is None:
            raise InputError("is empty", row=row, field="submit_time")
        epoch = is_epoch if epoch is None else epoch
        if is_epoch != epoch:
            raise InputError(
                "mixes timestamps and plain seconds: use one kind of time", row=row, field="submit_time"
            )
        start, _ = _time(cells[at["start_time"]], row, "start_time", zone)
        if start is None:
            run.skip(SKIP_NEVER_STARTED)
            continue
        if i_state is not None and cells[i_state].strip().upper() == "RUNNING":
            run.skip(SKIP_NOT_FINISHED)
            continue
        if i_duration is not None and not is_absent(cells[i_duration]):
            duration = parse_seconds(cells[i_duration], row, "duration")
        else:
            end, _ = _time(cells[i_end], row, "end_time", zone) if i_end is not None else (None, epoch)
            if end is None:
                run.skip(SKIP_NOT_FINISHED)
                continue
            if end < start:
                raise InputError("is before start_time", row=row, field="end_time")
            duration = end - start
        run.add_row(
            row,
            cells,
            job_id=job_id,
            submit_time=submit,
            duration=duration,
            gpus=gpus,
            recorded_start=start,
        )
    return bool(epoch)


def _time(cell: str, row: int, field: str, zone: Any) -> tuple[float | None, bool]:
    """A timestamp (-> Unix seconds, epoch) or plain seconds from an origin (converted logs)."""
    text = cell.strip()
    try:
        return float(text), False
    except ValueError:
        return parse_local_time(text, row, field, zone), True


# -- Philly's original JSON ------------------------------------------------------------------


def _read_philly_json(
    run: TraceImport, mapping: TraceMapping, lines: Iterator[str], zone: Any, limit: int | None
) -> None:
    share_column = mapping.share_column
    for row, job in _json_array_items(lines, limit):
        run.source_rows = row
        if not isinstance(job, dict):
            raise InputError("is not a job object", row=row, field="jobid")
        job_id = parse_text(job.get("jobid"), row, "jobid")
        attempts = job.get("attempts") or []
        if not isinstance(attempts, list):
            raise InputError("is not a list", row=row, field="attempts")
        gpus = 0
        first_start: float | None = None
        work = 0.0
        unfinished = False
        for n, attempt in enumerate(attempts):
            where = f"attempts[{n}]"
            if not isinstance(attempt, dict):
                raise InputError("is not an attempt object", row=row, field=where)
            start = parse_local_time(_text(attempt.get("start_time")), row, f"{where}.start_time", zone)
            end = parse_local_time(_text(attempt.get("end_time")), row, f"{where}.end_time", zone)
            if gpus == 0:
                gpus = _attempt_gpus(attempt, row, where)
            if start is None:
                continue  # a logging gap (the published notes): this attempt's time is unknown
            if end is None:
                unfinished = n == len(attempts) - 1
                continue
            if end < start:
                raise InputError("is before start_time", row=row, field=f"{where}.end_time")
            first_start = start if first_start is None else min(first_start, start)
            work += end - start
        if first_start is None and not unfinished:
            run.skip(SKIP_NEVER_STARTED)
            continue
        if unfinished:
            run.skip(SKIP_NOT_FINISHED)
            continue
        if gpus == 0:
            run.skip(SKIP_NO_GPU)
            continue
        if work == 0:
            run.skip(SKIP_ZERO_DURATION)
            continue
        submit = parse_local_time(_text(job.get("submitted_time")), row, "submitted_time", zone)
        if submit is None:
            raise InputError("is empty", row=row, field="submitted_time")
        if len(attempts) > 1:
            run.note("retried_attempts_summed")
        run.add(
            row,
            job_id=job_id,
            submit_time=submit,
            share=mapping.share_of(
                _text(job.get(share_column)) if share_column else None, row, share_column or ""
            ),
            duration=work,
            priority=run.priority.value(_text(job.get(mapping.priority_column)), row)
            if mapping.priority_column
            else 0,
            instance_type=mapping.instance_type_of(None),
            instance_count=mapping.instances_for(gpus),
            user=_text(job.get(mapping.user_column)) if mapping.user_column else None,
            recorded_start=first_start,
        )


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


def _attempt_gpus(attempt: dict, row: int, where: str) -> int:
    detail = attempt.get("detail") or []
    if not isinstance(detail, list):
        raise InputError("is not a list", row=row, field=f"{where}.detail")
    total = 0
    for k, machine in enumerate(detail):
        gpus = machine.get("gpus") if isinstance(machine, dict) else None
        if gpus is None:
            continue
        if not isinstance(gpus, list):
            raise InputError("is not a list of GPU names", row=row, field=f"{where}.detail[{k}].gpus")
        total += len(gpus)
    return total


def _json_array_items(lines: Iterator[str], limit: int | None) -> Iterator[tuple[int, Any]]:
    """The items of a top-level JSON array (or a JSON object per line), decoded one at a time so
    that a large log is never held as one parsed list. Yields ``(1-based item number, item)``."""
    decoder = json.JSONDecoder()
    buffer = ""
    position = 0
    opened = False
    count = 0
    pending_error: json.JSONDecodeError | None = None
    for line in lines:
        buffer = buffer[position:] + line
        position = 0
        pending_error = None
        while True:
            while position < len(buffer) and buffer[position] in " \t\r\n,":
                position += 1
            if position >= len(buffer):
                break
            char = buffer[position]
            if not opened and char == "[":
                opened = True
                position += 1
                continue
            if char == "]":
                return
            try:
                item, end = decoder.raw_decode(buffer, position)
            except RecursionError:
                raise InputError("is not valid JSON (nested too deeply)", row=count + 1) from None
            except json.JSONDecodeError as err:
                if len(buffer) - position > MAX_JOB_CHARS:
                    raise InputError(f"is not valid JSON ({err.msg})", row=count + 1) from None
                pending_error = err  # maybe just incomplete: read on
                break
            except ValueError as err:  # a number of thousands of digits
                raise InputError(f"is not valid JSON ({str(err)[:120]})", row=count + 1) from None
            count += 1
            yield count, item
            if limit is not None and count >= limit:
                return
            position = end
    if pending_error is not None or buffer[position:].strip():
        detail = pending_error.msg if pending_error is not None else "unexpected text"
        raise InputError(f"the JSON ends inside a job or is malformed ({detail})", row=count + 1)
    if opened:
        raise InputError("the JSON array is not closed with ]", row=count + 1)
