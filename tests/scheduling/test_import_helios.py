"""Helios cluster_log.csv and Philly (flattened CSV and the original cluster_job_log JSON)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.traces import read_trace
from scheduling.traces.mapping import trace_rows

SAMPLES = Path(__file__).parent / "samples"
HEADER = "job_id,user,vc,gpu_num,cpu_num,node_num,state,submit_time,start_time,end_time,duration,queue\n"


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def rows_of(source, format: str, **options) -> dict[str, dict]:
    trace = read_trace(source, format=format, **options)
    return {row["job_id"]: row for row in trace_rows(trace, len(trace))}


def test_helios_sample():
    stats: dict = {}
    trace = read_trace(SAMPLES / "helios_cluster_log.csv", format="helios", stats=stats)
    assert trace.job_id == ["1425511", "1425512", "1425513", "1425515"]
    assert stats["skipped"] == {"no_gpu": 1, "zero_duration": 1}
    assert trace.epoch_times
    job = trace_rows(trace, 4)[3]
    assert job["share"] == "vcJkd" and job["user"] == "uXBbc" and job["instance_count"] == 16
    assert job["submit_time"] == utc("2020-06-09 18:43:00")
    assert job["recorded_start"] - job["submit_time"] == 1800  # the log's queue column
    assert job["duration"] == 172800


def test_helios_wall_clock_in_beijing_time():
    job = rows_of(SAMPLES / "helios_cluster_log.csv", "helios", timezone="Asia/Shanghai")["1425511"]
    assert job["submit_time"] == utc("2020-06-09 10:41:01")


def test_philly_flattened_csv_uses_end_minus_start_when_duration_is_empty():
    stats: dict = {}
    jobs = rows_of(SAMPLES / "philly_trace.csv", "philly", stats=stats)
    assert jobs["application_1506638472019_14200"]["duration"] == 3600
    assert jobs["application_1506638472019_14199"]["share"] == "ee9e8c"
    assert stats["format"] == "philly" and stats["skipped"] == {"never_started": 1}


def test_philly_json_sums_attempts_and_counts_gpus_over_machines():
    stats: dict = {}
    jobs = rows_of(SAMPLES / "philly_cluster_job_log.json", "philly", stats=stats)
    retried = jobs["application_1506638472019_14199"]
    # two attempts: 01:12:09-01:13:23 (74 s) and 01:13:30-06:53:12 two days later
    assert retried["duration"] == 74 + (utc("2017-10-09 06:53:12") - utc("2017-10-07 01:13:30"))
    assert retried["recorded_start"] == utc("2017-10-07 01:12:09") and retried["instance_count"] == 8
    assert jobs["application_1506638472019_14301"]["instance_count"] == 4  # 2 machines x 2 GPUs
    assert stats["skipped"] == {"never_started": 1, "not_finished": 1}
    assert stats["notes"] == {"retried_attempts_summed": 1}


def test_philly_json_on_one_line_reads_the_same():
    items = json.loads((SAMPLES / "philly_cluster_job_log.json").read_text())
    one_line = json.dumps(items).encode()
    assert rows_of(one_line, "philly") == rows_of(SAMPLES / "philly_cluster_job_log.json", "philly")


def test_philly_json_errors_name_the_job_and_field():
    job = {
        "jobid": "j1",
        "vc": "v",
        "user": "u",
        "submitted_time": "2017-10-01 00:00:00",
        "attempts": [{"start_time": "2017-10-01 00:01:00", "end_time": "later", "detail": []}],
    }
    with pytest.raises(InputError) as caught:
        good = {**job, "jobid": "j0", "attempts": [{**job["attempts"][0], "end_time": "2017-10-01 00:02:00"}]}
        read_trace(json.dumps([good, job]).encode(), format="philly")
    assert (caught.value.row, caught.value.field) == (2, "attempts[0].end_time")
    with pytest.raises(InputError, match="malformed") as caught:
        read_trace(b'[{"jobid": "j1", "vc": ', format="philly")
    assert caught.value.row == 1


@pytest.mark.parametrize(
    ("row_text", "field", "words"),
    [
        (
            "2,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:41:02,-4,0",
            "duration",
            "negative",
        ),
        (
            "2,u,vc,1,1,1,COMPLETED,June 9th,2020-06-09 18:41:01,2020-06-09 18:41:02,1,0",
            "submit_time",
            "timestamp",
        ),
        (
            "2,u,vc,x,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:41:02,1,0",
            "gpu_num",
            "whole number",
        ),
        (
            "2,u,,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:41:02,1,0",
            "vc",
            "needs a share",
        ),
    ],
)
def test_helios_errors_name_row_and_field(row_text, field, words):
    text = HEADER + "1,u,vc,1,1,1,COMPLETED,2020-06-09 18:41:01,2020-06-09 18:41:01,2020-06-09 18:41:02,1,0\n"
    with pytest.raises(InputError, match=words) as caught:
        read_trace((text + row_text + "\n").encode(), format="helios")
    assert (caught.value.row, caught.value.field) == (2, field)


def test_mapping_naming_a_missing_column_is_rejected():
    with pytest.raises(InputError, match="not a column") as caught:
        read_trace(SAMPLES / "helios_cluster_log.csv", format="helios", mapping={"share_column": "team"})
    assert caught.value.field == "mapping.share_column"
