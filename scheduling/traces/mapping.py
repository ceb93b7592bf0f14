"""How the columns of someone else's trace become planner jobs: which column is the share, which the
priority and how, which GPU model is which instance type. One TraceMapping serves every importer,
is saved with the trace it produced, and drives the upload preview (``preview`` / ``columns``).
"""

from __future__ import annotations

import csv
import importlib
import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import numpy as np

from scheduling.errors import InputError
from scheduling.model import MAX_PRIORITY, parse_enum
from scheduling.trace import Trace
from scheduling.traces.builder import TraceBuilder
from scheduling.traces.fields import (
    MAX_BLANK_LINES,
    MAX_LINE_BYTES,
    TraceInput,
    TraceSource,
    check_time_range,
    epoch_seconds,
    open_source,
    too_many_blank_lines,
)

WHOLE_GPU_TYPE = "gpu"  # one instance = one GPU
TENTH_GPU_TYPE = "gpu-tenth"  # one instance = a tenth of a GPU (fractional_gpus="tenths")
# stats["skipped"]'s reason for a job that ran zero seconds (TraceImport.add_row; the importers
# that skip such jobs themselves spell it the same).
SKIP_ZERO_DURATION = "zero_duration"


class PriorityMode(StrEnum):
    NONE = "none"  # every job gets priority 0
    VALUE = "value"  # the column already holds 0..9999; anything else is an error
    CLAMP = "clamp"  # numbers rounded and clamped into 0..9999
    RANK = "rank"  # numbers of any size mapped onto 0..9999 keeping their order
    MAP = "map"  # category -> number through priority_map (QOS, qos class)


class FractionalGpus(StrEnum):
    ROUND_UP = "round_up"  # a job asking for 0.46 GPU holds one whole GPU
    TENTHS = "tenths"  # counted in tenths of a GPU, rounding up (instance type gpu-tenth)


@dataclass(frozen=True)
class TraceMapping:
    """Which source column becomes what. Column names are the source's own (``Account``, ``vc``).

    - ``share_column``: its values name the shares (renamed through ``share_names`` when listed);
      ``None`` puts every job in ``share_default``. An empty cell takes ``share_default`` when it is
      set and is an error otherwise.
    - ``priority_column`` + ``priority_mode`` (+ ``priority_map`` for ``map``).
    - ``instance_types``: GPU model (Slurm gres type, ``gpu_type``, ``gpu_spec``) -> instance type;
      unlisted or absent models get ``default_instance_type`` (``gpu`` or ``gpu-tenth``).
    - ``gpus_per_instance``: instances = ceil(GPUs / gpus_per_instance), e.g. 8 for a pool counted
      in 8-GPU machines.
    """

    share_column: str | None = None
    share_names: Mapping[str, str] = field(default_factory=dict)
    share_default: str | None = None
    priority_column: str | None = None
    priority_mode: PriorityMode = PriorityMode.NONE
    priority_map: Mapping[str, int] = field(default_factory=dict)
    instance_types: Mapping[str, str] = field(default_factory=dict)
    default_instance_type: str | None = None
    gpus_per_instance: int = 1
    fractional_gpus: FractionalGpus = FractionalGpus.ROUND_UP
    user_column: str | None = None
    name_column: str | None = None

    def __post_init__(self) -> None:
        # accept the enums' plain values too (TraceMapping(priority_mode="rank"))
        object.__setattr__(
            self, "priority_mode", parse_enum(PriorityMode, self.priority_mode, "mapping.priority_mode")
        )
        object.__setattr__(
            self,
            "fractional_gpus",
            parse_enum(FractionalGpus, self.fractional_gpus, "mapping.fractional_gpus"),
        )

    # -- storage ---------------------------------------------------------------------------

    def field_columns(self, *fields: str) -> dict[str, str]:
        """``{field: column}`` for those of ``fields`` (share, priority, user, name) the mapping takes
        from a column: a message about such a field names the column the person sees."""
        columns = {field: getattr(self, f"{field}_column") for field in fields}
        return {field: column for field, column in columns.items() if column}

    def to_dict(self) -> dict[str, Any]:
        return {
            "share_column": self.share_column,
            "share_names": dict(self.share_names),
            "share_default": self.share_default,
            "priority_column": self.priority_column,
            "priority_mode": self.priority_mode.value,
            "priority_map": dict(self.priority_map),
            "instance_types": dict(self.instance_types),
            "default_instance_type": self.default_instance_type,
            "gpus_per_instance": self.gpus_per_instance,
            "fractional_gpus": self.fractional_gpus.value,
            "user_column": self.user_column,
            "name_column": self.name_column,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: TraceMapping | None = None) -> TraceMapping:
        """A mapping from JSON; keys left out keep the values of ``base`` (a format's default)."""
        if not isinstance(data, Mapping):
            raise InputError("the trace mapping must be an object", field="mapping")
        known = set(cls.__dataclass_fields__)
        for key in data:
            if key not in known:
                raise InputError(
                    f"unknown setting {key!r}; known: {', '.join(sorted(known))}", field="mapping"
                )
        values: dict[str, Any] = {}
        for key in (
            "share_column",
            "share_default",
            "priority_column",
            "default_instance_type",
            "user_column",
            "name_column",
        ):
            if key in data:
                values[key] = _optional_name(data[key], f"mapping.{key}")
        for key in ("share_names", "instance_types"):
            if key in data:
                values[key] = _name_table(data[key], f"mapping.{key}")
        if "priority_map" in data:
            values["priority_map"] = _priority_table(data["priority_map"])
        if "priority_mode" in data:
            values["priority_mode"] = parse_enum(PriorityMode, data["priority_mode"], "mapping.priority_mode")
        if "fractional_gpus" in data:
            values["fractional_gpus"] = parse_enum(
                FractionalGpus, data["fractional_gpus"], "mapping.fractional_gpus"
            )
        if "gpus_per_instance" in data:
            per = data["gpus_per_instance"]
            if isinstance(per, bool) or not isinstance(per, int) or per < 1:
                raise InputError(
                    f"{per!r} is not a whole number of 1 or more", field="mapping.gpus_per_instance"
                )
            values["gpus_per_instance"] = per
        mapping = replace(base or cls(), **values)
        mapping.check()
        return mapping

    def check(self) -> None:
        if self.share_column is None and self.share_default is None:
            raise InputError(
                "give a share_column, or a share_default for every job", field="mapping.share_column"
            )
        if self.priority_mode is not PriorityMode.NONE and self.priority_column is None:
            raise InputError(
                f"priority_mode {self.priority_mode.value!r} needs a priority_column",
                field="mapping.priority_column",
            )
        if self.priority_mode is PriorityMode.MAP and not self.priority_map:
            raise InputError("priority_mode 'map' needs a priority_map", field="mapping.priority_map")

    def check_columns(self, available: Iterable[str]) -> None:
        """Every column the mapping names must exist in the source."""
        names = list(available)
        for key in ("share_column", "priority_column", "user_column", "name_column"):
            column = getattr(self, key)
            if column is not None and column not in names:
                raise InputError(
                    f"{column!r} is not a column of this trace; columns: {', '.join(names)}",
                    field=f"mapping.{key}",
                )

    # -- per job -----------------------------------------------------------------------------

    def share_of(self, value: str | None, row: int, column: str) -> str:
        if self.share_column is None:
            return self.share_default  # type: ignore[return-value]
        text = (value or "").strip()
        if not text:
            if self.share_default is None:
                raise InputError(
                    "is empty: every job needs a share (or set mapping.share_default)", row=row, field=column
                )
            return self.share_default
        return self.share_names.get(text, text)

    def instance_type_of(self, model: str | None) -> str:
        if model:
            mapped = self.instance_types.get(model.strip())
            if mapped:
                return mapped
        if self.default_instance_type:
            return self.default_instance_type
        return TENTH_GPU_TYPE if self.fractional_gpus is FractionalGpus.TENTHS else WHOLE_GPU_TYPE

    def gpu_units(self, gpus: float) -> int:
        """``gpus`` in the units instances are counted in: whole GPUs, or tenths with
        ``fractional_gpus="tenths"``, rounding a fraction up (0.46 GPU -> 1 GPU, or 5 tenths)."""
        if gpus <= 0:
            return 0
        scaled = gpus * 10 if self.fractional_gpus is FractionalGpus.TENTHS else gpus
        return max(1, math.ceil(round(scaled, 6)))  # round first: 0.3 x 10 is not 3.0000000000000004

    def instances_for_units(self, units: int) -> int:
        return 0 if units <= 0 else math.ceil(units / self.gpus_per_instance)

    def instances_for(self, gpus: float) -> int:
        """Instances holding ``gpus`` GPUs (fractions per ``fractional_gpus``); 0 for no GPU."""
        return self.instances_for_units(self.gpu_units(gpus))


# -- priorities ------------------------------------------------------------------------------


class PriorityResolver:
    """Turns priority cells into 0..9999 as the mapping says. In ``rank`` mode the raw numbers are
    kept and the order-preserving scale is applied to the built trace (``apply``)."""

    def __init__(self, mapping: TraceMapping, column: str | None = None):
        self.mode = mapping.priority_mode
        self.table = dict(mapping.priority_map)
        self.column = column or mapping.priority_column
        self._raw = array("d")

    def value(self, cell: str | None, row: int) -> int:
        if self.mode is PriorityMode.NONE:
            return 0
        text = (cell or "").strip()
        if self.mode is PriorityMode.MAP:
            if text not in self.table:
                known = ", ".join(sorted(self.table))
                raise InputError(f"{text!r} is not in the priority map ({known})", row=row, field=self.column)
            return self.table[text]
        if not text:
            raise InputError("is empty: give a priority number", row=row, field=self.column)
        try:
            number = float(text)
        except ValueError:
            raise InputError(f"{text!r} is not a number", row=row, field=self.column) from None
        if not math.isfinite(number):
            raise InputError(f"{text!r} is not a finite number", row=row, field=self.column)
        if self.mode is PriorityMode.RANK:
            self._raw.append(number)
            return 0
        if self.mode is PriorityMode.CLAMP:
            return int(min(max(round(number), 0), MAX_PRIORITY))
        if not number.is_integer() or not 0 <= number <= MAX_PRIORITY:
            raise InputError(
                f"{text!r} is not a whole number in 0..{MAX_PRIORITY}", row=row, field=self.column
            )
        return int(number)

    def apply(self, trace: Trace) -> None:
        if self.mode is PriorityMode.RANK and len(self._raw):
            trace.priority = rank_priorities(np.frombuffer(self._raw, dtype=np.float64))


def rank_priorities(raw: np.ndarray) -> np.ndarray:
    """Order-preserving map of any numbers onto 0..9999 **(choice)**: values already all whole and
    within 0..9999 stay as they are; otherwise the distinct values, lowest first, are spread evenly
    over 0..9999 (distinct stay distinct while there are at most 10,000 of them; beyond that,
    neighbours share a priority but the order never inverts)."""
    if raw.size == 0:
        return np.zeros(0, dtype=np.int32)
    if np.all((raw >= 0) & (raw <= MAX_PRIORITY) & (raw == np.floor(raw))):
        return raw.astype(np.int32)
    distinct, rank = np.unique(raw, return_inverse=True)
    n = distinct.size
    if n == 1:
        return np.zeros(raw.size, dtype=np.int32)
    if n <= MAX_PRIORITY + 1:
        scaled = np.rint(rank * (MAX_PRIORITY / (n - 1)))
    else:
        scaled = np.floor(rank * ((MAX_PRIORITY + 1) / n))
    return scaled.astype(np.int32)


# -- one import run ---------------------------------------------------------------------------


class TraceImport:
    """What every importer shares: the builder, the priority resolver, the skip counts and the
    stats dict (filled in place when the caller passes one)."""

    def __init__(
        self,
        format_name: str,
        mapping: TraceMapping,
        *,
        max_rows: int | None = None,
        stats: dict | None = None,
        field_names: Mapping[str, str] | None = None,
    ):
        self.format_name = format_name
        self.mapping = mapping
        self.builder = TraceBuilder(max_rows=max_rows, source=format_name, field_names=field_names)
        self.priority = PriorityResolver(mapping)
        self._default_type = mapping.instance_type_of(None)  # for add_row, once rather than per row
        self.source_rows = 0
        self.skipped: Counter[str] = Counter()
        self.notes: Counter[str] = Counter()
        self.stats = stats if stats is not None else {}

    def skip(self, reason: str) -> None:
        self.skipped[reason] += 1

    def note(self, what: str, count: int = 1) -> None:
        """Count something that changed a job without skipping it (steps folded, ranges expanded)."""
        self.notes[what] += count

    def add(self, row: int, **job: Any) -> None:
        self.builder.add_job(row, **job)

    def locate_mapped_columns(self, index: Mapping[str, int]) -> None:
        """Find the columns the mapping names (share, priority, user, name) in a table's header,
        once, for ``mapped_fields``."""
        m = self.mapping
        self._mapped = tuple(
            index[column] if column else None
            for column in (m.share_column, m.priority_column, m.user_column, m.name_column)
        )

    def mapped_fields(self, cells: Sequence[str], row: int) -> dict[str, Any]:
        """The job's share, priority, user and name from a row's cells, as the mapping says."""
        i_share, i_priority, i_user, i_name = self._mapped
        m = self.mapping
        return {
            "share": m.share_of(cells[i_share] if i_share is not None else None, row, m.share_column or ""),
            "priority": self.priority.value(cells[i_priority], row) if i_priority is not None else 0,
            "user": cells[i_user] if i_user is not None else None,
            "name": cells[i_name] if i_name is not None else None,
        }

    def add_row(
        self,
        row: int,
        cells: Sequence[str],
        *,
        gpus: float,
        duration: float,
        instance_type: str | None = None,
        **job: Any,
    ) -> None:
        """Add the job of a table that has one job per row (ITP, Helios, openb): its share,
        priority, user and name from the mapped cells, ``gpus`` counted in instances as the mapping
        says, ``instance_type`` the mapping's default when the row names no GPU model. A job that
        ran zero seconds did no work and holds nothing in a replay, so it is skipped
        (``zero_duration``) rather than added."""
        if duration == 0:
            self.skip(SKIP_ZERO_DURATION)
            return
        self.builder.add_job(
            row,
            **self.mapped_fields(cells, row),
            duration=duration,
            instance_type=self._default_type if instance_type is None else instance_type,
            instance_count=self.mapping.instances_for(gpus),
            **job,
        )

    def finish(self, *, epoch_times: bool, allow_empty: bool = False) -> Trace | None:
        self.stats.clear()
        self.stats.update(
            {
                "format": self.format_name,
                "source_rows": self.source_rows,
                "jobs": len(self.builder),
                "skipped": dict(sorted(self.skipped.items())),
                "skipped_total": sum(self.skipped.values()),
                "notes": dict(sorted(self.notes.items())),
                "mapping": self.mapping.to_dict(),
            }
        )
        if allow_empty and len(self.builder) == 0:
            return None
        self.builder.mark_epoch_times(epoch_times)
        trace = self.builder.build()
        self.priority.apply(trace)
        return trace


def resolve_mapping(mapping: TraceMapping | Mapping[str, Any] | None, default: TraceMapping) -> TraceMapping:
    """A TraceMapping from what a caller passed: None (the format's default), a dict of the keys to
    change, or a ready TraceMapping."""
    if mapping is None:
        return default
    if isinstance(mapping, TraceMapping):
        mapping.check()
        return mapping
    return TraceMapping.from_dict(mapping, base=default)


def split_mapping(
    mapping: TraceMapping | Mapping[str, Any] | None,
    default: TraceMapping,
    own: Mapping[str, Callable[[Any], Any]],
) -> tuple[TraceMapping, dict[str, Any]]:
    """The TraceMapping of ``mapping``, and the importer's own settings: each key of ``own`` the
    mapping (a dict) holds is taken out of it and read by its function, which raises InputError."""
    extras: dict[str, Any] = {}
    if isinstance(mapping, Mapping):
        mapping = dict(mapping)
        for key, read in own.items():
            if key in mapping:
                extras[key] = read(mapping.pop(key))
    return resolve_mapping(mapping, default), extras


@contextmanager
def text_stream(source: TraceInput | TraceSource) -> Iterator[Iterator[str]]:
    """The decoded lines of ``source`` (a path, bytes, a file, or an opened TraceSource; gzip is
    looked through), closed afterwards when it was opened here."""
    with open_source(source) as opened:
        yield opened.lines(max_line=MAX_LINE_BYTES)


# -- local wall-clock times -------------------------------------------------------------------

_ABSENT_TIMES = {"", "unknown", "none", "null", "nan", "n/a", "invalid"}


def zone_named(name: str) -> ZoneInfo:
    """The IANA time zone a trace's wall-clock times were written in (``timezone=`` option)."""
    try:
        return ZoneInfo(str(name))
    except (ZoneInfoNotFoundError, ValueError):
        raise InputError(
            f"{name!r} is not a time zone name (like UTC or Europe/Berlin)", field="timezone"
        ) from None


def parse_local_time(cell: str | None, row: int, field: str, zone: ZoneInfo) -> float | None:
    """A timestamp written without an offset (``2024-03-01T12:00:00``, ``2020-06-09 18:41:01``) as
    Unix seconds, reading it as wall-clock time in ``zone``; ``None`` for an empty cell or Slurm's
    ``Unknown`` / ``None``. A timestamp with an offset keeps its own."""
    text = (cell or "").strip()
    if text.lower() in _ABSENT_TIMES:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"{text!r} is not a timestamp (like 2024-03-01T12:00:00)", row=row, field=field
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=zone)
    return check_time_range(epoch_seconds(stamp), repr(text), row, field)


# -- delimited text, row by row ----------------------------------------------------------------


class CsvTable:
    """A delimited file read one row at a time, with its columns known by name. The header is the
    first line unless ``fieldnames`` is given (files without one: sacct --noheader, PAI tables)."""

    def __init__(
        self, stream: Iterable[str], *, fieldnames: Iterable[str] | None = None, delimiter: str = ","
    ):
        self._reader = csv.reader(stream, delimiter=delimiter)
        self.data_row = 0
        if fieldnames is None:
            header = self._next()
            if header is None:
                raise InputError("the file is empty: expected a header line")
        else:
            header = list(fieldnames)
        for position, name in enumerate(header):
            if "\x00" in name:  # before its name is shown anywhere (PostgreSQL stores no NUL)
                raise InputError("contains a NUL byte", field=f"header column {position + 1}")
        self.columns = [name.strip().lstrip("\ufeff") for name in header]
        self.index = {name: i for i, name in enumerate(self.columns) if name}

    def _next(self) -> list[str] | None:
        try:
            return next(self._reader)
        except StopIteration:
            return None
        except csv.Error as err:
            raise InputError(f"cannot be read as delimited text: {err}", row=self.data_row + 1) from None

    def has(self, name: str) -> bool:
        return name in self.index

    def require(self, *names: str) -> None:
        for name in names:
            if name not in self.index:
                raise InputError(
                    f"the column is missing; the file has: {', '.join(self.columns)}", field=name
                )

    def first_present(self, *names: str) -> str | None:
        return next((name for name in names if name in self.index), None)

    def rows(self, limit: int | None = None) -> Iterator[tuple[int, list[str]]]:
        """``(data row number, cells)``, skipping blank lines; a short row is an error naming the
        first column it lacks. Stops after ``limit`` data rows."""
        width = len(self.columns)
        blank = 0
        while limit is None or self.data_row < limit:
            cells = self._next()
            if cells is None:
                return
            if not cells or (len(cells) == 1 and not cells[0].strip()):
                blank += 1
                if blank > MAX_BLANK_LINES:
                    raise too_many_blank_lines(MAX_BLANK_LINES, self.data_row + 1)
                continue
            self.data_row += 1
            if len(cells) < width:
                missing = self.columns[len(cells)]
                raise InputError(
                    f"the row has {len(cells)} cells but the header has {width}",
                    row=self.data_row,
                    field=missing,
                )
            yield self.data_row, cells


# -- preview for the upload page ------------------------------------------------------------


IMPORTERS = {
    "slurm-sacct": "scheduling.traces.sacct",
    "itp-2021": "scheduling.traces.itp",
    "alibaba-openb-2023": "scheduling.traces.openb",
    "helios": "scheduling.traces.helios",
    "philly": "scheduling.traces.helios",
    "alibaba-pai-2020": "scheduling.traces.pai",
    "aws-batch-jobs": "scheduling.traces.aws_batch_jobs",
    "kueue-workloads": "scheduling.traces.kueue_workloads",
}


def csv_columns(source: Any, **options: Any) -> list[str]:
    """The header of a CSV trace: the columns a mapping may use (``source_columns`` of the CSV formats
    whose columns are their file's)."""
    with text_stream(source) as stream:
        return CsvTable(stream).columns


def importer(format: str) -> Any:
    """The module that imports ``format`` (it has ``read``, ``source_columns`` and ``DEFAULT_MAPPING``)."""
    if format not in IMPORTERS:
        raise InputError(
            f"{format!r} is not an importable format; known: {', '.join(IMPORTERS)}", field="format"
        )
    return importlib.import_module(IMPORTERS[format])


def columns(source: Any, format: str, **options: Any) -> list[str]:
    """The source columns a mapping may name, for the upload form's choices."""
    return importer(format).source_columns(source, **_format_options(format, options))


def _format_options(format: str, options: dict[str, Any]) -> dict[str, Any]:
    # helios.py reads both layouts; which one is a read option
    return {**options, "layout": format} if format in ("helios", "philly") else options


def preview(
    source: Any,
    format: str,
    mapping: TraceMapping | Mapping[str, Any] | None = None,
    rows: int = 20,
    **options: Any,
) -> list[dict[str, Any]]:
    """The first ``rows`` jobs exactly as they would be imported (after folding, skipping and the
    mapping), read from the start of the source only. ``rank`` priorities are ranked within what
    was read."""
    source_rows = max(1000, rows * 50)
    trace = importer(format).read(
        source, mapping=mapping, source_rows=source_rows, allow_empty=True, **_format_options(format, options)
    )
    return [] if trace is None else trace_rows(trace, rows)


def trace_rows(trace: Trace, rows: int) -> list[dict[str, Any]]:
    """The first ``rows`` jobs of a trace as plain dicts (JSON-able)."""
    out = []
    for i in range(min(rows, len(trace))):
        code = int(trace.instance_type[i])
        item: dict[str, Any] = {
            "job_id": trace.job_id[i],
            "submit_time": float(trace.submit_time[i]),
            "share": trace.share_names[int(trace.share[i])],
            "priority": int(trace.priority[i]),
            "instance_type": trace.type_names[code] if code >= 0 else None,
            "instance_count": int(trace.instance_count[i]),
            "duration": float(trace.duration[i]),
        }
        if trace.user is not None:
            item["user"] = trace.user[i] or None
        if trace.name is not None:
            item["name"] = trace.name[i] or None
        if trace.recorded_start is not None:
            start = float(trace.recorded_start[i])
            item["recorded_start"] = None if math.isnan(start) else start
        if trace.recorded_preemptions is not None:
            count = int(trace.recorded_preemptions[i])
            item["recorded_preemptions"] = None if count < 0 else count
        out.append(item)
    return out


# -- small parsers for from_dict ---------------------------------------------------------------


def _optional_name(value: Any, where: str) -> str | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if not isinstance(value, str):
        raise InputError(f"{value!r} is not text", field=where)
    return value.strip()


def _name_table(value: Any, where: str) -> dict[str, str]:
    if not isinstance(value, Mapping):
        raise InputError("must be an object of source value -> name", field=where)
    table = {}
    for key, name in value.items():
        if not isinstance(name, str) or not name.strip():
            raise InputError(f"{name!r} is not a name", field=f"{where}.{key}")
        table[str(key)] = name.strip()
    return table


def _priority_table(value: Any) -> dict[str, int]:
    if not isinstance(value, Mapping):
        raise InputError("must be an object of source value -> priority", field="mapping.priority_map")
    table = {}
    for key, number in value.items():
        if isinstance(number, bool) or not isinstance(number, int) or not 0 <= number <= MAX_PRIORITY:
            raise InputError(
                f"{number!r} is not a whole number in 0..{MAX_PRIORITY}", field=f"mapping.priority_map.{key}"
            )
        table[str(key)] = number
    return table
