"""Ids read from a query string or a form: ASCII digits only, within the database's id range.

``str.isdigit()`` is true for "²" and "٣", which ``int()`` refuses or reads, and a 20-digit id
overflows SQLite's integer: every page reads an id through ``query_id``, which answers None
(the parameter is ignored) for anything that is not an id a row could have.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

MAX_ID = 2**63 - 1  # BigAutoField, on SQLite and PostgreSQL alike


def parse_id(value: Any) -> int | None:
    """``value`` as a row id (1 to MAX_ID), or None when it cannot be one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 < value <= MAX_ID else None
    text = str(value if value is not None else "").strip()
    if not text or len(text) > 19 or not (text.isascii() and text.isdigit()):
        return None
    number = int(text)
    return number if 0 < number <= MAX_ID else None


def parse_ids(values: Iterable[Any]) -> list[int]:
    """The values that are ids, in order (the others are dropped)."""
    return [number for number in map(parse_id, values) if number is not None]


def query_id(query, name: str) -> int | None:
    """The id in ``query[name]`` (a QueryDict), or None."""
    return parse_id(query.get(name))


def query_ids(query, name: str) -> list[int]:
    """Every id in ``query.getlist(name)``."""
    return parse_ids(query.getlist(name))
