"""Issue 25, item 6: compressed input is bounded as it is inflated, a file of blank lines is refused
early, and a NUL byte anywhere is refused naming the row and field (and never stored: PostgreSQL
refuses NUL in text, so a quoted NUL in a message failed the parse three times)."""

from __future__ import annotations

import gzip

import pytest

from scheduling.errors import InputError
from scheduling.traces import mapping, planner, read_trace
from scheduling.traces.fields import MAX_DECOMPRESSED_BYTES, TooLarge, TraceSource, open_source
from scheduling.traces.mapping import CsvTable

HEADER = b"job_id,submit_time,share,duration\n"
LIMIT = 1024 * 1024


def read_bounded(data: bytes, limit: int = LIMIT, **options):
    with open_source(data, max_decompressed=limit) as opened:
        return read_trace(opened, **options)


def test_every_source_is_bounded_by_default():
    assert TraceSource.open(b"x").max_decompressed == MAX_DECOMPRESSED_BYTES == 2 * 1024**3


def test_a_gzip_of_newlines_past_the_limit_is_refused_naming_the_limit():
    bomb = gzip.compress(HEADER + b"\n" * (2 * LIMIT))
    with pytest.raises(TooLarge) as caught:
        read_bounded(bomb)
    assert caught.value.field == "file"
    assert caught.value.describe() == (
        "file: the gzip data decompresses to more than 1,048,576 bytes, the limit for a compressed "
        "file: send a smaller file, or split it"
    )


@pytest.mark.parametrize(
    "content",
    [
        b"a" * (2 * LIMIT),  # one endless first line (searched piece by piece, not again and again)
        HEADER + b"j1,0,A,10\n" * (LIMIT // 5),  # valid rows, 2 MB of them
        b'{"jobs": [' + b'{"job_id": "x"},' * LIMIT,  # JSON, read whole: stopped at the limit
    ],
    ids=["one-line", "rows", "json"],
)
def test_any_gzip_past_the_limit_is_refused(content):
    with pytest.raises(TooLarge):
        read_bounded(gzip.compress(content))


@pytest.mark.parametrize(
    ("content", "format", "message"),
    [
        (b"a" * (3 * LIMIT), "planner-csv", "the header is longer than 1,048,576 bytes: not a CSV header"),
        (
            HEADER + b"j1,0,A,10\n" + b"a" * (3 * LIMIT),
            "planner-csv",
            "row 2: is longer than 1,048,576 bytes: not a row of a CSV trace",
        ),
        (
            b"|" * (3 * LIMIT),
            "slurm-sacct",
            "line 1 is longer than 1,048,576 bytes: not a line of a delimited text file",
        ),
    ],
    ids=["header", "row", "importer"],
)
def test_a_line_of_delimited_text_past_a_megabyte_is_refused_as_it_is_read(content, format, message):
    """A gigabyte on one line (a 1 MB gzip) took a minute and a half to be refused."""
    with pytest.raises(InputError) as caught:
        read_bounded(gzip.compress(content), limit=100 * LIMIT, format=format)
    assert caught.value.describe() == message


def test_a_gzip_within_the_limit_is_read():
    trace = read_bounded(gzip.compress(HEADER + b"j1,0,A,10\nj2,5,A,20\n"))
    assert list(trace.job_id) == ["j1", "j2"]


def test_a_file_of_blank_lines_is_refused_past_the_stated_count(monkeypatch):
    monkeypatch.setattr(planner, "MAX_BLANK_LINES", 10)
    with pytest.raises(InputError) as caught:
        read_trace(HEADER + b"j1,0,A,10\n" + b"\n" * 11 + b"j2,5,A,20\n", format="planner-csv")
    assert caught.value.describe() == (
        "row 12: more than 10 blank lines: the file holds no trace, or was cut wrongly"
    )
    # (row 1 the job, rows 2 to 12 blank: refused at the eleventh blank line)
    assert len(read_trace(HEADER + b"j1,0,A,10\n" + b"\n" * 10 + b"j2,5,A,20\n")) == 2


def test_an_importers_table_refuses_a_file_of_blank_lines(monkeypatch):
    monkeypatch.setattr(mapping, "MAX_BLANK_LINES", 3)
    table = CsvTable(iter(["a,b\n", "1,2\n", "\n", "\n", "\n", "\n", "3,4\n"]))
    with pytest.raises(InputError, match="blank lines"):
        list(table.rows())


def test_a_nul_byte_in_the_planner_csv_header_is_refused_naming_the_column():
    with pytest.raises(InputError) as caught:
        read_trace(b"job_id,sha\x00re,submit_time,duration\nj1,A,0,10\n", format="planner-csv")
    assert caught.value.describe() == "header column 2: contains a NUL byte"


def test_a_nul_byte_in_an_importers_header_is_refused_naming_the_column():
    with pytest.raises(InputError) as caught:
        CsvTable(iter(["a,b\x00,c\n", "1,2,3\n"]))
    assert caught.value.describe() == "header column 2: contains a NUL byte"


@pytest.mark.parametrize("columnar", [True, False], ids=["columnar", "row-by-row"])
def test_a_nul_byte_in_a_text_field_is_refused_with_row_and_field(columnar):
    rows = b"j1,0,A,10\nj2,5,B\x00,20\n" + (b'j3,9,"A",1\n' if not columnar else b"")
    with pytest.raises(InputError) as caught:
        read_trace(HEADER + rows, format="planner-csv")
    assert caught.value.describe() == "row 2, share: contains a NUL byte"


def test_a_message_never_carries_a_nul_byte_even_when_it_quotes_one():
    error = InputError("unknown column 'a\x00b'", field="a\x00b")
    assert "\x00" not in error.describe() and "\x00" not in error.field
    assert error.describe() == "a\\x00b: unknown column 'a\\x00b'"
    with pytest.raises(InputError) as caught:
        read_trace(
            b'{"jobs": [{"job_id": "j1", "submit_time": 0, "share": "A", "duration": 1, "x\\u0000": 1}]}'
        )
    assert "\x00" not in caught.value.describe() and "\x00" not in (caught.value.field or "")
