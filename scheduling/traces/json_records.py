"""JSON records read one at a time, whatever the exporting tool printed: concatenated objects, JSON
lines, a top-level array, or an object whose first key holds the list (kubectl's ``{"apiVersion": "v1",
"items": [...]}``, AWS's ``{"jobSummaryList": [...], "nextToken": ...}``). Only one record is held in
memory at a time, so a history of a million jobs streams; an object whose list is not its first key is
read whole (nothing else can be known about it before its end).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from scheduling.errors import InputError
from scheduling.traces.fields import TraceSource

_CHUNK = 1 << 16
_NEAR_END = 1 << 20
_WHITESPACE = re.compile(r"[ \t\r\n]*")
_DECODER = json.JSONDecoder()


@dataclass(frozen=True)
class JsonRecord:
    """One record: its 1-based number in the file, the list key it came from (``items``,
    ``jobSummaryList``; ``None`` for a record at the top level), its index there, and its value."""

    number: int
    container: str | None
    index: int
    value: Any

    @property
    def where(self) -> str:
        """Where the record is, for messages: ``items[3]`` or ``record 4``."""
        return f"{self.container}[{self.index}]" if self.container else f"record {self.number}"


class _Text:
    """The source's text in growing chunks, with a cursor; consumed text is dropped."""

    def __init__(self, source: TraceSource):
        self._lines = source.lines()
        self.buffer = ""
        self.pos = 0
        self.eof = False

    def more(self, at_least: int = _CHUNK) -> bool:
        """Read at least ``at_least`` more characters (or to the end); False at the end."""
        if self.eof:
            return False
        if self.pos > _CHUNK:
            self.buffer, self.pos = self.buffer[self.pos :], 0
        parts, size = [], 0
        for line in self._lines:
            parts.append(line)
            size += len(line)
            if size >= at_least:
                break
        else:
            self.eof = True
        self.buffer += "".join(parts)
        return bool(parts)

    def skip_space(self) -> str:
        """The next non-blank character without consuming it ('' at the end)."""
        while True:
            self.pos = _WHITESPACE.match(self.buffer, self.pos).end()
            if self.pos < len(self.buffer):
                return self.buffer[self.pos]
            if not self.more():
                return ""

    def value(self, number: int) -> Any:
        """The JSON value at the cursor; reads further until it is complete."""
        want = _CHUNK
        while True:
            try:
                value, end = _DECODER.raw_decode(self.buffer, self.pos)
            except json.JSONDecodeError as error:
                # An incomplete value fails near the end of what was read (an unterminated string at
                # its start): read more and try again. A failure far from the end is a real one.
                near_end = error.pos >= len(self.buffer) - _NEAR_END
                if near_end and self.more(want):
                    want = max(want, len(self.buffer) - self.pos)  # doubles: linear in total
                    continue
                raise InputError(f"record {number} is not valid JSON: {error.msg}") from None
            except (ValueError, RecursionError) as error:  # thousands of digits, nesting too deep
                raise InputError(f"record {number} cannot be read: {str(error)[:120]}") from None
            self.pos = end
            return value


def _streamed_list_key(text: _Text, list_keys: tuple[str, ...]) -> str | None:
    """The list key when the object at the cursor opens with ``"key": [`` (possibly after kubectl's
    ``"apiVersion": "v1",``); the cursor is then just inside the list."""
    while len(text.buffer) - text.pos < 4096 and text.more():
        pass
    head = text.buffer[text.pos : text.pos + 4096]
    keys = "|".join(re.escape(key) for key in list_keys)
    match = re.match(r'\{\s*(?:"apiVersion"\s*:\s*"[^"]*"\s*,\s*)?"(' + keys + r')"\s*:\s*\[', head)
    if match is None:
        return None
    text.pos += match.end()
    return match.group(1)


def iter_json_records(source: TraceSource, *, list_keys: tuple[str, ...] = ()) -> Iterator[JsonRecord]:
    """Each record of ``source``. A top-level object that holds one of ``list_keys`` as a list yields
    that list's elements instead of itself (its other keys are dropped). Raises InputError naming the
    record for anything that is not JSON."""
    text = _Text(source)
    number = 0
    while True:
        first = text.skip_space()
        if not first:
            return
        if first == "[":
            text.pos += 1
            for index, value in enumerate(_elements(text, number, "the top-level array")):
                number += 1
                yield JsonRecord(number, None, index, value)
            continue
        if first == "{" and list_keys:
            key = _streamed_list_key(text, list_keys)
            if key is not None:
                for index, value in enumerate(_elements(text, number, key)):
                    number += 1
                    yield JsonRecord(number, key, index, value)
                _rest_of_object(text, number)
                continue
        value = text.value(number + 1)
        if isinstance(value, dict):
            key = next((k for k in list_keys if isinstance(value.get(k), list)), None)
            if key is not None:
                for index, item in enumerate(value[key]):
                    number += 1
                    yield JsonRecord(number, key, index, item)
                continue
        number += 1
        yield JsonRecord(number, None, 0, value)


def _elements(text: _Text, number: int, what: str) -> Iterator[Any]:
    """The values of a list whose '[' was just consumed, up to and including its ']'."""
    expect_value = True
    while True:
        char = text.skip_space()
        if not char:
            raise InputError(f"the file ends inside {what} (after record {number}): it is truncated")
        if char == "]":
            text.pos += 1
            return
        if char == ",":
            if expect_value:
                raise InputError(f"a stray ',' in {what} after record {number}")
            text.pos += 1
            expect_value = True
            continue
        if not expect_value:
            raise InputError(f"a ',' is missing between records {number} and {number + 1} in {what}")
        number += 1
        yield text.value(number)
        expect_value = False


def _rest_of_object(text: _Text, number: int) -> None:
    """Skip the keys that follow a streamed list (``"kind": "List", "metadata": {...}}``)."""
    char = text.skip_space()
    if char == "}":
        text.pos += 1
        return
    if char != ",":
        raise InputError(f"after record {number}: expected ',' or '}}' closing the list's object")
    text.pos += 1
    text.buffer = "{" + text.buffer[text.pos :]
    text.pos = 0
    rest = text.value(number)
    if not isinstance(rest, dict):
        raise InputError(f"after record {number}: the list's object is not closed properly")


def first_keys(
    source: TraceSource,
    list_keys: tuple[str, ...],
    prefix: str,
    keys_of: Callable[[JsonRecord], Iterable[Any]],
) -> list[str]:
    """``prefix.<key>`` for the keys ``keys_of`` finds in the first 50 records, in the order first seen:
    the nested fields (tags, labels) a mapping may use, found without reading the whole file."""
    found: list[str] = []
    for record in iter_json_records(source, list_keys=list_keys):
        for key in keys_of(record):
            if f"{prefix}.{key}" not in found:
                found.append(f"{prefix}.{key}")
        if record.number >= 50:
            break
    return found
