"""Alibaba PAI 2020: tasks folded into jobs, joined with the job table when it is given."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.traces import read_trace
from scheduling.traces.mapping import trace_rows

SAMPLES = Path(__file__).parent / "samples"
TASKS = SAMPLES / "pai_task_table.csv"
JOBS = SAMPLES / "pai_job_table.csv"


def rows_of(**options) -> dict[str, dict]:
    trace = read_trace(TASKS, format="alibaba-pai-2020", **options)
    return {row["job_id"]: row for row in trace_rows(trace, len(trace))}


def test_tasks_fold_into_jobs():
    stats: dict = {}
    jobs = rows_of(stats=stats)
    # 6b2d.. still runs, 7c3e.. never launched, 8d4f.. asks no GPU
    assert list(jobs) == ["4b3f04b66a525d2df903eb16", "4f057009a5d481acec67b088", "5a1c0e22f0aa8e1fcd9b3c11"]
    assert stats["skipped"] == {"never_started": 1, "no_gpu": 1, "not_finished": 1}
    ps_and_workers = jobs["4b3f04b66a525d2df903eb16"]
    # ps (no GPU) + 2 workers at 50% each, each rounded up to a whole GPU; earliest start to latest end
    assert ps_and_workers["instance_count"] == 2
    assert ps_and_workers["duration"] == 4551416 - 4550900
    # without a job table: one share, no user, submitted when it started
    assert ps_and_workers["share"] == "pai" and "user" not in ps_and_workers
    assert ps_and_workers["submit_time"] == ps_and_workers["recorded_start"] == 4550900


def test_job_table_gives_users_and_submission_times():
    jobs = rows_of(job_table=JOBS)
    job = jobs["4b3f04b66a525d2df903eb16"]
    assert job["share"] == job["user"] == "58540f191766"
    assert job["submit_time"] == 4550879 and job["recorded_start"] == 4550900


def test_tenths_and_gpu_type_mapping():
    jobs = rows_of(mapping={"fractional_gpus": "tenths", "instance_types": {"V100M32": "v100-32g-tenth"}})
    assert jobs["4b3f04b66a525d2df903eb16"]["instance_count"] == 10  # 2 x 5 tenths
    assert jobs["5a1c0e22f0aa8e1fcd9b3c11"]["instance_type"] == "v100-32g-tenth"
    assert jobs["5a1c0e22f0aa8e1fcd9b3c11"]["instance_count"] == 80


def test_a_header_line_is_optional():
    header = b"job_name,task_name,inst_num,status,start_time,end_time,plan_cpu,plan_mem,plan_gpu,gpu_type\n"
    with_header = read_trace(header + TASKS.read_bytes(), format="alibaba-pai-2020")
    assert with_header.job_id == read_trace(TASKS, format="alibaba-pai-2020").job_id


def test_the_job_table_given_as_the_tasks_is_explained():
    with pytest.raises(InputError, match="has 10") as caught:
        read_trace(JOBS, format="alibaba-pai-2020")
    assert caught.value.row == 1


@pytest.mark.parametrize(
    ("line", "field", "words"),
    [
        ("j2,worker,1.5,Terminated,10.0,20.0,100.0,1.0,100.0,T4", "inst_num", "whole number"),
        ("j2,worker,1.0,Terminated,30.0,20.0,100.0,1.0,100.0,T4", "end_time", "before start_time"),
        ("j2,worker,1.0,Terminated,10.0,20.0,100.0,1.0,-50.0,T4", "plan_gpu", "negative"),
    ],
)
def test_errors_name_row_and_field(line, field, words):
    text = "j1,worker,1.0,Terminated,10.0,20.0,100.0,1.0,100.0,T4\n" + line + "\n"
    with pytest.raises(InputError, match=words) as caught:
        read_trace(text.encode(), format="alibaba-pai-2020")
    assert (caught.value.row, caught.value.field) == (2, field)


def test_job_table_errors_say_which_table():
    jobs = "4b3f04b66a525d2df903eb16,x,,Terminated,4550879.0,4551416.0\n"
    with pytest.raises(InputError, match="needs a share") as caught:
        read_trace(TASKS, format="alibaba-pai-2020", job_table=jobs.encode())
    assert (caught.value.row, caught.value.field) == (1, "job_table.user")
