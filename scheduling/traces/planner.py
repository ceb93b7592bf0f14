"""The planner's own trace formats (SEMANTICS.md section 7): CSV with a header, and JSON
``{"jobs": [...], "priority_updates": [...]}``. Readers stream into a TraceBuilder; the
writers export any Trace (generated or imported) so that read(write(trace)) gives it back.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

import numpy as np

from scheduling.errors import InputError
from scheduling.model import MAX_PRIORITY
from scheduling.trace import NO_TYPE, TYPE_SEPARATOR, UNLIMITED_RETRIES, Trace, accepted_types
from scheduling.traces.builder import TraceBuilder
from scheduling.traces.columnar import Unsupported, read_columnar
from scheduling.traces.fields import (
    MAX_BLANK_LINES,
    MAX_LINE_BYTES,
    LineTooLong,
    TraceInput,
    TraceSource,
    UndecodableText,
    _show,
    open_source,
    parse_int,
    parse_optional_int,
    parse_optional_seconds,
    parse_optional_text,
    parse_optional_time,
    parse_optional_types,
    parse_seconds,
    parse_text,
    parse_time,
    too_many_blank_lines,
)

REQUIRED_COLUMNS = ("job_id", "submit_time", "share", "duration")
OPTIONAL_COLUMNS = (
    "priority",
    "instance_type",
    "instance_count",
    "checkpoint_interval",
    "preemption_retries",
    "user",
    "name",
    "recorded_start",
)
COLUMNS = REQUIRED_COLUMNS + OPTIONAL_COLUMNS
UPDATE_FIELDS = ("time", "job_id", "priority")


def _allowed() -> str:
    return f"required {', '.join(REQUIRED_COLUMNS)}; optional {', '.join(OPTIONAL_COLUMNS)}"


def _add_job(builder: TraceBuilder, row: int, get: Callable[[str], Any]) -> None:
    """Parse one job's cells (``get(field)`` gives a cell, or None when absent) and add it."""
    submit, submit_epoch = parse_time(get("submit_time"), row, "submit_time")
    builder.mark_epoch_times(submit_epoch, row=row, field="submit_time")
    recorded = parse_optional_time(get("recorded_start"), row, "recorded_start")
    if recorded is not None:
        builder.mark_epoch_times(recorded[1], row=row, field="recorded_start")
    priority = parse_optional_int(get("priority"), row, "priority", minimum=0, maximum=MAX_PRIORITY)
    count = parse_optional_int(get("instance_count"), row, "instance_count", minimum=1)
    builder.add_job(
        row,
        job_id=parse_text(get("job_id"), row, "job_id"),
        submit_time=submit,
        share=parse_text(get("share"), row, "share"),
        duration=parse_seconds(get("duration"), row, "duration"),
        priority=0 if priority is None else priority,
        instance_type=parse_optional_types(get("instance_type"), row, "instance_type"),
        instance_count=1 if count is None else count,
        checkpoint_interval=parse_optional_seconds(
            get("checkpoint_interval"), row, "checkpoint_interval", allow_zero=False
        ),
        preemption_retries=parse_optional_int(
            get("preemption_retries"), row, "preemption_retries", minimum=0
        ),
        user=parse_optional_text(get("user"), row, "user"),
        name=parse_optional_text(get("name"), row, "name"),
        recorded_start=None if recorded is None else recorded[0],
    )


# ---------------------------------------------------------------------------------------
# CSV


def read_planner_csv(source: TraceInput | TraceSource, *, max_rows: int | None = None) -> Trace:
    """A planner CSV trace. Rows are numbered from 1 after the header; an empty optional
    cell takes the default; priority updates are JSON only.

    Read by pyarrow's columnar parser (``scheduling.traces.columnar``) when the file is plain
    CSV, else row by row (``_read_rows``, which also words every message)."""
    with open_source(source) as opened:
        index = _header_index(_read_header(opened))
        if opened.binary:
            try:
                return read_columnar(opened, index, max_rows=max_rows, add_job=_add_job)
            except Unsupported:
                pass
        return _read_rows(opened, max_rows=max_rows)


def _read_header(opened: TraceSource) -> list[str]:
    try:
        return next(csv.reader(opened.lines(max_line=MAX_LINE_BYTES)))
    except StopIteration:
        raise InputError(f"the file is empty: a CSV trace needs a header row ({_allowed()})") from None
    except UndecodableText as exc:
        raise InputError(f"the header is not UTF-8 text ({exc.detail}): save the file as UTF-8") from None
    except LineTooLong as exc:
        raise InputError(f"the header is longer than {MAX_LINE_BYTES:,} bytes: not a CSV header") from exc
    except csv.Error as exc:
        raise InputError(f"the header is not valid CSV: {exc}") from None


def _read_rows(opened: TraceSource, *, max_rows: int | None) -> Trace:
    """The row-by-row reader: the definition of a valid planner CSV and of its messages."""
    records = csv.reader(opened.lines(max_line=MAX_LINE_BYTES))
    index = _header_index(_read_header(opened))
    next(records)
    width = len(index)
    builder = TraceBuilder(max_rows=max_rows, source="planner CSV")
    row = 0
    blank = 0
    while True:
        try:
            cells = next(records)
        except StopIteration:
            break
        except UndecodableText as exc:
            raise InputError(
                f"is not UTF-8 text ({exc.detail}): save the file as UTF-8", row=row + 1
            ) from None
        except csv.Error as exc:
            raise InputError(f"is not valid CSV: {exc}", row=row + 1) from None
        except LineTooLong:
            raise InputError(
                f"is longer than {MAX_LINE_BYTES:,} bytes: not a row of a CSV trace", row=row + 1
            ) from None
        row += 1
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            blank += 1
            if blank > MAX_BLANK_LINES:
                raise too_many_blank_lines(MAX_BLANK_LINES, row)
            continue  # a blank line: counted as a row so numbers match the file, but no job
        if len(cells) != width and not (len(cells) > width and not any(c.strip() for c in cells[width:])):
            raise InputError(f"has {len(cells)} cells, but the header has {width} columns", row=row)

        def get(name: str, cells: list[str] = cells) -> str | None:
            position = index.get(name)
            return None if position is None else cells[position]

        _add_job(builder, row, get)
    return builder.build()


def _header_index(header: list[str]) -> dict[str, int]:
    index: dict[str, int] = {}
    for position, raw in enumerate(header):
        if "\x00" in raw:  # before its name is shown anywhere (PostgreSQL stores no NUL)
            raise InputError("contains a NUL byte", field=f"header column {position + 1}")
        name = raw.strip()
        if name not in COLUMNS:
            shown = _show(name) if name else f"column {position + 1} (no name)"
            raise InputError(f"unknown column {shown}: the columns are {_allowed()}", field=name[:60] or None)
        if name in index:
            raise InputError(f"the column {name!r} appears twice in the header", field=name)
        index[name] = position
    for name in REQUIRED_COLUMNS:
        if name not in index:
            raise InputError(f"the required column {name!r} is missing from the header", field=name)
    return index


# ---------------------------------------------------------------------------------------
# JSON


def read_planner_json(source: TraceInput | TraceSource, *, max_rows: int | None = None) -> Trace:
    """A planner JSON trace; the row of a job is its 1-based index in ``jobs``."""
    with open_source(source) as opened:
        text = opened.text()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}") from None
    except (ValueError, RecursionError) as exc:  # a number of thousands of digits, nesting too deep
        raise InputError(f"is not a JSON trace: {str(exc)[:120]}") from None
    if not isinstance(data, dict):
        raise InputError('a JSON trace is an object: {"jobs": [...], "priority_updates": [...]}')
    for key in data:
        if key not in ("jobs", "priority_updates"):
            raise InputError(f"unknown key {key!r}: a JSON trace has jobs and priority_updates", field=key)
    jobs = data.get("jobs")
    if not isinstance(jobs, list):
        raise InputError("a JSON trace needs a list of jobs", field="jobs")
    builder = TraceBuilder(max_rows=max_rows, source="planner JSON")
    for position, job in enumerate(jobs):
        row = position + 1
        if not isinstance(job, dict):
            raise InputError("a job must be an object", row=row)
        for key in job:
            if key not in COLUMNS:
                raise InputError(f"unknown field {key!r}: the fields are {_allowed()}", row=row, field=key)
        for key in REQUIRED_COLUMNS:
            if job.get(key) is None:
                raise InputError("is missing", row=row, field=key)
        _add_job(builder, row, job.get)
    updates = data.get("priority_updates", [])
    if updates is None:
        updates = []
    if not isinstance(updates, list):
        raise InputError("must be a list", field="priority_updates")
    for position, update in enumerate(updates):
        where = f"priority_updates[{position}]"
        if not isinstance(update, dict):
            raise InputError("must be an object with time, job_id and priority", field=where)
        for key in update:
            if key not in UPDATE_FIELDS:
                raise InputError(
                    f"unknown field {key!r}: the fields are time, job_id, priority", field=f"{where}.{key}"
                )
        for key in UPDATE_FIELDS:
            if update.get(key) is None:
                raise InputError("is missing", field=f"{where}.{key}")
        time, is_epoch = parse_time(update["time"], None, f"{where}.time")
        builder.mark_epoch_times(is_epoch, field=f"{where}.time")
        priority = parse_int(update["priority"], None, f"{where}.priority", minimum=0, maximum=MAX_PRIORITY)
        builder.add_priority_update(
            None,
            time=time,
            job_id=parse_text(update["job_id"], None, f"{where}.job_id"),
            priority=priority,
            field_prefix=f"{where}.",
        )
    return builder.build()


# ---------------------------------------------------------------------------------------
# Writers


def _time_text(seconds: float, epoch: bool) -> str | float | int:
    if epoch:
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return _number(seconds)


def _number(value: float) -> float | int:
    """The shortest exact form: ``30`` rather than ``30.0``, full precision otherwise."""
    value = float(value)
    return int(value) if value.is_integer() and abs(value) < 2**53 else value


def _job_fields(trace: Trace) -> list[str]:
    """The columns worth writing: required ones, plus optional ones that carry a value."""
    present = {
        "priority": True,
        "instance_type": bool(np.any(trace.instance_type != NO_TYPE)),
        "instance_count": True,
        "checkpoint_interval": bool(np.any(~np.isnan(trace.checkpoint_interval))),
        "preemption_retries": bool(np.any(trace.preemption_retries != UNLIMITED_RETRIES)),
        "user": trace.user is not None,
        "name": trace.name is not None,
        "recorded_start": trace.recorded_start is not None,
    }
    return list(REQUIRED_COLUMNS) + [name for name in OPTIONAL_COLUMNS if present[name]]


def _jobs(trace: Trace, fields: list[str]) -> Iterator[dict[str, Any]]:
    """One dict per job with the given fields; absent optional values are left out."""
    epoch = trace.epoch_times
    submit = trace.submit_time.tolist()
    share = trace.share.tolist()
    priority = trace.priority.tolist()
    types = trace.instance_type.tolist()
    count = trace.instance_count.tolist()
    duration = trace.duration.tolist()
    checkpoint = trace.checkpoint_interval.tolist()
    retries = trace.preemption_retries.tolist()
    recorded = trace.recorded_start.tolist() if trace.recorded_start is not None else None
    for i, job_id in enumerate(trace.job_id):
        job: dict[str, Any] = {
            "job_id": job_id,
            "submit_time": _time_text(submit[i], epoch),
            "share": trace.share_names[share[i]],
            "duration": _number(duration[i]),
        }
        if "priority" in fields:
            job["priority"] = priority[i]
        if "instance_type" in fields and types[i] != NO_TYPE:
            job["instance_type"] = trace.type_names[types[i]]
        if "instance_count" in fields:
            job["instance_count"] = count[i]
        if "checkpoint_interval" in fields and not math.isnan(checkpoint[i]):
            job["checkpoint_interval"] = _number(checkpoint[i])
        if "preemption_retries" in fields and retries[i] != UNLIMITED_RETRIES:
            job["preemption_retries"] = retries[i]
        if "user" in fields and trace.user[i]:
            job["user"] = trace.user[i]
        if "name" in fields and trace.name[i]:
            job["name"] = trace.name[i]
        if recorded is not None and not math.isnan(recorded[i]):
            job["recorded_start"] = _time_text(recorded[i], epoch)
        yield job


@contextmanager
def _text_target(target: str | Path | IO) -> Iterator[IO[str]]:
    """A text stream to write: a path (``.gz`` compresses), a binary or a text file object."""
    if isinstance(target, (str, Path)):
        path = Path(target)
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "wt", encoding="utf-8", newline="") as stream:
            yield stream
        return
    if isinstance(target, io.TextIOBase):
        yield target
        return
    wrapper = io.TextIOWrapper(target, encoding="utf-8", newline="", write_through=True)
    try:
        yield wrapper
        wrapper.flush()
    finally:
        wrapper.detach()


def write_planner_csv(trace: Trace, target: str | Path | IO) -> None:
    """Write a planner CSV. Priority updates have no place in CSV: such a trace is refused
    (write JSON) rather than written without them."""
    if len(trace.updates):
        raise InputError(
            f"the trace has {len(trace.updates)} priority updates, which CSV cannot hold: export it as JSON"
        )
    fields = _job_fields(trace)
    with _text_target(target) as stream:
        writer = csv.writer(stream, lineterminator="\n")
        writer.writerow(fields)
        for job in _jobs(trace, fields):
            writer.writerow([job.get(name, "") for name in fields])


def write_planner_json(trace: Trace, target: str | Path | IO) -> None:
    """Write a planner JSON trace, one job per line (readable, and diffs well)."""
    fields = _job_fields(trace)
    with _text_target(target) as stream:
        stream.write('{"jobs": [')
        for i, job in enumerate(_jobs(trace, fields)):
            kind = job.get("instance_type")
            if kind is not None and TYPE_SEPARATOR in kind:
                job["instance_type"] = accepted_types(kind)  # section 12: a list in JSON
            stream.write(("\n  " if i == 0 else ",\n  ") + json.dumps(job, ensure_ascii=False))
        stream.write('\n],\n"priority_updates": [')
        update_time = trace.updates.time.tolist()
        update_priority = trace.updates.priority.tolist()
        for i, job_id in enumerate(trace.updates.job_id):
            update = {
                "time": _time_text(update_time[i], trace.epoch_times),
                "job_id": job_id,
                "priority": update_priority[i],
            }
            stream.write(("\n  " if i == 0 else ",\n  ") + json.dumps(update, ensure_ascii=False))
        stream.write("\n]}\n")


def job_rows(trace: Trace) -> Iterator[Mapping[str, Any]]:
    """The jobs of a trace as planner-format dicts (for previews and exports)."""
    return _jobs(trace, _job_fields(trace))
