"""Append-only tables of numbers that the replay's hot loop writes and the metrics read once.

The engine logs millions of small records (usage changes, starts, preemptions, wait reasons).
``Records`` appends them to a ``librt.vecs.vec[float]``: in the compiled engine an append is a
store into a growing native array (no float object per value, 8 bytes a value), and the table is
read back through the buffer protocol without converting value by value.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from librt.vecs import append, vec


class Records:
    """Records of ``width`` numbers each, added with ``add2`` / ``add3`` / ``add4`` (one per width,
    so the compiled engine passes plain numbers, not a tuple) and read with ``table()``."""

    def __init__(self, width: int, dtype: Any = np.float64) -> None:
        self.width = width
        self.dtype = dtype
        self.values: vec[float] = vec[float]()
        self.loaded: Any = None  # the values packed so far (by table(), or given to from_table)
        self.count = 0

    def add2(self, a: float, b: float) -> None:
        values = self.values
        values = append(values, a)
        self.values = append(values, b)
        self.count += 1

    def add3(self, a: float, b: float, c: float) -> None:
        values = self.values
        values = append(values, a)
        values = append(values, b)
        self.values = append(values, c)
        self.count += 1

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
        values = append(values, a)
        values = append(values, b)
        values = append(values, c)
        self.values = append(values, d)
        self.count += 1

    def table(self) -> Any:
        """All records as a (records, width) numpy array of ``dtype`` (built once, then kept)."""
        if len(self.values) or self.loaded is None:
            added = as_array(self.values)
            parts = [added] if self.loaded is None else [self.loaded, added]
            # concatenate copies out of the vec, which is let go.
            self.loaded = np.concatenate(parts).astype(self.dtype, copy=False)
            self.values = vec[float]()
        return self.loaded.reshape(-1, self.width)

    def __len__(self) -> int:
        return self.count

    @classmethod
    def from_table(cls, table: Any, width: int, dtype: Any = np.float64) -> Records:
        records = cls(width, dtype)
        flat = np.asarray(table, dtype=dtype).ravel()
        if len(flat) % width:
            raise ValueError(f"{len(flat)} values do not make records of {width}")
        records.loaded = flat
        records.count = len(flat) // width
        return records


def as_array(values: vec[float]) -> Any:
    """A float64 numpy array over the vec's memory (a view: copy it before the vec changes)."""
    return np.frombuffer(memoryview(values), dtype=np.float64)  # type: ignore[call-overload]
