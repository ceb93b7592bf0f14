"""The columnar planner CSV reader against the row-by-row one it stands in for: on every file either
the same trace or the same message (row, field and words). Files are made by hypothesis from cells
that sit on each rule's edge; the scenarios below pin the cases a columnar check could get wrong."""

from __future__ import annotations

import io

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from scheduling.errors import InputError
from scheduling.traces.fields import open_source
from scheduling.traces.planner import _read_rows, read_planner_csv


def both(data: bytes, max_rows: int | None = None):
    """(columnar outcome, row-by-row outcome): a Trace's columns or the error's text."""

    def outcome(read):
        try:
            trace = read()
        except InputError as error:
            return ("error", str(error), error.row, error.field)
        return ("trace", _columns(trace))

    def rows():
        with open_source(io.BytesIO(data)) as opened:
            return _read_rows(opened, max_rows=max_rows)

    return outcome(lambda: read_planner_csv(io.BytesIO(data), max_rows=max_rows)), outcome(rows)


def _columns(trace) -> dict:
    out = {}
    for name, value in vars(trace).items():
        if isinstance(value, np.ndarray):
            out[name] = (str(value.dtype), value.tolist())
        elif name == "updates":
            out[name] = len(value)
        else:
            out[name] = value
    return out


def agree(text: str, max_rows: int | None = None) -> tuple:
    fast, slow = both(text.encode(), max_rows)
    assert repr(fast) == repr(slow)  # repr: nan == nan
    return fast


def test_a_plain_file_gives_the_same_columns():
    header = "job_id,submit_time,share,duration,priority,instance_count\n"
    fast = agree(header + "j1,0,a,60,3,2\nj2,5.5,b,1e3,0,1\n")
    assert fast[0] == "trace"


@pytest.mark.parametrize(
    "rows, where",
    [
        ("j1,0,a,60\nj2,0,a,-5\n", (2, "duration")),  # the first bad row, not the first bad column
        ("j1,0,a,60\nj1,0,a,-5\n", (2, "duration")),  # a repeated id: its row's parse error comes first
        ("j1,0,a,60\nj2,0,a,60\nj1,0,a,60\nj4,0,a,x\n", (3, "job_id")),  # the earlier duplicate wins
        ("j1,0,a,60\nj2,2024-01-01T00:00:00Z,a,60\n", (2, "submit_time")),  # mixed kinds of time
        ("j1, 7 ,a,60\nj2,nan,a,60\n", (2, "submit_time")),  # spaces around a number are fine
        ("j1,0,  ,60\n", (1, "share")),
        ("j1,0,a,60\n\nj2,0,a,oops\n", (3, "duration")),  # a blank line still counts as a row
    ],
)
def test_a_bad_row_gets_the_row_by_row_message(rows, where):
    fast = agree("job_id,submit_time,share,duration\n" + rows)
    assert fast[0] == "error" and fast[2:] == where


def test_the_row_limit_names_the_first_row_past_it():
    body = "".join(f"j{i},{i},a,60\n" for i in range(50))
    fast = agree("job_id,submit_time,share,duration\n" + body, max_rows=20)
    assert fast[2] == 21


cell = st.one_of(
    st.sampled_from(
        [
            "",
            " ",
            "0",
            "-0",
            "1",
            "-1",
            "3.0",
            "3.5",
            "1e10",
            "1e11",
            "10000",
            "9999",
            "nan",
            "inf",
            "2147483648",
            "1e300",
            " 5",
            "5 ",
            "x",
            "2021-03-01T10:00:00",
            "2021-03-01 10:00+02:00",
            "a",
            " a",
            "b",
            "\u00e9",
            "\u3000z",
            "\t",
            '"q"',
            'a"b',
        ]
    ),  # fmt: skip
    st.text(alphabet="ab01 .-e", max_size=4),
)
COLUMNS = ["job_id", "submit_time", "share", "duration", "priority", "instance_count", "instance_type",
           "checkpoint_interval", "preemption_retries", "user", "name", "recorded_start"]  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    extra=st.lists(st.sampled_from(COLUMNS[4:]), unique=True, max_size=4),
    rows=st.lists(
        st.tuples(
            st.sampled_from(["j1", "j2", "j3", "j4", " j5", "j6"]), st.lists(cell, min_size=11, max_size=11)
        ),
        min_size=1,
        max_size=6,
    ),  # fmt: skip
    max_rows=st.sampled_from([None, 2]),
)
def test_random_files_agree(extra, rows, max_rows):
    header = ["job_id", "submit_time", "share", "duration", *extra]
    lines = [",".join(header)]
    for job, cells in rows:
        lines.append(",".join([job, *cells[: len(header) - 1]]))
    agree("\n".join(lines) + "\n", max_rows)
