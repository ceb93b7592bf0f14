"""Slurm sacct import: steps, arrays, heterogeneous jobs, TRES GPUs, time zones, header or not."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.traces import read_trace
from scheduling.traces.mapping import trace_rows
from scheduling.traces.sacct import parse_slurm_duration

SAMPLES = Path(__file__).parent / "samples"
HEADER = (
    "JobID|Account|Partition|QOS|Priority|User|Submit|Start|End|Elapsed|AllocTRES|ReqTRES|State|JobName\n"
)


def utc(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def jobs_of(source, **options) -> dict[str, dict]:
    trace = read_trace(source, format="slurm-sacct", **options)
    return {row["job_id"]: row for row in trace_rows(trace, len(trace))}


def test_sample_with_header_folds_steps_arrays_and_components():
    stats: dict = {}
    jobs = jobs_of(SAMPLES / "sacct_header.txt", stats=stats)
    # 1003 is CPU-only, 1004 was cancelled before it started, 1005_[3-5] are pending, 1007 still runs
    assert list(jobs) == ["1001", "1002", "1005_1", "1005_2", "1006"]
    assert stats["skipped"] == {"never_started": 4, "no_gpu": 1, "not_finished": 1}
    assert stats["notes"] == {
        "array_ranges_expanded": 1,
        "heterogeneous_components_folded": 1,
        "steps_folded": 6,
    }
    assert stats["source_rows"] == 16 and stats["jobs"] == 5


def test_job_fields_come_from_the_allocation_row():
    job = jobs_of(SAMPLES / "sacct_header.txt")["1001"]
    assert job["share"] == "vision" and job["user"] == "alice" and job["name"] == "train-resnet"
    assert job["instance_type"] == "gpu" and job["instance_count"] == 4
    assert job["submit_time"] == utc("2024-03-01T12:00:00")
    assert job["recorded_start"] == utc("2024-03-01T12:05:00")
    assert job["duration"] == 7200  # Elapsed 02:00:00, not the step's 01:58:00


def test_days_in_elapsed():
    assert jobs_of(SAMPLES / "sacct_header.txt")["1002"]["duration"] == 2 * 86400
    assert parse_slurm_duration("1-02:03:04") == 93784
    assert parse_slurm_duration("05:06") == 306


def test_heterogeneous_components_hold_all_their_gpus_from_first_start_to_last_end():
    job = jobs_of(SAMPLES / "sacct_header.txt")["1006"]
    assert job["instance_count"] == 6  # 2 + 4
    assert job["duration"] == 70 * 60  # 16:01 to 17:11


def test_priority_keeps_slurm_order_on_the_planner_scale():
    jobs = jobs_of(SAMPLES / "sacct_header.txt")
    # raw 2000 < 3000 < 4294 < 100000 spread over 0..9999
    assert [jobs[j]["priority"] for j in ("1006", "1005_1", "1001", "1002")] == [0, 3333, 6666, 9999]


def test_priority_from_qos_through_a_map():
    jobs = jobs_of(
        SAMPLES / "sacct_header.txt",
        mapping={
            "priority_column": "QOS",
            "priority_mode": "map",
            "priority_map": {"normal": 10, "high": 500},
        },
    )
    assert jobs["1002"]["priority"] == 500 and jobs["1001"]["priority"] == 10


def test_gres_type_becomes_an_instance_type_only_when_mapped():
    jobs = jobs_of(SAMPLES / "sacct_header.txt", mapping={"instance_types": {"a100": "p4d-gpu"}})
    assert jobs["1001"]["instance_type"] == "p4d-gpu"
    assert jobs["1002"]["instance_type"] == "gpu"  # untyped gres/gpu=8


def test_share_from_another_column():
    jobs = jobs_of(
        SAMPLES / "sacct_header.txt", mapping={"share_column": "Partition", "share_names": {"gpu": "main"}}
    )
    assert {job["share"] for job in jobs.values()} == {"main"}


def test_noheader_uses_the_default_format_list():
    assert jobs_of(SAMPLES / "sacct_noheader.txt") == jobs_of(SAMPLES / "sacct_header.txt")


def test_noheader_with_a_custom_format_list():
    text = "77|ml|2024-01-01T00:00:00|2024-01-01T00:10:00|2024-01-01T01:10:00|gres/gpu=2|COMPLETED\n"
    jobs = jobs_of(text.encode(), columns="JobID,Account,Submit,Start,End,AllocTRES,State")
    assert jobs["77"]["duration"] == 3600 and jobs["77"]["instance_count"] == 2


def test_time_zone_applies_to_local_times_across_a_daylight_saving_change():
    # 01:45 CET to 03:15 CEST on 2024-03-31 is 30 minutes; read as UTC it would be 90
    berlin = jobs_of(SAMPLES / "sacct_parsable.txt", timezone="Europe/Berlin")["2001"]
    assert berlin["duration"] == 1800
    assert berlin["recorded_start"] == utc("2024-03-31T00:45:00")
    assert jobs_of(SAMPLES / "sacct_parsable.txt")["2001"]["duration"] == 5400


def test_parsable_trailing_pipe_and_missing_priority_column():
    stats: dict = {}
    jobs = jobs_of(SAMPLES / "sacct_parsable.txt", stats=stats)
    assert jobs["2001"]["priority"] == 0 and stats["mapping"]["priority_mode"] == "none"


def test_gpus_fall_back_to_reqtres_then_to_steps():
    text = HEADER + (
        "5|a|p|normal|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00||"
        "cpu=1,gres/gpu=3|COMPLETED|x\n"
        "6|a|p|normal|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|cpu=1||COMPLETED|y\n"
        "6.0|a||||||2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|cpu=1,gres/gpu:h100=2||COMPLETED|step\n"
    )
    jobs = jobs_of(text.encode())
    assert jobs["5"]["instance_count"] == 3
    assert jobs["6"]["instance_count"] == 2


def test_requeued_job_keeps_first_submit_and_last_attempt():
    text = HEADER + (
        "9|a|p|normal|1|u|2024-01-01T00:00:00|2024-01-01T00:05:00|2024-01-01T00:10:00|00:05:00|gres/gpu=1||"
        "REQUEUED|x\n"
        "9|a|p|normal|1|u|2024-01-01T00:10:00|2024-01-01T00:20:00|2024-01-01T01:20:00|01:00:00|gres/gpu=1||"
        "COMPLETED|x\n"
    )
    stats: dict = {}
    job = jobs_of(text.encode(), stats=stats)["9"]
    assert job["submit_time"] == utc("2024-01-01T00:00:00") and job["duration"] == 3600
    assert stats["notes"]["requeued_attempts_folded"] == 1


@pytest.mark.parametrize(
    ("line", "row", "field", "words"),
    [
        (
            "abc|a|p|n|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|gres/gpu=1||COMPLETED|x",
            1,
            "JobID",
            "not a Slurm job id",
        ),
        (
            "1|a|p|n|1|u|yesterday|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|gres/gpu=1||COMPLETED|x",
            1,
            "Submit",
            "not a timestamp",
        ),
        (
            "1|a|p|n|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|an hour|"
            "gres/gpu=1||COMPLETED|x",
            1,
            "Elapsed",
            "not a Slurm duration",
        ),
        (
            "1|a|p|n|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|gres/gpu=two||COMPLETED|x",
            1,
            "AllocTRES",
            "not a whole number of GPUs",
        ),
        (
            "1|a|p|n|high|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|gres/gpu=1||COMPLETED|x",
            1,
            "Priority",
            "not a number",
        ),
        (
            "1||p|n|1|u|2024-01-01T00:00:00|2024-01-01T00:00:00|2024-01-01T01:00:00|01:00:00|gres/gpu=1||COMPLETED|x",
            1,
            "Account",
            "every job needs a share",
        ),
        (
            "1|a|p|n|1|u|2024-01-01T00:00:00|2024-01-01T02:00:00|2024-01-01T01:00:00||gres/gpu=1||COMPLETED|x",
            1,
            "End",
            "before it starts",
        ),
        (
            "1_[3-1]|a|p|n|1|u|2024-01-01T00:00:00|Unknown|Unknown||gres/gpu=1||PENDING|x",
            1,
            "JobID",
            "empty array range",
        ),
        ("1|a|p|n|1|u|2024-01-01T00:00:00", 1, "Start", "cells but the header has"),
    ],
)
def test_errors_name_row_and_field(line, row, field, words):
    with pytest.raises(InputError, match=words) as caught:
        read_trace((HEADER + line + "\n").encode(), format="slurm-sacct")
    assert (caught.value.row, caught.value.field) == (row, field)


def test_bad_time_zone_and_missing_gpu_columns():
    with pytest.raises(InputError) as caught:
        read_trace(SAMPLES / "sacct_header.txt", format="slurm-sacct", timezone="Mars/Olympus")
    assert caught.value.field == "timezone"
    with pytest.raises(InputError, match="AllocTRES or ReqTRES") as caught:
        read_trace(b"JobID|Account|Submit|Start|End\n", format="slurm-sacct")
    assert caught.value.field == "AllocTRES"


def test_a_file_with_only_skipped_jobs_is_rejected_as_empty():
    text = HEADER + "1|a|p|n|1|u|2024-01-01T00:00:00|Unknown|Unknown|00:00:00||gres/gpu=1|PENDING|x\n"
    with pytest.raises(InputError, match="no jobs"):
        read_trace(text.encode(), format="slurm-sacct")
