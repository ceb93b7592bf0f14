"""The planner CSV read by pyarrow's C parser in blocks, validated a column at a time.

The row-by-row reader (``planner._read_rows``) stays the definition of a valid trace and of every
message. This reader only goes faster: it checks whole columns with numpy, and when a row is bad it
hands that one row to the row-by-row checks (``TraceBuilder.resume_after``), so the message is the
one a row-by-row read gives. What it cannot judge cheaply (quotes, blank lines, lone carriage
returns, NUL bytes, text that is not UTF-8, a malformed row) makes it step aside: ``Unsupported``,
and the caller reads the file row by row from the start.
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from scheduling.errors import InputError
from scheduling.job_ids import JobIds
from scheduling.model import MAX_INSTANCES, MAX_PRIORITY
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES, PriorityUpdates, Trace
from scheduling.traces.builder import TraceBuilder
from scheduling.traces.fields import (
    MAX_LINE_BYTES,
    MAX_SECONDS,
    MAX_TEXT_LENGTH,
    TraceSource,
    parse_optional_int,
    parse_optional_seconds,
    parse_optional_time,
    parse_seconds,
    parse_time,
)

MIN_BLOCK = 64 * 1024
MAX_BLOCK = 4 * 1024 * 1024
MAX_COUNT = 2**31 - 1
_NAMES = pa.dictionary(pa.int32(), pa.string())
# What pyarrow converts while it parses; a block where a cell does not convert is parsed again as text.
TYPED = {
    "submit_time": pa.float64(),
    "duration": pa.float64(),
    "priority": pa.float64(),
    "instance_count": pa.float64(),
    "checkpoint_interval": pa.float64(),
    "preemption_retries": pa.float64(),
    "recorded_start": pa.float64(),
    "share": _NAMES,
    "instance_type": _NAMES,
    "user": _NAMES,
}


def _parse_pool() -> pa.MemoryPool:
    """The memory the parser's blocks come from: jemalloc where pyarrow has it. Each 4 MB block is
    parsed into fresh buffers and let go; pyarrow's default (mimalloc) kept so much of that freed
    memory that a million-job parse peaked at 4.0x the file's size, against 3.2x with jemalloc."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return pa.default_memory_pool()


POOL = _parse_pool()


class Unsupported(Exception):
    """The file needs the row-by-row reader (its messages, or CSV this reader does not judge)."""


def _blocks(stream, block_size: int):
    """The data rows of the decompressed stream in blocks of whole lines (the header line
    dropped), each checked for what only the row-by-row reader judges: a quote (csv's quoting
    rules), a blank line (skipped there but counted), a carriage return not ending a line, a NUL
    byte. Read here, not by pyarrow, so that nothing is read ahead of the row limit."""
    carry = stream.read(block_size)
    if carry.startswith(b"\xef\xbb\xbf"):
        carry = carry[3:]
    if b"\n" not in carry:  # a long first line: each new piece searched once, joined once
        pieces = [carry]
        while b"\n" not in pieces[-1]:
            more = stream.read(block_size)
            if not more:
                raise Unsupported("a header alone")
            pieces.append(more)
        carry = b"".join(pieces)
    carry = carry[carry.index(b"\n") + 1 :]
    at_end = False
    while not at_end:
        more = stream.read(block_size)
        at_end = not more
        data = carry + more if carry else more
        cut = len(data) if at_end else data.rfind(b"\n") + 1
        if cut == 0:
            if len(data) > MAX_LINE_BYTES:  # no row is this long: the row-by-row reader says where
                raise Unsupported("a line too long")
            carry = data
            continue
        if b'"' in data:
            raise Unsupported("quotes")
        if b"\x00" in data:
            raise Unsupported("NUL bytes")
        if data.startswith((b"\n", b"\r\n")) or b"\n\n" in data or b"\n\r\n" in data:
            raise Unsupported("blank lines")
        if b"\r" in data and data.count(b"\r", 0, cut) != data.count(b"\r\n", 0, cut):
            raise Unsupported("carriage returns inside lines")
        block = memoryview(data)[:cut]
        carry = data[cut:]
        if not block:
            continue
        yield block


@dataclass
class _Columns:
    """What the blocks that passed hold, per field (numpy pieces, joined at the end)."""

    job_id: list[pa.Array] = field(default_factory=list)  # Arrow pieces: never Python strings
    ids: JobIds | None = None  # the pieces as one column, once joined
    pieces: dict[str, list[np.ndarray]] = field(default_factory=dict)
    user: list[str] = field(default_factory=list)
    name: list[str] = field(default_factory=list)
    any_user: bool = False
    any_name: bool = False
    any_recorded: bool = False
    share_codes: dict[str, int] = field(default_factory=dict)
    type_codes: dict[str, int] = field(default_factory=dict)
    epoch: bool | None = None
    rows: int = 0

    def add(self, name: str, values: np.ndarray) -> None:
        self.pieces.setdefault(name, []).append(values)

    def job_ids(self) -> JobIds:
        """The ids read so far as one column (the pieces joined once, then kept as that column,
        with what it works out about itself: the check for repeats sorts it, the replay ranks by
        that order)."""
        if len(self.job_id) != 1:  # (new pieces since: joined, and the column made again)
            self.job_id = [JobIds(pa.chunked_array(self.job_id, type=pa.string())).arrow]
            self.ids = None
        if self.ids is None:
            self.ids = JobIds(self.job_id[0])
        return self.ids

    def column(self, name: str, dtype: Any, default: float | int) -> np.ndarray:
        # the pieces let go as the column is made: a parse holds each column once, not twice
        parts = self.pieces.pop(name, None)
        if not parts:
            return np.full(self.rows, default, dtype=dtype)
        return np.concatenate(parts).astype(dtype, copy=False)


def read_columnar(
    opened: TraceSource,
    index: dict[str, int],
    *,
    max_rows: int | None,
    add_job: Callable[[TraceBuilder, int, Callable[[str], Any]], None],
) -> Trace:
    """The planner CSV of ``opened`` (whose header gave ``index``) as a Trace; InputError with the
    row-by-row reader's message for the first bad row; Unsupported when that reader must judge."""
    names = sorted(index, key=index.get)
    parse = pa_csv.ParseOptions(quote_char=False, ignore_empty_lines=False, newlines_in_values=False)
    typed = pa_csv.ConvertOptions(
        column_types={name: TYPED.get(name, pa.string()) for name in names},
        null_values=[""],
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    text = pa_csv.ConvertOptions(
        column_types={name: pa.string() for name in names},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
    )
    columns = _Columns()
    try:
        for block in _blocks(opened.rewound(), _block_size(opened, max_rows)):
            buffer = pa.py_buffer(block)
            # one batch per block, so that a row's place in the block is its place in the batch
            read = pa_csv.ReadOptions(column_names=names, use_threads=False, block_size=len(block) + 1)

            def as_text(buffer=buffer, read=read) -> pa.RecordBatch:
                table = pa_csv.read_csv(
                    buffer, read_options=read, parse_options=parse, convert_options=text, memory_pool=POOL
                )
                return table.to_batches()[0]

            try:  # numbers parsed as numbers: the common case
                table = pa_csv.read_csv(
                    buffer, read_options=read, parse_options=parse, convert_options=typed, memory_pool=POOL
                )
                batch = table.to_batches()[0]
            except pa.ArrowInvalid:  # a cell that is no plain number: every cell as text, judged below
                batch = as_text()
            _take_block(batch, as_text, names, columns, max_rows, add_job)
            if max_rows is not None and columns.rows >= max_rows + 1:
                break
    except (pa.ArrowException, OSError, EOFError, zlib.error) as error:
        raise Unsupported(str(error)[:200]) from None
    _check_unique(columns, max_rows)
    if columns.rows == 0:
        raise Unsupported("no rows")
    return _trace(columns)


def _block_size(opened: TraceSource, max_rows: int | None) -> int:
    """Blocks of a few MB; under a small row limit, blocks of about the limit's rows, so that a
    file far over it is refused having read little of it."""
    if max_rows is None:
        return MAX_BLOCK
    head = opened.head(MIN_BLOCK)
    per_row = max(1.0, len(head.encode("utf-8", "replace")) / max(1, head.count("\n")))
    return int(min(MAX_BLOCK, max(MIN_BLOCK, (max_rows + 2) * per_row * 1.25)))


# ---------------------------------------------------------------------------------------
# One block


def _take_block(
    batch: pa.RecordBatch,
    as_text: Callable[[], pa.RecordBatch],
    names: list[str],
    columns: _Columns,
    max_rows: int | None,
    add_job: Callable[[TraceBuilder, int, Callable[[str], Any]], None],
) -> None:
    """Check one block's columns and keep them; for its first bad row, the row-by-row message.
    ``as_text()`` is the block with every cell as written (for that message)."""
    n = batch.num_rows
    if n == 0:
        return
    first_row = columns.rows + 1  # rows are numbered from 1 after the header; no blank lines here
    cells = {name: batch.column(i) for i, name in enumerate(names)}
    bad = np.zeros(n, dtype=bool)
    block: dict[str, np.ndarray] = {}
    epoch = _block_times(cells, columns, block, bad)
    _block_numbers(cells, block, bad)
    ids, bad_ids = _ids(cells["job_id"])
    bad |= bad_ids
    share, bad_share = _codes(cells["share"], columns.share_codes, required=True)
    bad |= bad_share
    if "instance_type" in cells:
        block["instance_type"], bad_type = _codes(cells["instance_type"], columns.type_codes, required=False)
        bad |= bad_type
    extra = _block_texts(cells, bad)

    limit_at = None if max_rows is None or columns.rows + n <= max_rows else max_rows - columns.rows
    if bad.any() or limit_at is not None:
        at = int(np.flatnonzero(bad)[0]) if bad.any() else n
        if limit_at is not None:
            at = min(at, limit_at)
        columns.job_id.append(ids[:at])  # a repeated job id before it is the first error
        _check_unique(columns, max_rows)
        _refuse(as_text(), names, at, first_row, columns, max_rows, add_job)

    columns.job_id.append(ids)
    columns.add("share", share)
    for name, values in block.items():
        columns.add(name, values)
    for name, values in extra.items():
        _keep_texts(columns, name, values)
    columns.epoch = epoch
    columns.rows += n


def _block_times(
    cells: dict[str, pa.Array], columns: _Columns, block: dict[str, np.ndarray], bad: np.ndarray
) -> bool:
    """submit_time and recorded_start into ``block``, their bad rows marked in ``bad``; the kind of
    time of the trace (ISO timestamps or seconds), which every time given must share."""
    submit, submit_epoch, bad_submit = _times(cells["submit_time"], required=True)
    bad |= bad_submit
    block["submit_time"] = submit
    epochs = [submit_epoch]
    if "recorded_start" in cells:
        recorded, recorded_epoch, bad_recorded = _times(cells["recorded_start"], required=False)
        bad |= bad_recorded
        block["recorded_start"] = recorded
        present = ~np.isnan(recorded) | bad_recorded
        columns.any_recorded = columns.any_recorded or bool(np.any(~np.isnan(recorded)))
        epochs.append(np.where(present, recorded_epoch, submit_epoch))
    # the first row read decides the kind (as the row-by-row reader's mark_epoch_times does)
    epoch = columns.epoch if columns.epoch is not None else bool(submit_epoch[0])
    for kinds in epochs:
        bad |= kinds != epoch
    return epoch


def _block_numbers(cells: dict[str, pa.Array], block: dict[str, np.ndarray], bad: np.ndarray) -> None:
    """duration, checkpoint_interval and the whole numbers into ``block``, bad rows marked."""
    block["duration"], bad_duration = _seconds(cells["duration"], required=True, allow_zero=True)
    bad |= bad_duration
    if "checkpoint_interval" in cells:
        block["checkpoint_interval"], bad_checkpoint = _seconds(
            cells["checkpoint_interval"], required=False, allow_zero=False
        )
        bad |= bad_checkpoint
    for name, low, high, default in (
        ("priority", 0, MAX_PRIORITY, 0),
        ("instance_count", 1, MAX_INSTANCES, 1),
        ("preemption_retries", 0, None, UNLIMITED_RETRIES),
    ):
        if name in cells:
            values, bad_values = _wholes(cells[name], low, high, default)
            bad |= bad_values
            block[name] = values


def _block_texts(cells: dict[str, pa.Array], bad: np.ndarray) -> dict[str, list[str]]:
    """The optional free texts (user, name) of the block, bad rows marked."""
    extra: dict[str, list[str]] = {}
    for name in ("user", "name"):
        if name in cells:
            values, bad_values = _texts(cells[name], required=False)
            bad |= bad_values
            extra[name] = values
    return extra


def _keep_texts(columns: _Columns, name: str, values: list) -> None:
    """Append a block's user or name column; rows of earlier blocks without the column get ""."""
    target = columns.user if name == "user" else columns.name
    if len(target) < columns.rows:
        target.extend([""] * (columns.rows - len(target)))
    target.extend("" if v is None else v for v in values)
    if any(v is not None for v in values):
        if name == "user":
            columns.any_user = True
        else:
            columns.any_name = True


def _check_unique(columns: _Columns, max_rows: int | None) -> None:
    """Raise the row-by-row message for the first repeated job id among the rows read so far."""
    repeat = columns.job_ids().first_repeat()
    if repeat is None:
        return
    position, earlier = repeat
    job, row, first = columns.job_ids()[position], position + 1, earlier + 1
    builder = TraceBuilder(max_rows=max_rows, source="planner CSV").resume_after(
        position, earlier_row_of={job: first}, epoch=(bool(columns.epoch), 1)
    )
    raise builder._fail(f"{job!r} is a duplicate of row {first}", row, "job_id")


def _refuse(batch, names, at: int, first_row: int, columns: _Columns, max_rows, add_job) -> None:
    """Raise the row-by-row reader's error for the block's row ``at`` (all rows before it passed)."""
    row = first_row + at
    values = {name: batch.column(i)[at].as_py() for i, name in enumerate(names)}
    builder = TraceBuilder(max_rows=max_rows, source="planner CSV")
    earlier: dict[str, int] = {}
    job = (values.get("job_id") or "").strip()
    position = columns.job_ids().find(job) if columns.job_id else -1
    if position >= 0:
        earlier[job] = position + 1
    builder.resume_after(
        row - 1,
        earlier_row_of=earlier,
        epoch=None if columns.epoch is None and at == 0 else (_epoch_of(batch, names, columns), 1),
    )
    add_job(builder, row, values.get)
    raise Unsupported(f"row {row} passed the row-by-row checks")  # a check here is stricter than it


def _epoch_of(batch, names, columns: _Columns) -> bool:
    if columns.epoch is not None:
        return columns.epoch
    return parse_time(batch.column(names.index("submit_time"))[0].as_py(), 1, "submit_time")[1]


# ---------------------------------------------------------------------------------------
# Columns: numbers through pyarrow's cast when every cell is a plain number; else each cell through
# the row-by-row parser (exact, slower: timestamps, numbers with spaces around them).


def _cast(cells: pa.Array) -> tuple[np.ndarray, np.ndarray] | None:
    """(values, empty) when every non-empty cell is a number pyarrow reads; None otherwise."""
    if pa.types.is_floating(cells.type):
        empty = cells.is_null().to_numpy(zero_copy_only=False)
        return cells.fill_null(math.nan).to_numpy(zero_copy_only=False), empty
    empty = pc.equal(cells, "")
    try:
        values = pc.cast(pc.if_else(empty, "nan", cells), pa.float64())
    except pa.ArrowInvalid:
        return None
    return values.to_numpy(zero_copy_only=False), empty.to_numpy(zero_copy_only=False)


def _each(cells: pa.Array, parse: Callable[[Any], Any]) -> tuple[list[Any], np.ndarray]:
    """Every cell through ``parse``; None and a bad mark where it raises InputError."""
    out: list[Any] = []
    bad = np.zeros(len(cells), dtype=bool)
    for i, value in enumerate(cells.to_pylist()):
        try:
            out.append(parse(value))
        except InputError:
            out.append(None)
            bad[i] = True
    return out, bad


def _times(cells: pa.Array, *, required: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(seconds, is ISO timestamp, bad); absent optional cells are nan."""
    cast = _cast(cells)
    if cast is not None:
        values, empty = cast
        with np.errstate(invalid="ignore"):
            wrong = ~np.isfinite(values) | (values < 0) | (values > MAX_SECONDS)
        bad = wrong if required else wrong & ~empty
        return np.where(empty, math.nan, values), np.zeros(len(values), dtype=bool), bad
    parse = parse_time if required else parse_optional_time
    parsed, bad = _each(cells, lambda value: parse(value, None, None))
    seconds = np.array([math.nan if p is None else p[0] for p in parsed], dtype=np.float64)
    epoch = np.array([p is not None and p[1] for p in parsed], dtype=bool)
    return seconds, epoch, bad


def _seconds(cells: pa.Array, *, required: bool, allow_zero: bool) -> tuple[np.ndarray, np.ndarray]:
    cast = _cast(cells)
    if cast is not None:
        values, empty = cast
        with np.errstate(invalid="ignore"):
            low = values < 0 if allow_zero else values <= 0
            wrong = ~np.isfinite(values) | low | (values > MAX_SECONDS)
        return np.where(empty, math.nan, values), wrong if required else wrong & ~empty
    if required:
        parsed, bad = _each(cells, lambda value: parse_seconds(value, None, None, allow_zero=allow_zero))
    else:
        parsed, bad = _each(
            cells, lambda value: parse_optional_seconds(value, None, None, allow_zero=allow_zero)
        )
    return np.array([math.nan if p is None else p for p in parsed], dtype=np.float64), bad


def _wholes(cells: pa.Array, low: int, high: int | None, default: int) -> tuple[np.ndarray, np.ndarray]:
    """Optional whole numbers in [low, high]; absent cells take ``default``; values past 2^31 - 1
    are clamped (only preemption_retries has no maximum: the builder clamps it too)."""
    cast = _cast(cells)
    if cast is not None:
        values, empty = cast
        with np.errstate(invalid="ignore"):
            wrong = ~np.isfinite(values) | (np.floor(values) != values) | (values < low)
            if high is not None:
                wrong |= values > high
        wrong &= ~empty
        clean = np.where(empty | wrong, default, np.minimum(values, MAX_COUNT))
        return clean.astype(np.int64), wrong
    parsed, bad = _each(cells, lambda value: parse_optional_int(value, None, None, minimum=low))
    values = [default if p is None else min(p, MAX_COUNT) for p in parsed]
    wrong = bad | np.array([p is not None and high is not None and p > high for p in parsed], dtype=bool)
    return np.array(values, dtype=np.int64), wrong


# What str.strip() removes, among ASCII characters: \t \n \v \f \r, \x1c-\x1f and the space.
_EDGE_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f "


def _stripped(cells: pa.Array) -> bool:
    """Whether str.strip() would leave every cell as it is (decided for ASCII text only)."""
    if not pc.all(pc.string_is_ascii(cells)).as_py():
        return False
    trimmed = pc.utf8_trim(cells, characters=_EDGE_SPACE)
    return pc.sum(pc.binary_length(cells)).as_py() == pc.sum(pc.binary_length(trimmed)).as_py()


def _text_ok(text: str) -> bool:
    return "\x00" not in text and len(text) <= MAX_TEXT_LENGTH


def _texts(cells: pa.Array, *, required: bool) -> tuple[list, np.ndarray]:
    """Stripped texts (None when absent and optional); bad: absent and required, NUL, too long."""
    if pa.types.is_dictionary(cells.type):
        cells = cells.cast(pa.string())
    texts = cells.to_pylist()
    if not _stripped(cells):
        texts = [value.strip() for value in texts]
    bad = np.zeros(len(texts), dtype=bool)
    long = pc.greater(pc.utf8_length(cells), MAX_TEXT_LENGTH).to_numpy(zero_copy_only=False)
    for i in np.flatnonzero(long):
        bad[i] = not _text_ok(texts[i])
    if "" in texts:
        empty = np.array([not text for text in texts], dtype=bool)
        if required:
            bad |= empty
        else:
            texts = [text or None for text in texts]
    return texts, bad


def _ids(cells: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Job ids stripped, as Arrow text (never Python strings when none needs stripping); bad:
    empty or too long (a NUL never reaches here: ``_blocks`` sends such files row by row)."""
    if pa.types.is_dictionary(cells.type):
        cells = cells.cast(pa.string())
    if not _stripped(cells):
        cells = pa.array([value.strip() for value in cells.to_pylist()], type=pa.string())
    length = pc.utf8_length(cells).to_numpy(zero_copy_only=False)
    return cells, (length == 0) | (length > MAX_TEXT_LENGTH)


def _codes(cells: pa.Array, codes: dict[str, int], *, required: bool) -> tuple[np.ndarray, np.ndarray]:
    """Names as codes into ``codes`` (first seen, first numbered); absent optional: NO_TYPE."""
    encoded = cells if pa.types.is_dictionary(cells.type) else pc.dictionary_encode(cells)
    per_value = []
    wrong = []
    for value in encoded.dictionary.to_pylist():
        text = value.strip()
        if not text:
            per_value.append(NO_TYPE)
            wrong.append(required)
        elif not _text_ok(text):
            per_value.append(NO_TYPE)
            wrong.append(True)
        else:
            per_value.append(codes.setdefault(text, len(codes)))
            wrong.append(False)
    positions = encoded.indices.to_numpy(zero_copy_only=False)
    return np.array(per_value, dtype=np.int64)[positions], np.array(wrong, dtype=bool)[positions]


def _trace(columns: _Columns) -> Trace:
    n = columns.rows
    for target in (columns.user, columns.name):
        target.extend([""] * (n - len(target)))
    return Trace(
        job_id=columns.job_ids(),
        submit_time=columns.column("submit_time", np.float64, math.nan),
        share=columns.column("share", np.int32, 0),
        share_names=list(columns.share_codes),
        priority=columns.column("priority", np.int32, 0),
        instance_type=columns.column("instance_type", np.int32, NO_TYPE),
        type_names=list(columns.type_codes),
        instance_count=columns.column("instance_count", np.int32, 1),
        duration=columns.column("duration", np.float64, math.nan),
        checkpoint_interval=columns.column("checkpoint_interval", np.float64, math.nan),
        preemption_retries=columns.column("preemption_retries", np.int32, UNLIMITED_RETRIES),
        user=columns.user if columns.any_user else None,
        name=columns.name if columns.any_name else None,
        recorded_start=columns.column("recorded_start", np.float64, math.nan)
        if columns.any_recorded
        else None,
        updates=PriorityUpdates.empty(),
        epoch_times=bool(columns.epoch),
    )
