"""What every trace reader shares below the builder: opening a source and parsing cells.

A source (path, bytes, binary or text file object, gzip or not) is read as UTF-8 lines; the
cell parsers (times, seconds, whole numbers, text) raise InputError naming the row, the field
and the bad value, so a reader never words its own message for a malformed number.
"""

from __future__ import annotations

import gzip
import io
import math
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timezone
from pathlib import Path
from typing import IO, Any

from scheduling.errors import InputError

MAX_TEXT_LENGTH = 256
# Blank lines are skipped, but each costs a turn of a reader's loop: a file of nothing else (a
# gigabyte of newlines is a 1 MB gzip) is refused once it has this many.
MAX_BLANK_LINES = 1_000_000


# A line of delimited text (CSV, sacct's table) longer than this is no row of a trace (a row holds a
# dozen cells of at most 256 characters): refused as it is read, not after a gigabyte of it.
MAX_LINE_BYTES = 1024 * 1024


class LineTooLong(InputError):
    """A line of delimited text past MAX_LINE_BYTES; ``line`` is its 1-based physical line."""

    def __init__(self, line: int, limit: int):
        self.line = line
        super().__init__(f"line {line} is longer than {limit:,} bytes: not a line of a delimited text file")


def too_many_blank_lines(limit: int, row: int | None = None) -> InputError:
    return InputError(
        f"more than {limit:,} blank lines: the file holds no trace, or was cut wrongly", row=row
    )


# Times and durations beyond 10^10 seconds (about 317 years; as a Unix time, 2286) are refused:
# no trace runs that long, and replaying one would count millions of empty days.
MAX_SECONDS = 1e10


def is_absent(value: Any) -> bool:
    """An empty cell, a JSON null or a blank string: the field takes its default."""
    return value is None or (isinstance(value, str) and not value.strip())


def _show(value: Any) -> str:
    """The bad value as the person wrote it: quoted when it is text, shortened when long."""
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _show_number(value: Any) -> str:
    """A value that parsed as a number, shown as written (``-5``, not ``'-5'``)."""
    if isinstance(value, str):
        return value.strip()
    return f"{value:g}" if isinstance(value, float) else str(value)


def _number(value: Any, row: int | None, field: str | None) -> float | None:
    """The value as a finite float, ``None`` when it is not a number at all."""
    if isinstance(value, bool):
        raise InputError(f"{value} is not a number", row=row, field=field)
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            return None
    else:
        raise InputError(f"{_show(value)} is not a number", row=row, field=field)
    if not math.isfinite(number):
        raise InputError(f"{_show(value)} is not a finite number", row=row, field=field)
    return number


def naive_timestamp_zone() -> timezone:
    """ISO-8601 timestamps without an offset are taken as UTC **(choice)**: traces are
    exported from servers, and a server's local zone is not knowable from the file."""
    return UTC


def parse_time(value: Any, row: int | None, field: str | None) -> tuple[float, bool]:
    """Seconds (a number, from any origin) or an ISO-8601 timestamp (-> Unix seconds).

    Returns ``(seconds, is_epoch)``; ``is_epoch`` is true for timestamps. Both kinds obey one
    range, ``check_time_range``: a timestamp before 1970 is refused as -1 is.
    """
    if is_absent(value):
        raise InputError("is empty: give seconds or an ISO-8601 timestamp", row=row, field=field)
    number = _number(value, row, field)
    if number is not None:
        return check_time_range(number, _show_number(value), row, field), False
    text = value.strip()
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(
            f"{_show(value)} is neither seconds nor an ISO-8601 timestamp (like 2024-05-01T09:30:00Z)",
            row=row,
            field=field,
        ) from None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=naive_timestamp_zone())
    return check_time_range(epoch_seconds(stamp), _show(value), row, field), True


# The one range of every time a user gives (trace cells, calendar changes, training plans, the
# history readers' timestamps): from 0 (1970-01-01, Unix time 0) to MAX_SECONDS (2286-11-20).
# A number and a timestamp get the same message, so "-1" and "0001-01-01" are refused alike.
EARLIEST_TIME = "1970-01-01T00:00:00Z"
LATEST_TIME = "2286-11-20T17:46:40Z"


def check_time_range(seconds: float, shown: str, row: int | None, field: str | None) -> float:
    """``seconds`` when it lies in [0, MAX_SECONDS], else InputError showing the value as written."""
    if seconds < 0:
        raise InputError(
            f"{shown} is before {EARLIEST_TIME} (a negative time): times are seconds from 0 or "
            "ISO-8601 timestamps from 1970 on",
            row=row,
            field=field,
        )
    if seconds > MAX_SECONDS:
        raise InputError(
            f"{shown} is after {LATEST_TIME} (1e+10 seconds), the latest time accepted", row=row, field=field
        )
    return seconds


def epoch_seconds(stamp: datetime) -> float:
    """Unix seconds of an aware datetime, also for years before 1970 or after 2286 (where some
    platforms' ``timestamp()`` overflows): the range check is the caller's."""
    return (stamp - datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()


def parse_seconds(value: Any, row: int | None, field: str | None, *, allow_zero: bool = True) -> float:
    """A non-negative, finite number of seconds (strictly positive unless ``allow_zero``)."""
    if is_absent(value):
        raise InputError("is empty: give a number of seconds", row=row, field=field)
    number = _number(value, row, field)
    if number is None:
        raise InputError(f"{_show(value)} is not a number of seconds", row=row, field=field)
    if number < 0:
        raise InputError(f"{_show_number(value)} is negative", row=row, field=field)
    if number == 0 and not allow_zero:
        raise InputError(f"{_show_number(value)} must be more than 0", row=row, field=field)
    if number > MAX_SECONDS:
        raise InputError(f"{_show_number(value)} is beyond {MAX_SECONDS:.0e} seconds", row=row, field=field)
    return number


def parse_int(
    value: Any, row: int | None, field: str | None, *, minimum: int | None = None, maximum: int | None = None
) -> int:
    """A whole number (``3`` or ``3.0``, not ``3.5``) within ``[minimum, maximum]``."""
    if is_absent(value):
        raise InputError("is empty: give a whole number", row=row, field=field)
    number = _number(value, row, field)
    if number is None:
        raise InputError(f"{_show(value)} is not a whole number", row=row, field=field)
    if not number.is_integer():
        raise InputError(f"{_show_number(value)} is not a whole number", row=row, field=field)
    whole = int(number)
    if minimum is not None and whole < minimum:
        if maximum is not None:
            raise InputError(f"{_show_number(value)} is outside {minimum}..{maximum}", row=row, field=field)
        raise InputError(f"{_show_number(value)} is below the minimum {minimum}", row=row, field=field)
    if maximum is not None and whole > maximum:
        if minimum is not None:
            raise InputError(f"{_show_number(value)} is outside {minimum}..{maximum}", row=row, field=field)
        raise InputError(f"{_show_number(value)} is above the maximum {maximum}", row=row, field=field)
    return whole


def parse_text(value: Any, row: int | None, field: str | None) -> str:
    """A non-empty name (job id, share, type, user): no NUL bytes, at most 256 characters."""
    if is_absent(value):
        raise InputError("is empty", row=row, field=field)
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise InputError(f"{_show(value)} is not text", row=row, field=field)
    text = str(value).strip()
    check_text(text, row, field)
    return text


def check_text(text: str, row: int | None, field: str | None) -> None:
    if "\x00" in text:
        raise InputError("contains a NUL byte", row=row, field=field)
    if len(text) > MAX_TEXT_LENGTH:
        raise InputError(
            f"is {len(text)} characters long: the limit is {MAX_TEXT_LENGTH}", row=row, field=field
        )


def parse_optional_time(value: Any, row: int | None, field: str | None) -> tuple[float, bool] | None:
    return None if is_absent(value) else parse_time(value, row, field)


def parse_optional_seconds(
    value: Any, row: int | None, field: str | None, *, allow_zero: bool = True
) -> float | None:
    return None if is_absent(value) else parse_seconds(value, row, field, allow_zero=allow_zero)


def parse_optional_int(
    value: Any, row: int | None, field: str | None, *, minimum: int | None = None, maximum: int | None = None
) -> int | None:
    return None if is_absent(value) else parse_int(value, row, field, minimum=minimum, maximum=maximum)


def parse_optional_text(value: Any, row: int | None, field: str | None) -> str | None:
    return None if is_absent(value) else parse_text(value, row, field)


def parse_optional_types(value: Any, row: int | None, field: str | None) -> str | None:
    """An instance type, or (section 12) the types a job accepts: a JSON list of names, or names
    joined by ``|`` as in CSV. A list comes back joined by ``|``; each name is checked when the
    trace is bound to a policy."""
    if isinstance(value, (list, tuple)):
        if not value:
            raise InputError("an empty list of instance types", row=row, field=field)
        names = []
        for i, item in enumerate(value):
            name = parse_text(item, row, f"{field}[{i}]")
            if "|" in name:
                raise InputError(
                    f"{name!r}: a type in a list cannot hold '|'", row=row, field=f"{field}[{i}]"
                )
            names.append(name)
        return "|".join(names)
    return parse_optional_text(value, row, field)


# ---------------------------------------------------------------------------------------
# Opening a source: paths, bytes, binary or text file objects; gzip recognised by its magic.

GZIP_MAGIC = b"\x1f\x8b"
TraceInput = str | Path | bytes | IO[bytes] | IO[str]
# What a compressed source may decompress to, unless the caller says (the planner sets its own):
# a 1 MB gzip of a gigabyte of newlines kept a worker busy for a quarter of an hour.
MAX_DECOMPRESSED_BYTES = 2 * 1024**3


class TooLarge(InputError):
    """A compressed source that decompresses past its limit (a "gzip bomb", or a file too big)."""

    def __init__(self, limit: int):
        self.limit = limit
        super().__init__(
            f"the gzip data decompresses to more than {limit:,} bytes, the limit for a compressed "
            "file: send a smaller file, or split it",
            field="file",
        )


class _BoundedGzip(io.RawIOBase):
    """The decompressed bytes of a gzip stream, refused (TooLarge) past ``limit`` as they come, so a
    bomb costs the time to inflate ``limit`` bytes, never more."""

    def __init__(self, stream: IO[bytes], limit: int):
        super().__init__()
        self._gzip = gzip.GzipFile(fileobj=stream, mode="rb")
        self._limit = limit
        self.decompressed = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        # read1, not readinto: what one read of the compressed stream gives, so that the lines
        # before a truncation are read (and named in its error) before the truncation is met.
        data = self._gzip.read1(len(buffer))
        count = len(data)
        buffer[:count] = data
        self.decompressed += count
        if self.decompressed > self._limit:
            raise TooLarge(self._limit)
        return count


class UndecodableText(InputError):
    """A line that is not UTF-8; ``line`` is its 1-based physical line (the header is line 1).
    CSV readers turn it into a message naming the data row."""

    def __init__(self, line: int, detail: str):
        self.line = line
        self.detail = detail
        super().__init__(f"line {line} is not UTF-8 text ({detail}): save the file as UTF-8")


class TraceSource:
    """A trace file however it was handed over. ``name`` is its file name when known (for
    choosing a format by extension); ``head()`` peeks at the decompressed start without
    consuming anything; ``lines()`` and ``text()`` read it as UTF-8 (a BOM is dropped)."""

    def __init__(
        self,
        stream: IO,
        *,
        name: str = "",
        binary: bool = True,
        owned: bool = False,
        max_decompressed: int = MAX_DECOMPRESSED_BYTES,
    ):
        self.name = name
        self.max_decompressed = max_decompressed
        self._stream = stream
        self._binary = binary
        self._owned = owned
        self._start = stream.tell()
        self.compressed = binary and self._peek(2) == GZIP_MAGIC

    @classmethod
    def open(cls, source: TraceInput, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES) -> TraceSource:
        """``max_decompressed``: the most a gzip source may decompress to (TooLarge past it)."""
        if isinstance(source, (str, Path)):
            path = Path(source)
            try:
                stream = path.open("rb")
            except OSError as exc:
                raise InputError(f"cannot open {path}: {exc.strerror or exc}") from None
            return cls(stream, name=str(path), owned=True, max_decompressed=max_decompressed)
        if isinstance(source, (bytes, bytearray, memoryview)):
            return cls(io.BytesIO(bytes(source)), max_decompressed=max_decompressed)
        if not hasattr(source, "read"):
            raise InputError(f"cannot read a trace from a {type(source).__name__}")
        name = getattr(source, "name", "")
        name = name if isinstance(name, str) else ""
        binary = not isinstance(source.read(0), str)
        if not _rewindable(source):
            content = source.read()
            source = io.BytesIO(content) if binary else io.StringIO(content)
        return cls(source, name=name, binary=binary, max_decompressed=max_decompressed)

    def close(self) -> None:
        if self._owned:
            self._stream.close()

    def _peek(self, size: int) -> bytes:
        data = self._stream.read(size)
        self._stream.seek(self._start)
        return data

    def _rewind(self) -> IO:
        self._stream.seek(self._start)
        if self.compressed:
            return io.BufferedReader(_BoundedGzip(self._stream, self.max_decompressed), 1024 * 1024)
        return self._stream

    @property
    def binary(self) -> bool:
        return self._binary

    def rewound(self) -> IO:
        """The decompressed stream from the start (bytes for a binary source)."""
        return self._rewind()

    def head(self, size: int = 512) -> str:
        """The first ``size`` characters or so, decompressed and decoded leniently."""
        stream = self._rewind()
        try:
            data = stream.read(size)
        except (EOFError, OSError, zlib.error):
            data = b""
        finally:
            self._stream.seek(self._start)
        if isinstance(data, bytes):
            data = data.decode("utf-8", errors="replace")
        return data.lstrip("\ufeff")

    def lines(self, max_line: int | None = None) -> Iterator[str]:
        """Decoded lines with their line ends; raises UndecodableText, LineTooLong (a line over
        ``max_line`` bytes or characters) or InputError (gzip)."""
        stream = self._rewind()
        number = 0
        limited = -1 if max_line is None else max_line + 1
        try:
            while raw := stream.readline(limited):
                number += 1
                if max_line is not None and len(raw) > max_line and raw[-1:] not in (b"\n", "\n"):
                    raise LineTooLong(number, max_line)
                if isinstance(raw, bytes):
                    try:
                        line = raw.decode("utf-8")
                    except UnicodeDecodeError as exc:
                        raise UndecodableText(number, _byte_detail(raw, exc)) from None
                else:
                    line = raw
                if number == 1:
                    line = line.lstrip("\ufeff")
                yield line
        except UnicodeDecodeError as exc:
            raise UndecodableText(number + 1, _byte_detail(exc.object, exc)) from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"the gzip data is truncated or damaged after line {number} ({exc})") from None

    def text(self) -> str:
        """The whole content as one string."""
        stream = self._rewind()
        try:
            data = stream.read()
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise InputError(f"the gzip data is truncated or damaged ({exc})") from None
        if isinstance(data, str):
            return data.lstrip("\ufeff")
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise UndecodableText(line, _byte_detail(data, exc)) from None


def _rewindable(stream: IO) -> bool:
    try:
        position = stream.tell()
        stream.seek(position)
    except (AttributeError, OSError, ValueError):
        return False
    return True


def _byte_detail(data: bytes, exc: UnicodeDecodeError) -> str:
    bad = data[exc.start : exc.start + 1] if isinstance(data, (bytes, bytearray)) else b""
    return f"byte 0x{bad.hex()}" if bad else str(exc.reason)


@contextmanager
def open_source(
    source: TraceInput | TraceSource, *, max_decompressed: int = MAX_DECOMPRESSED_BYTES
) -> Iterator[TraceSource]:
    """A TraceSource for ``source``, closed afterwards if it was opened here."""
    if isinstance(source, TraceSource):
        yield source
        return
    opened = TraceSource.open(source, max_decompressed=max_decompressed)
    try:
        yield opened
    finally:
        opened.close()
