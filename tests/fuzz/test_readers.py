"""Hostile and broken trace files against every reader of ``scheduling.traces``: the corpus under
corpus/ (plus three files too big to keep in git, made here: a 3 MB field, a header of 10^6 columns,
JSON nested 10^5 deep), and hypothesis-made bytes, CSV and JSON. Every one is either a trace or an
InputError with a message; never another exception. FUZZ_EXAMPLES sets how many examples per test."""

from __future__ import annotations

import functools
import gzip
import io
import json
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.errors import InputError
from scheduling.traces import FORMATS, read_trace

CORPUS = Path(__file__).parent / "corpus"
EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "200"))
HEADER = "job_id,submit_time,share,priority,instance_count,duration\n"
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@functools.cache
def generated_files() -> dict[str, bytes]:
    return {
        "huge-field.csv": (HEADER + "j1,0," + "x" * 3_000_000 + ",1,1,3600\n").encode(),
        "million-columns.csv": (",".join(f"c{i}" for i in range(1_000_000)) + "\n1,2,3\n").encode(),
        "json-deep-nesting.json": b"[" * 100_000 + b"]" * 100_000,
        "truncated-unique.csv.gz": gzip.compress(
            (HEADER + "".join(f"j{i},{i},train,1,1,60\n" for i in range(5000))).encode()
        )[:20_000],
    }


@functools.cache
def broken_files() -> dict[str, bytes]:
    files = {path.name: path.read_bytes() for path in sorted(CORPUS.iterdir())}
    return {**files, **generated_files()}


# (row, field) the error names, for the files that have one; files not listed here must still be
# refused with an InputError (no row or field to name: the file as a whole is wrong).
WHERE = {
    "latin1.csv": (1, None),
    "embedded-nul.csv": (1, "share"),
    "mixed-times.csv": (2, "submit_time"),
    "year-9999.csv": (1, "submit_time"),
    "time-1e300.csv": (1, "submit_time"),
    "time-nan.csv": (1, "submit_time"),
    "duration-inf.csv": (1, "duration"),
    "zero-gpus.csv": (1, "instance_count"),
    "negative-gpus.csv": (1, "instance_count"),
    "negative-duration.csv": (1, "duration"),
    "ragged-rows.csv": (1, None),
    "duplicate-job-ids.csv": (2, "job_id"),
    "json-nan.json": (1, "submit_time"),
    "json-wrong-types.json": (1, None),
    "huge-field.csv": (1, None),
}
# Files that are valid traces: a BOM is read past; a formula-like share name is only text here
# (the CSV exports escape it).
VALID = {"utf8-bom.csv": 2, "formula-injection.csv": 1}


def test_the_corpus_has_every_kind_of_broken_file():
    names = set(broken_files())
    for kind in ("latin1", "utf16", "bom", "huge-field", "formula", "nul", "million-columns", "truncated",
                 "mixed-times", "9999", "1e300", "zero-gpus", "negative-gpus"):  # fmt: skip
        assert any(kind in name for name in names), kind


@pytest.mark.parametrize("name", sorted(broken_files()))
def test_a_broken_file_is_an_input_error_naming_where(name):
    data = broken_files()[name]
    if name in VALID:
        assert len(read_trace(io.BytesIO(data), max_rows=1000)) == VALID[name]
        return
    with pytest.raises(InputError) as caught:
        read_trace(_named(data, name), max_rows=100_000)
    error = caught.value
    assert error.reason and len(str(error)) < 1000, str(error)[:200]
    if name in WHERE:
        row, field = WHERE[name]
        assert error.row == row, str(error)
        if field is not None:
            assert error.field == field, str(error)
            assert f"row {row}, {field}:" in str(error)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", sorted(broken_files()))
def test_every_reader_answers_a_broken_file_with_an_input_error_or_a_trace(fmt, name):
    read_or_refuse(broken_files()[name], fmt)


def _named(data: bytes, name: str) -> io.BytesIO:
    stream = io.BytesIO(data)
    stream.name = name
    return stream


def read_or_refuse(data: bytes, fmt: str) -> None:
    try:
        trace = read_trace(io.BytesIO(data), format=fmt, max_rows=10_000)
    except InputError as error:
        assert str(error).strip(), "an InputError without a message"
        assert error.row is None or error.row >= 1
    else:
        assert len(trace) >= 1


@FUZZ
@given(data=st.binary(max_size=2000), fmt=st.sampled_from(sorted(FORMATS)))
def test_random_bytes(data, fmt):
    read_or_refuse(data, fmt)


cells = st.one_of(
    st.text(max_size=12),
    st.integers(-(10**20), 10**20).map(str),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(
        [
            "",
            "0",
            "-1",
            "1e300",
            "9999-12-31T23:59:59",
            "2021-03-01 10:00",
            "=cmd|' /C calc'!A0",
            "\x00",
            "NaN",
            "inf",
            "1.5",
            "gpu",
            '"',
            "\ufeff",
        ]
    ),  # fmt: skip
)
COLUMNS = ["job_id", "submit_time", "share", "priority", "instance_count", "duration", "instance_type",
           "checkpoint_interval", "startup_seconds", "JobID", "Submit", "vc", "gpu_num", "bogus"]  # fmt: skip


@FUZZ
@given(
    header=st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=8),
    rows=st.lists(st.lists(cells, max_size=9), max_size=6),
    fmt=st.sampled_from(sorted(FORMATS)),
    delimiter=st.sampled_from([",", "|", "\t"]),
)
def test_csv_like_files(header, rows, fmt, delimiter):
    text = delimiter.join(header) + "\n" + "".join(delimiter.join(row) + "\n" for row in rows)
    read_or_refuse(text.encode("utf-8", errors="surrogatepass"), fmt)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(COLUMNS), inner, max_size=6),
    max_leaves=20,
)


@FUZZ
@given(
    jobs=st.lists(st.dictionaries(st.sampled_from(COLUMNS), json_values, max_size=8), max_size=5),
    extra=st.dictionaries(st.sampled_from(["priority_updates", "jobs", "x"]), json_values, max_size=2),
    fmt=st.sampled_from(["planner-json", "helios", "philly", "auto"]),
)
def test_json_like_files(jobs, extra, fmt):
    read_or_refuse(json.dumps({"jobs": jobs, **extra}).encode(), fmt)
    read_or_refuse(json.dumps(jobs).encode(), fmt)


def test_the_row_limit_stops_reading_early():
    """A 200,000-job CSV with a limit of 100: refused at row 101, having read a small part of it."""
    data = (HEADER + "".join(f"j{i},{i},train,1,1,60\n" for i in range(200_000))).encode()
    stream = io.BytesIO(data)
    with pytest.raises(InputError) as caught:
        read_trace(stream, format="planner-csv", max_rows=100)
    assert caught.value.row == 101 and "limit" in str(caught.value)
    assert stream.tell() < len(data) // 20, f"read {stream.tell():,} of {len(data):,} bytes"
