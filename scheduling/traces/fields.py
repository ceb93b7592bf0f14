"""Cell parsers shared by every trace reader: times, seconds, whole numbers and text.

Each one raises InputError naming the row, the field and the bad value, so a reader never
has to word its own message for a malformed number or timestamp.
"""

from __future__ import annotations

import math
from datetime import UTC, datetime, timezone
from typing import Any

from scheduling.errors import InputError

MAX_TEXT_LENGTH = 256


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

    Returns ``(seconds, is_epoch)``; ``is_epoch`` is true for timestamps.
    """
    if is_absent(value):
        raise InputError("is empty: give seconds or an ISO-8601 timestamp", row=row, field=field)
    number = _number(value, row, field)
    if number is not None:
        if number < 0:
            raise InputError(f"{_show_number(value)} is negative", row=row, field=field)
        return number, False
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
    return stamp.timestamp(), True


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
