"""The AWS Batch and Kueue history importers against damaged records: real-looking jobs from the
samples with one value anywhere in them replaced by something of another type or shape. Each must be
read or refused with an InputError naming the record; never another exception."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from scheduling.errors import InputError
from scheduling.traces import read_trace
from tests.fuzz.test_readers import FUZZ

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def _records(path: Path, count: int) -> list:
    decoder = json.JSONDecoder()
    text = path.read_text()
    out, position = [], 0
    while len(out) < count:
        value, position = decoder.raw_decode(text, position)
        out.append(value)
        while position < len(text) and text[position].isspace():
            position += 1
    return out


AWS_JOBS = _records(SAMPLES / "aws-batch" / "describe-service-jobs.json", 6)
KUEUE_ITEMS = json.loads((SAMPLES / "kueue" / "workloads.json").read_text())["items"][:6]

junk = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
    st.sampled_from(["", "2026-13-40T00:00:00Z", "-1", "1e400", "NaN", "ml.g5.xlarge", "Preempted"]),
)


def _paths(value, prefix=()):
    """Every (path) into a JSON value, so a mutation can land anywhere."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*prefix, i))


def _replace(value, path, new):
    if not path:
        return new
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)
    return copy


def _read_or_refuse(data: bytes, fmt: str) -> None:
    try:
        trace = read_trace(io.BytesIO(data), format=fmt)
    except InputError as error:
        assert str(error).strip()
        assert error.row is None or error.row >= 1
    else:
        assert len(trace) >= 1


def _damage_one(data: st.DataObject, records: list, new: Any) -> list:
    """A copy of ``records`` with one value, drawn from any of them at any depth, replaced by ``new``."""
    index = data.draw(st.integers(0, len(records) - 1))
    path = data.draw(st.sampled_from(list(_paths(records[index]))))
    damaged = list(records)
    damaged[index] = _replace(records[index], path, new)
    return damaged


@FUZZ
@given(data=st.data(), new=junk)
def test_a_damaged_describe_service_job_record(data, new):
    jobs = _damage_one(data, AWS_JOBS, new)
    _read_or_refuse("\n".join(json.dumps(job) for job in jobs).encode(), "aws-batch-jobs")


@FUZZ
@given(data=st.data(), new=junk)
def test_a_damaged_workload(data, new):
    items = _damage_one(data, KUEUE_ITEMS, new)
    _read_or_refuse(
        json.dumps({"apiVersion": "v1", "items": items, "kind": "List"}).encode(), "kueue-workloads"
    )
