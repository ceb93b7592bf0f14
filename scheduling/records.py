"""Append-only tables of numbers that the replay's hot loop writes and the metrics read once.

The engine logs millions of small records (usage changes, starts, preemptions, wait reasons).
Appending to an ``array('d')`` converts every value through argument parsing, and a list of
Python floats costs 24 bytes a value; ``Records`` appends to a short list and packs it into a
numpy chunk every ``CHUNK`` values, so a record costs a few list appends and 8 bytes a value.
"""

from __future__ import annotations

from typing import Any, Final

import numpy as np

CHUNK: Final = 1 << 16  # values per packed chunk


class Records:
    """Records of ``width`` numbers each, added with ``add2`` / ``add3`` / ``add4`` (one per width,
    so the compiled engine passes plain numbers, not a tuple) and read with ``table()``."""

    def __init__(self, width: int, dtype: Any = np.float64) -> None:
        self.width = width
        self.dtype = dtype
        self.values: list[float] = []
        self.chunks: list[Any] = []
        self.count = 0

    def add2(self, a: float, b: float) -> None:
        values = self.values
        values.append(a)
        values.append(b)
        self._added(values)

    def add3(self, a: float, b: float, c: float) -> None:
        values = self.values
        values.append(a)
        values.append(b)
        values.append(c)
        self._added(values)

    def change3(self, time: float, key: float, value: float) -> None:
        """A (time, key, value) state change: replaces the previous record when that one is for
        the same time and key, since only the last change at an instant is the state after it
        (a job submitted and started at once changes its queue's pending count only once)."""
        values = self.values
        n = len(values)
        if n and values[n - 3] == time and values[n - 2] == key:
            values[n - 1] = value
        else:
            self.add3(time, key, value)

    def add4(self, a: float, b: float, c: float, d: float) -> None:
        values = self.values
        values.append(a)
        values.append(b)
        values.append(c)
        values.append(d)
        self._added(values)

    def _added(self, values: list[float]) -> None:
        self.count += 1
        if len(values) >= CHUNK:
            self._pack()

    def _pack(self) -> None:
        if self.values:
            self.chunks.append(np.fromiter(self.values, dtype=self.dtype, count=len(self.values)))
            self.values = []

    def table(self) -> Any:
        """All records as a (records, width) numpy array (packed once, then kept)."""
        self._pack()
        if len(self.chunks) != 1:
            whole = np.concatenate(self.chunks) if self.chunks else np.zeros(0, dtype=self.dtype)
            self.chunks = [whole]
        return self.chunks[0].reshape(-1, self.width)

    def __len__(self) -> int:
        return self.count

    @classmethod
    def from_table(cls, table: Any, width: int, dtype: Any = np.float64) -> Records:
        records = cls(width, dtype)
        flat = np.asarray(table, dtype=dtype).ravel()
        if len(flat) % width:
            raise ValueError(f"{len(flat)} values do not make records of {width}")
        if len(flat):
            records.chunks.append(flat)
        records.count = len(flat) // width
        return records
