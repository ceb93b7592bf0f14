"""A trace's job ids as one Arrow string column: their UTF-8 bytes in one buffer, with offsets.

A million ids held as Python strings took more memory than the CSV's whole text of them (95 MB
for 38 MB of ids), about a third of a parse to make and check, and again as much to encode for
the ``.npz``. Held as Arrow's string layout they come straight from the CSV reader, are checked
there, go to the ``.npz`` and back as two plain arrays, and become Python strings only where one
is asked for: a job's id, a chunk of RESULT.json, a search.

``JobIds`` reads like the list of strings it replaces (``len``, indexing and slicing, iteration,
``index``, ``in``, equality with a list), so readers that build a trace from rows still pass lists.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

_TYPE = pa.large_string()  # 64-bit offsets: no limit of 2 GB of ids
_ITER_CHUNK = 65_536


class JobIds(Sequence[str]):
    __slots__ = ("_ids",)

    def __init__(self, ids: JobIds | pa.Array | pa.ChunkedArray | Iterable[str] = ()):
        if isinstance(ids, JobIds):
            array = ids._ids
        elif isinstance(ids, pa.ChunkedArray):
            array = ids.combine_chunks() if ids.num_chunks else pa.array([], type=_TYPE)
        elif isinstance(ids, pa.Array):
            array = ids
        else:
            array = pa.array(ids if isinstance(ids, list) else list(ids), type=_TYPE)
        # Arrow's two string layouts (32- and 64-bit offsets) are both kept as they come
        self._ids: pa.Array = array if array.type in (_TYPE, pa.string()) else array.cast(_TYPE)

    @property
    def arrow(self) -> pa.Array:
        return self._ids

    def __len__(self) -> int:
        return len(self._ids)

    @overload
    def __getitem__(self, key: int) -> str: ...

    @overload
    def __getitem__(self, key: slice) -> list[str]: ...

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, slice):
            start, stop, step = key.indices(len(self._ids))
            if step == 1:
                return self._ids.slice(start, max(0, stop - start)).to_pylist()
            return self.take(np.arange(start, stop, step))
        position = int(key)
        if position < 0:
            position += len(self._ids)
        if not 0 <= position < len(self._ids):
            raise IndexError("job index out of range")
        return self._ids[position].as_py()

    def __iter__(self) -> Iterator[str]:
        for start in range(0, len(self._ids), _ITER_CHUNK):
            yield from self._ids.slice(start, _ITER_CHUNK).to_pylist()

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and self.find(value) >= 0

    def find(self, value: str) -> int:
        """The position of ``value``, -1 if it is not an id here."""
        return pc.index(self._ids, pa.scalar(value, type=self._ids.type)).as_py()

    def index(self, value: Any, start: int = 0, stop: int | None = None) -> int:
        if start != 0 or stop is not None:  # (a bounded search: rare, done on the strings)
            return self.to_list().index(value, start, len(self) if stop is None else stop)
        position = self.find(value) if isinstance(value, str) else -1
        if position < 0:
            raise ValueError(f"{value!r} is not a job id of the trace")
        return position

    def __eq__(self, other: object) -> bool:
        if isinstance(other, JobIds):
            return self._ids.equals(other._ids)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and self.to_list() == list(other)
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable-looking, like the list it replaces

    def __repr__(self) -> str:
        shown = self[:5]
        more = f", ... ({len(self):,} ids)" if len(self) > 5 else ""
        return f"JobIds({shown!r}{more})"

    def to_list(self) -> list[str]:
        return self._ids.to_pylist()

    def take(self, positions: Sequence[int] | np.ndarray) -> list[str]:
        """The ids at ``positions``, as Python strings."""
        return self._ids.take(pa.array(np.asarray(positions, dtype=np.int64))).to_pylist()

    # -- storage: two plain arrays, readable with np.load(allow_pickle=False) ------------------------

    def to_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(the ids' UTF-8 bytes one after another as uint8, the int64 offsets: id i is
        bytes[offsets[i]:offsets[i + 1]])."""
        _, offsets_buffer, data_buffer = self._ids.buffers()
        n, first = len(self._ids), self._ids.offset
        width = np.int64 if self._ids.type == _TYPE else np.int32
        offsets = np.frombuffer(
            offsets_buffer, dtype=width, count=n + 1, offset=np.dtype(width).itemsize * first
        )
        offsets = offsets.astype(np.int64)
        low, high = int(offsets[0]), int(offsets[-1])
        data = (
            np.frombuffer(data_buffer, dtype=np.uint8)[low:high]
            if data_buffer is not None and high
            else (np.zeros(0, dtype=np.uint8))
        )
        return data, offsets - low

    @classmethod
    def from_arrays(cls, data: np.ndarray, offsets: np.ndarray) -> JobIds:
        """The inverse of ``to_arrays``; the bytes are checked to be UTF-8."""
        offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        data = np.ascontiguousarray(data, dtype=np.uint8)
        array = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
        array.validate(full=True)
        return cls(array)

    @classmethod
    def from_fixed_width(cls, values: np.ndarray) -> JobIds:
        """Ids stored as a numpy bytes array (how earlier ``.npz`` files hold them)."""
        return cls(pa.array(values, type=pa.binary()).cast(_TYPE))

    # -- the check every reader makes -----------------------------------------------------------------

    def first_repeat(self) -> tuple[int, int] | None:
        """(position of the first id that repeats an earlier one, position of that earlier one),
        or None when every id is unique. Ids are told apart by a fingerprint first (numpy over the
        Arrow buffers: no string is copied, where a hash set of a million ids holds a copy of every
        one); only ids whose fingerprints meet are compared as text."""
        n = len(self._ids)
        if n < 2:
            return None
        data, offsets = self.to_arrays()
        prints = np.concatenate(
            [_fingerprints(data, offsets[low : low + _PRINT_CHUNK + 1]) for low in range(0, n, _PRINT_CHUNK)]
        )
        order = np.argsort(prints, kind="stable")
        sorted_prints = prints[order]
        meets = np.flatnonzero(sorted_prints[1:] == sorted_prints[:-1])
        if not len(meets):
            return None
        suspects = np.unique(np.concatenate([order[meets], order[meets + 1]]))
        first: dict[str, int] = {}
        for position, job in zip(suspects.tolist(), self.take(suspects), strict=True):
            if job in first:
                return position, first[job]
            first[job] = position
        return None


# Fingerprint of an id: its length and its first and last 16 bytes, mixed into 64 bits. Ids that
# differ only in the middle of a long id meet, and are then compared as text.
_PRINT_CHUNK = 65_536  # ids per step: 16 bytes each side in int64 positions is 16 MB a step
_EDGE = 16
_MIX = np.array([0x9E3779B97F4A7C15, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9, 0xD6E8FEB86659FD93,
                 0xFF51AFD7ED558CCD], dtype=np.uint64)  # fmt: skip


def _fingerprints(data: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    starts, ends = offsets[:-1], offsets[1:]
    lengths = ends - starts
    step = np.arange(_EDGE)
    last = max(len(data) - 1, 0)
    padded = np.concatenate([data, np.zeros(1, dtype=np.uint8)])  # a byte to point at when empty
    # the first 16 bytes, and the last 16, of each id alone: a short id's are zero past its bytes,
    # never its neighbours' (which would make one id's fingerprint depend on where it stands)
    head_at = starts[:, None] + step
    tail_at = ends[:, None] - _EDGE + step
    head = np.where(step < lengths[:, None], padded[np.minimum(head_at, last)], 0).astype(np.uint8)
    tail = np.where(tail_at >= starts[:, None], padded[np.clip(tail_at, 0, last)], 0).astype(np.uint8)
    words = np.concatenate([head, tail], axis=1).view(np.uint64)  # 4 words of 8 bytes per id
    with np.errstate(over="ignore"):
        mixed = lengths.astype(np.uint64) * _MIX[4]
        for k in range(4):
            mixed ^= words[:, k] * _MIX[k]
            mixed ^= mixed >> np.uint64(29)
    return mixed
