"""RESULT.json's jobs encoded a column at a time, no Python object per job.

A million jobs as dicts for orjson took about a second (making the dicts, encoding them, freeing
them), most of writing RESULT.json. Here each number column is encoded by orjson as a numpy array
(in C: the same text orjson gives a Python float, NaN as ``null``) and read by Arrow as one text
per job (views of that one buffer, cut after each comma), the names are looked up as ready-made
JSON texts, and Arrow's element-wise join puts each job's object together; the chunk's objects are
one buffer, written as it is. The bytes are
those the dicts gave (``tests/scheduling/test_result_json.py``). An id that JSON must escape
beyond a quote or a backslash (a control character) sends its chunk to the dicts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import orjson
import pyarrow as pa
import pyarrow.compute as pc

from scheduling.job_ids import JobIds
from scheduling.outcomes import JobOutcomes
from scheduling.trace import Trace

CHUNK = 65_536  # jobs a chunk: Arrow's buffers for them are a few MB, reused chunk after chunk

# (the control characters: JSON writes them as escapes, which only orjson is trusted to spell)
_CONTROL = "[\\x00-\\x1f]"


def encoded_jobs(
    trace: Trace,
    outcomes: JobOutcomes,
    state_names: list[str],
    reason_names: list[str | None],
    as_dicts: Callable[[int, int], bytes | memoryview],
    *,
    type_names: list[str | None],
    run_types: np.ndarray,
) -> Iterator[bytes | memoryview]:
    """The jobs of RESULT.json, a chunk at a time, each chunk the JSON objects of its jobs joined
    by commas (no brackets). ``as_dicts(low, high)``: the same for jobs low to high - 1 through
    dicts, for a chunk with an id that needs escapes other than a quote's or a backslash's."""
    # The names with the keys around them (one text per code: fewer pieces to join per job).
    shares = _texts('","share":{},"instance_type":', trace.share_names)
    types = _texts('{},"state":', type_names)  # (index -1, the last: null)
    type_codes = np.where(run_types < 0, len(type_names) - 1, run_types).astype(np.int32)
    states = _texts('{},"submit_time":', state_names)
    reasons = _texts('"reason":{}}},', reason_names)
    escapes = _escapes(trace.job_id.arrow)
    o = outcomes
    for low in range(0, len(trace), CHUNK):
        high = min(low + CHUNK, len(trace))
        part = slice(low, high)
        ids = trace.job_id.arrow.slice(low, high - low).cast(pa.string())
        if escapes[part].any():
            if pc.any(pc.match_substring_regex(ids, _CONTROL)).as_py():
                yield as_dicts(low, high)
                continue
            ids = pc.replace_substring(pc.replace_substring(ids, "\\", "\\\\"), '"', '\\"')
        submit, start = trace.submit_time[part], o.first_start[part]
        objects = pc.binary_join_element_wise(
            '{"job_id":"', ids,
            shares.take(pa.array(trace.share[part])),
            types.take(pa.array(type_codes[part])),
            states.take(pa.array(o.state[part])),
            _numbers(submit), '"first_start":',
            _numbers(start), '"end":',  # (nan, never started: null)
            _numbers(o.end[part]), '"wait":',
            _numbers(start - submit), '"queued":',
            _numbers(o.queued[part]), '"preemptions":',
            _numbers(o.preemptions[part]), '"lost_seconds":',
            _numbers(o.lost[part]),
            reasons.take(pa.array(o.reason[part])),
            "",  # (the separator between the pieces)
        )  # fmt: skip
        yield _joined(objects)[:-1]  # (the last comma)


def _texts(template: str, values: list[str] | list[str | None]) -> pa.Array:
    """Each value as its JSON text (orjson's: ``null`` for None, strings quoted and escaped), put
    in ``template``."""
    return pa.array([template.format(orjson.dumps(value).decode()) for value in values], type=pa.string())


def _escapes(ids: pa.Array) -> np.ndarray:
    """Whether each id has a byte JSON escapes (a quote, a backslash, a control character): a
    look at the bytes of all ids at once, where most traces have none."""
    data, offsets = JobIds(ids).to_arrays()
    special = np.flatnonzero((data < 0x20) | (data == ord('"')) | (data == ord("\\")))
    flags = np.zeros(len(ids), dtype=bool)
    flags[np.searchsorted(offsets, special, side="right") - 1] = True
    return flags


def _numbers(values: np.ndarray) -> pa.Array:
    """One JSON text per number, each followed by a comma: orjson encodes the array at once
    (``[a,b,c]``), its closing bracket becomes a comma, and Arrow reads the text in pieces cut
    after each comma (the pieces are views of the one buffer)."""
    text = bytearray(orjson.dumps(np.ascontiguousarray(values), option=orjson.OPT_SERIALIZE_NUMPY))
    text[-1] = ord(",")
    cuts = np.flatnonzero(np.frombuffer(text, dtype=np.uint8) == ord(",")) + 1
    offsets = np.concatenate(([1], cuts)).astype(np.int32)  # (after the opening bracket)
    return pa.StringArray.from_buffers(len(values), pa.py_buffer(offsets), pa.py_buffer(text))


def _joined(texts: pa.Array) -> memoryview:
    """The texts of a string array one after another: its data buffer, as it is."""
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32, count=len(texts) + 1, offset=4 * texts.offset)
    return memoryview(texts.buffers()[2])[int(offsets[0]) : int(offsets[-1])]
