"""The planner's CSV and JSON trace formats: reading, every rejection, and write/read round trips."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.synthetic import generate
from scheduling.trace import PriorityUpdates, Trace
from scheduling.traces.planner import (
    read_planner_csv,
    read_planner_json,
    write_planner_csv,
    write_planner_json,
)

DATA = Path(__file__).parent / "data"
HEADER = "job_id,submit_time,share,duration"


def csv_error(text: str | bytes) -> InputError:
    data = text.encode() if isinstance(text, str) else text
    with pytest.raises(InputError) as caught:
        read_planner_csv(io.BytesIO(data))
    return caught.value


def json_error(text: str) -> InputError:
    with pytest.raises(InputError) as caught:
        read_planner_json(io.StringIO(text))
    return caught.value


def jobs_of(trace: Trace) -> list[dict]:
    """The trace as plain per-job values, codes resolved to names (what equality means)."""
    rows = []
    for i, job_id in enumerate(trace.job_id):
        type_code = int(trace.instance_type[i])
        rows.append(
            {
                "job_id": job_id,
                "submit_time": float(trace.submit_time[i]),
                "share": trace.share_names[trace.share[i]],
                "priority": int(trace.priority[i]),
                "instance_type": trace.type_names[type_code] if type_code >= 0 else None,
                "instance_count": int(trace.instance_count[i]),
                "duration": float(trace.duration[i]),
                "checkpoint_interval": None
                if math.isnan(trace.checkpoint_interval[i])
                else float(trace.checkpoint_interval[i]),
                "preemption_retries": int(trace.preemption_retries[i]),
                "user": (trace.user[i] or None) if trace.user is not None else None,
                "name": (trace.name[i] or None) if trace.name is not None else None,
                "recorded_start": None
                if trace.recorded_start is None or math.isnan(trace.recorded_start[i])
                else float(trace.recorded_start[i]),
            }
        )
    return rows


def assert_same_trace(a: Trace, b: Trace) -> None:
    assert jobs_of(a) == jobs_of(b)
    assert a.epoch_times == b.epoch_times
    assert a.updates.job_id == b.updates.job_id
    assert a.updates.time.tolist() == b.updates.time.tolist()
    assert a.updates.priority.tolist() == b.updates.priority.tolist()


# -- CSV reading --------------------------------------------------------------------------


def test_sample_csv():
    trace = read_planner_csv(DATA / "planner_small.csv")
    rows = jobs_of(trace)
    assert [r["job_id"] for r in rows] == ["j1", "j2", "j3", "j4"]
    assert rows[1] == {
        "job_id": "j2",
        "submit_time": 60.0,
        "share": "research",
        "priority": 50,
        "instance_type": None,
        "instance_count": 2,
        "duration": 600.0,
        "checkpoint_interval": 300.0,
        "preemption_retries": -1,
        "user": "ana",
        "name": "sweep-1",
        "recorded_start": None,
    }
    # Empty optional cells take the defaults.
    assert rows[3]["priority"] == 0 and rows[3]["instance_count"] == 1 and rows[3]["user"] is None
    assert rows[2]["preemption_retries"] == 3
    assert trace.share_names == ["research", "prod", "vision"]
    assert trace.epoch_times is False


def test_csv_from_path_string_binary_and_text_objects():
    path = DATA / "planner_small.csv"
    expected = jobs_of(read_planner_csv(path))
    assert jobs_of(read_planner_csv(str(path))) == expected
    with path.open("rb") as binary:
        assert jobs_of(read_planner_csv(binary)) == expected
    with path.open("r", encoding="utf-8", newline="") as text:
        assert jobs_of(read_planner_csv(text)) == expected
    assert jobs_of(read_planner_csv(path.read_bytes())) == expected


def test_csv_with_iso_times_is_epoch():
    trace = read_planner_csv(
        io.BytesIO(f"{HEADER},recorded_start\na,2024-05-01T09:30:00Z,s,60,2024-05-01T09:31:00Z\n".encode())
    )
    assert trace.epoch_times is True
    assert trace.submit_time.tolist() == [1714555800.0]
    assert trace.recorded_start.tolist() == [1714555860.0]


def test_csv_bom_and_crlf_are_handled():
    data = "\ufeffjob_id,submit_time,share,duration\r\na,0,s,60\r\nb,1,s,30\r\n".encode()
    trace = read_planner_csv(io.BytesIO(data))
    assert trace.job_id == ["a", "b"]
    text_trace = read_planner_csv(io.StringIO(data.decode("utf-8")))
    assert text_trace.job_id == ["a", "b"]


def test_csv_columns_in_any_order_and_quoted_cells():
    trace = read_planner_csv(
        io.BytesIO(b'share,duration,job_id,submit_time,name\n"team, a",60,x,0,"say ""hi"""\n')
    )
    assert trace.share_names == ["team, a"]
    assert trace.name == ['say "hi"']


def test_csv_blank_lines_are_skipped_but_counted():
    caught = csv_error(f"{HEADER}\na,0,s,60\n\nb,0,s,-1\n")
    assert (caught.row, caught.field) == (3, "duration")


def test_csv_missing_required_column_is_named():
    caught = csv_error("job_id,submit_time,share\na,0,s\n")
    assert caught.field == "duration"
    assert "required column 'duration' is missing" in str(caught)


def test_csv_unknown_column_is_rejected_with_the_allowed_ones():
    caught = csv_error(f"{HEADER},gpus\na,0,s,60,1\n")
    assert caught.field == "gpus"
    assert "unknown column 'gpus'" in str(caught)
    assert "optional priority, instance_type, instance_count" in str(caught)


def test_csv_duplicate_column():
    caught = csv_error(f"{HEADER},share\n")
    assert caught.field == "share" and "appears twice" in str(caught)


def test_csv_short_row_names_the_row():
    caught = csv_error(f"{HEADER}\na,0,s,60\nb,0,s\n")
    assert caught.row == 2
    assert str(caught) == "row 2: has 3 cells, but the header has 4 columns"


def test_csv_long_row_is_rejected_unless_the_extra_cells_are_empty():
    assert read_planner_csv(io.BytesIO(f"{HEADER}\na,0,s,60,,\n".encode())).job_id == ["a"]
    assert csv_error(f"{HEADER}\na,0,s,60,7\n").row == 1


def test_csv_bad_cell_names_row_and_field():
    caught = csv_error(f"{HEADER},priority\na,0,s,60,1\nb,0,s,60,high\n")
    assert str(caught) == "row 2, priority: 'high' is not a whole number"
    assert str(csv_error(f"{HEADER}\na,0,s,-5\n")) == "row 1, duration: -5 is negative"
    assert str(csv_error(f"{HEADER}\na,,s,5\n")).startswith("row 1, submit_time: is empty")
    assert str(csv_error(f"{HEADER}\na,0,,5\n")) == "row 1, share: is empty"


def test_csv_duplicate_job_id():
    assert (
        str(csv_error(f"{HEADER}\na,0,s,60\nb,0,s,60\na,5,s,60\n"))
        == "row 3, job_id: 'a' is a duplicate of row 1"
    )


def test_csv_non_utf8_byte_names_the_row():
    caught = csv_error(f"{HEADER}\na,0,s,60\n".encode() + b"b,0,caf\xe9,60\n")
    assert caught.row == 2
    assert "not UTF-8" in str(caught) and "0xe9" in str(caught)


def test_csv_non_utf8_header():
    caught = csv_error(b"job_id,submit\xff_time\n")
    assert caught.row is None and "header is not UTF-8" in str(caught)


def test_csv_empty_file_and_header_only():
    assert "the file is empty" in str(csv_error(b""))
    assert str(csv_error(f"{HEADER}\n")).startswith("the trace has no jobs")


def test_csv_mixed_time_kinds():
    caught = csv_error(f"{HEADER}\na,0,s,60\nb,2024-05-01T00:00:00Z,s,60\n")
    assert (caught.row, caught.field) == (2, "submit_time")


def test_csv_max_rows():
    with pytest.raises(InputError) as caught:
        read_planner_csv(io.BytesIO(f"{HEADER}\na,0,s,1\nb,0,s,1\nc,0,s,1\n".encode()), max_rows=2)
    assert str(caught.value) == "row 3: more than 2 jobs: the limit is 2"


# -- JSON reading -------------------------------------------------------------------------


def test_sample_json_with_iso_times_and_updates():
    trace = read_planner_json(DATA / "planner_small.json")
    rows = jobs_of(trace)
    assert trace.epoch_times is True
    assert [r["submit_time"] for r in rows] == [1714986000.0, 1714986060.0, 1714986120.0]  # +02:00 converted
    assert rows[1]["instance_count"] == 2 and rows[1]["checkpoint_interval"] == 300.0
    assert rows[2]["recorded_start"] == 1714986300.0  # naive = UTC
    assert trace.updates.job_id == ["j1"]
    assert trace.updates.time.tolist() == [1714987800.0]
    assert trace.updates.priority.tolist() == [200]


def test_json_job_row_is_its_index():
    caught = json_error(
        '{"jobs": [{"job_id": "a", "submit_time": 0, "share": "s", "duration": 1},'
        ' {"job_id": "b", "submit_time": 0, "share": "s", "duration": "long"}]}'
    )
    assert (caught.row, caught.field) == (2, "duration")
    assert str(caught) == "row 2, duration: 'long' is not a number of seconds"


def test_json_missing_and_unknown_fields():
    caught = json_error('{"jobs": [{"job_id": "a", "submit_time": 0, "share": "s"}]}')
    assert (caught.row, caught.field) == (1, "duration")
    caught = json_error(
        '{"jobs": [{"job_id": "a", "submit_time": 0, "share": "s", "duration": 1, "gpu": 2}]}'
    )
    assert (caught.row, caught.field) == (1, "gpu")


def test_json_null_optional_fields_take_defaults():
    trace = read_planner_json(
        io.StringIO(
            '{"jobs": [{"job_id": 7, "submit_time": 0, "share": "s", "duration": 1, "priority": null}]}'
        )
    )
    assert trace.job_id == ["7"] and trace.priority.tolist() == [0]


def test_json_priority_update_errors_name_the_update():
    base = '{"jobs": [{"job_id": "a", "submit_time": 0, "share": "s", "duration": 1}], "priority_updates": '
    caught = json_error(
        base + '[{"time": 1, "job_id": "a", "priority": 1}, {"time": -1, "job_id": "a", "priority": 1}]}'
    )
    assert caught.field == "priority_updates[1].time" and caught.row is None
    assert str(caught).startswith("priority_updates[1].time: -1 is before 1970-01-01T00:00:00Z")
    caught = json_error(base + '[{"time": 1, "job_id": "a", "priority": 12000}]}')
    assert caught.field == "priority_updates[0].priority"
    caught = json_error(base + '[{"time": 1, "priority": 1}]}')
    assert caught.field == "priority_updates[0].job_id"
    caught = json_error(base + '[{"time": 1, "job_id": "a", "priority": 1, "why": "x"}]}')
    assert caught.field == "priority_updates[0].why"
    caught = json_error(base + '[{"time": "2024-01-01T00:00:00Z", "job_id": "a", "priority": 1}]}')
    assert caught.field == "priority_updates[0].time" and "ISO-8601" in str(caught)


def test_json_shape_errors():
    assert "not valid JSON" in str(json_error('{"jobs": [}'))
    assert "is an object" in str(json_error("[]"))
    assert json_error('{"jobs": {}}').field == "jobs"
    assert json_error('{"jobs": [], "extra": 1}').field == "extra"
    assert json_error('{"jobs": [3]}').row == 1
    assert str(json_error('{"jobs": []}')).startswith("the trace has no jobs")


def test_json_non_utf8_names_the_line():
    with pytest.raises(InputError, match="line 2 is not UTF-8"):
        read_planner_json(io.BytesIO(b'{"jobs": [\n{"job_id": "\xff"}]}'))


# -- writing and round trips --------------------------------------------------------------


def test_csv_round_trip_of_the_sample(tmp_path):
    trace = read_planner_csv(DATA / "planner_small.csv")
    write_planner_csv(trace, tmp_path / "out.csv")
    assert_same_trace(read_planner_csv(tmp_path / "out.csv"), trace)


def test_json_round_trip_keeps_epoch_times_and_updates(tmp_path):
    trace = read_planner_json(DATA / "planner_small.json")
    write_planner_json(trace, tmp_path / "out.json")
    assert_same_trace(read_planner_json(tmp_path / "out.json"), trace)


def test_round_trip_of_a_generated_trace_through_both_formats():
    trace = generate(500, seed=4, instance_type="ml.g5.xlarge")
    trace.duration[0] = 1234.5678901234  # full float precision survives
    csv_buffer = io.BytesIO()
    write_planner_csv(trace, csv_buffer)
    assert_same_trace(read_planner_csv(io.BytesIO(csv_buffer.getvalue())), trace)
    json_buffer = io.StringIO()
    write_planner_json(trace, json_buffer)
    assert_same_trace(read_planner_json(io.StringIO(json_buffer.getvalue())), trace)


def test_gzip_target_path(tmp_path):
    trace = read_planner_csv(DATA / "planner_small.csv")
    write_planner_csv(trace, tmp_path / "out.csv.gz")
    assert (tmp_path / "out.csv.gz").read_bytes()[:2] == b"\x1f\x8b"
    assert_same_trace(read_planner_csv(tmp_path / "out.csv.gz"), trace)


def test_csv_refuses_a_trace_with_priority_updates():
    trace = read_planner_json(DATA / "planner_small.json")
    with pytest.raises(InputError, match="export it as JSON"):
        write_planner_csv(trace, io.StringIO())


def test_writer_leaves_absent_optional_columns_out():
    trace = read_planner_csv(io.BytesIO(f"{HEADER}\na,0,s,60\n".encode()))
    out = io.StringIO()
    write_planner_csv(trace, out)
    assert out.getvalue() == "job_id,submit_time,share,duration,priority,instance_count\na,0,s,60,0,1\n"


def test_round_trip_with_updates_for_plain_seconds():
    trace = read_planner_csv(io.BytesIO(f"{HEADER}\na,0,s,60\n".encode()))
    trace.updates = PriorityUpdates(np.array([5.5]), ["a"], np.array([9], dtype=np.int32))
    out = io.StringIO()
    write_planner_json(trace, out)
    assert_same_trace(read_planner_json(io.StringIO(out.getvalue())), trace)
