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
    __slots__ = ("_ids", "_sorted")

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
        # (the order of the ids and where equal ids meet in it, worked out once: the reader's
        # check for repeats and the replay's ranking both need it)
        self._sorted: tuple[np.ndarray, np.ndarray] | None = None

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

    # -- order -----------------------------------------------------------------------------------------

    def order(self) -> np.ndarray:
        """The positions of the ids in code-point order (stable: equal ids keep their order)."""
        return self._sort()[0]

    def _sort(self) -> tuple[np.ndarray, np.ndarray]:
        """(the order, the places in it whose id equals the one before). UTF-8 bytes compare as
        their code points do, so the ids are sorted as bytes: cut into 8-byte words read as
        big-endian numbers (zero past an id's end), sorted on the words as numbers and then on
        the length (an id comes before itself with NULs added). At a million ids this takes
        under half of Arrow's sort of the strings, which compares them one pair at a time; ids
        longer than ``_MAX_WORDS`` words go to that sort."""
        if self._sorted is not None:
            return self._sorted
        data, offsets = self.to_arrays()
        lengths = np.diff(offsets)
        n_words = -(-int(lengths.max(initial=0)) // 8)
        if n_words > _MAX_WORDS:
            order = pc.sort_indices(self._ids).to_numpy()
            ordered = self._ids.take(pa.array(order))
            same = pc.equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
        else:
            words = _words(data, offsets[:-1], lengths, n_words)
            # a word (or the length) the same in every id orders nothing: "job-0000" of
            # "job-0000017", say
            keys = [key for key in (*words, lengths) if len(key) and (key != key[0]).any()]
            order = np.lexsort(keys[::-1]) if keys else np.arange(len(lengths))  # (last key first)
            same = np.ones(max(len(order) - 1, 0), dtype=bool)
            for key in keys:
                ordered = key[order]
                same &= ordered[1:] == ordered[:-1]
        self._sorted = order, np.flatnonzero(same) + 1
        return self._sorted

    # -- the check every reader makes -----------------------------------------------------------------

    def first_repeat(self) -> tuple[int, int] | None:
        """(position of the first id that repeats an earlier one, position of that earlier one),
        or None when every id is unique: read off the sorted ids (``_sort``), where equal ids
        stand together in their order of position. No id is made a Python string."""
        order, repeats = self._sort()
        if not len(repeats):
            return None
        i = int(np.argmin(order[repeats]))  # the repeat at the earliest position
        # Its run of equal ids starts just before the first of the consecutive places up to it.
        steps = repeats[: i + 1] - np.arange(i + 1)  # constant along a run of consecutive places
        first = int(repeats[np.searchsorted(steps, steps[i])]) - 1
        return int(order[repeats[i]]), int(order[first])


def _words(data: np.ndarray, starts: np.ndarray, lengths: np.ndarray, n_words: int) -> np.ndarray:
    """Word k (k < n_words) of each id as row k: 8 bytes from its byte 8k, as a big-endian
    number, zero past the id's end (never its neighbour's bytes). Made a chunk of ids at a time,
    so that the steps' arrays stay small beside the words themselves."""
    if len(data) < 8:
        data = np.concatenate([data, np.zeros(8 - len(data), dtype=np.uint8)])
    windows = np.lib.stride_tricks.sliding_window_view(data, 8)  # the 8 bytes from each byte on
    last = len(data) - 8  # (no padded copy of the bytes: a word past the last window is read
    words = np.empty((n_words, len(starts)), dtype=np.uint64)  # from it and shifted into place)
    for low in range(0, len(starts), _WORDS_CHUNK):
        chunk = slice(low, low + _WORDS_CHUNK)
        for k in range(n_words):
            at = starts[chunk] + 8 * k
            raw = windows[np.minimum(at, last)].view(">u8")[:, 0].astype(np.uint64)
            shift = (np.clip(at - last, 0, 7) * 8).astype(np.uint64)  # 0 but for the last few ids
            kept = np.clip(lengths[chunk] - 8 * k, 0, 8)
            words[k, chunk] = (raw << shift) & _KEEP_BYTES[kept]
    return words


_MAX_WORDS = 8  # ids of up to 64 bytes are sorted as words
_WORDS_CHUNK = 131_072
# the first k bytes of a big-endian word kept (k = 0 to 8)
_KEEP_BYTES = np.array([0] + [(2**64 - 1) ^ (2 ** (64 - 8 * k) - 1) for k in range(1, 9)], dtype=np.uint64)
