"""read_trace: the format registry, automatic format choice, and gzip-compressed input."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.traces import FORMATS, read_trace

DATA = Path(__file__).parent / "data"
CSV = (DATA / "planner_small.csv").read_bytes()
JSON = (DATA / "planner_small.json").read_bytes()


def test_registry_has_the_planner_formats():
    assert {"planner-csv", "planner-json"} <= set(FORMATS)


def test_auto_picks_by_extension(tmp_path):
    assert len(read_trace(DATA / "planner_small.csv")) == 4
    assert len(read_trace(DATA / "planner_small.json")) == 3
    # The extension wins over the content: a .csv that holds JSON is read as CSV and fails as CSV.
    wrong = tmp_path / "jobs.csv"
    wrong.write_bytes(JSON)
    with pytest.raises(InputError, match="unknown column"):
        read_trace(wrong)


def test_auto_picks_by_first_bytes_without_a_name():
    assert len(read_trace(io.BytesIO(CSV))) == 4
    assert len(read_trace(io.BytesIO(b"  \n" + JSON))) == 3
    assert len(read_trace(io.StringIO(JSON.decode()))) == 3
    assert len(read_trace(b"\xef\xbb\xbf" + JSON)) == 3  # a BOM before the brace


def test_explicit_format():
    assert len(read_trace(io.BytesIO(CSV), format="planner-csv")) == 4
    with pytest.raises(InputError, match="is not valid JSON"):
        read_trace(io.BytesIO(CSV), format="planner-json")


def test_unknown_format_names_the_allowed_ones():
    with pytest.raises(InputError) as caught:
        read_trace(io.BytesIO(CSV), format="parquet")
    assert caught.value.field == "format"
    assert "the formats are auto, planner-csv, planner-json" in str(caught.value)


def test_options_reach_the_reader():
    with pytest.raises(InputError, match="more than 2 jobs"):
        read_trace(io.BytesIO(CSV), max_rows=2)


def test_gzip_by_extension_and_by_magic_bytes(tmp_path):
    (tmp_path / "t.json.gz").write_bytes(gzip.compress(JSON))
    assert len(read_trace(tmp_path / "t.json.gz")) == 3
    (tmp_path / "upload").write_bytes(gzip.compress(CSV))
    assert len(read_trace(tmp_path / "upload")) == 4
    assert len(read_trace(io.BytesIO(gzip.compress(JSON)))) == 3


def test_truncated_gzip_is_an_input_error():
    body = "job_id,submit_time,share,duration\n" + "".join(f"j{i},{i},s,{i % 97}\n" for i in range(5000))
    data = gzip.compress(body.encode())
    for cut in (12, len(data) // 2, len(data) - 4):
        with pytest.raises(InputError, match="gzip data is truncated or damaged"):
            read_trace(io.BytesIO(data[:cut]))
    with pytest.raises(InputError, match="gzip data is truncated or damaged"):
        read_trace(io.BytesIO(gzip.compress(JSON)[:-10]), format="planner-json")


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot open"):
        read_trace(tmp_path / "nope.csv")


def test_non_seekable_stream_is_read():
    class Pipe(io.RawIOBase):
        def __init__(self, data: bytes):
            self._data = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def readinto(self, buffer) -> int:
            chunk = self._data.read(len(buffer))
            buffer[: len(chunk)] = chunk
            return len(chunk)

        def seekable(self) -> bool:
            return False

        def tell(self) -> int:
            raise OSError("not seekable")

    assert len(read_trace(Pipe(gzip.compress(CSV)))) == 4
