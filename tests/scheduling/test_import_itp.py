"""ITP 2021 import: the real shared file, and the rows it skips or rejects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.traces import read_trace

ITP = Path("/work/shared/data/itp-2021/itp_all_clusters.csv")
HEADER = "job_id,submission_time,duration,num_gpu,cluster\n"

needs_itp = pytest.mark.skipif(not ITP.exists(), reason="the shared ITP trace is not on this machine")


@needs_itp
def test_the_whole_itp_trace_imports():
    # how fast is measured by benchmarks/replay_benchmark.py, not here: a loaded machine is no bug
    stats: dict = {}
    trace = read_trace(ITP, format="itp-2021", stats=stats)
    # the published file has no zero-GPU or zero-duration rows: every one of the 69,351 jobs is kept
    assert len(trace) == 69_351 - stats["skipped_total"] == 69_351
    assert sorted(trace.share_names) == [f"cluster{n:02d}" for n in range(1, 11)]
    assert trace.type_names == ["gpu"]
    assert int(trace.instance_count.max()) == 64 and int(trace.instance_count.min()) == 1
    assert not trace.epoch_times and trace.recorded_start is None
    assert float(trace.submit_time.min()) == 1999


@needs_itp
def test_cluster_counts_match_the_file():
    trace = read_trace(ITP, format="itp-2021")
    counts = dict(zip(trace.share_names, np.bincount(trace.share).tolist(), strict=True))
    assert counts["cluster04"] == 15_802 and counts["cluster10"] == 260


def test_zero_gpu_and_zero_duration_rows_are_skipped_and_counted():
    text = HEADER + "a,0,100,0,c1\nb,5,0,2,c1\nc,10,60,4,c2\n"
    stats: dict = {}
    trace = read_trace(text.encode(), format="itp-2021", stats=stats)
    assert trace.job_id == ["c"] and int(trace.instance_count[0]) == 4
    assert stats["skipped"] == {"no_gpu": 1, "zero_duration": 1}


def test_mapping_renames_clusters_and_counts_gpus_in_machines():
    text = HEADER + "a,0,100,16,cluster01\nb,5,50,3,cluster02\n"
    trace = read_trace(
        text.encode(),
        format="itp-2021",
        mapping={
            "share_names": {"cluster01": "vision"},
            "gpus_per_instance": 8,
            "default_instance_type": "node8",
        },
    )
    assert trace.share_names == ["vision", "cluster02"]
    assert trace.type_names == ["node8"] and trace.instance_count.tolist() == [2, 1]


@pytest.mark.parametrize(
    ("rows", "row", "field"),
    [
        ("a,0,-5,1,c\n", 1, "duration"),
        ("a,0,5,1,c\nb,zero,5,1,c\n", 2, "submission_time"),
        ("a,0,5,1.5,c\n", 1, "num_gpu"),
        ("a,0,5,1,c\na,1,5,1,c\n", 2, "job_id"),
        ("a,0,5,1,\n", 1, "cluster"),
        ("a,0,5\n", 1, "num_gpu"),
    ],
)
def test_errors_name_row_and_field(rows, row, field):
    with pytest.raises(InputError) as caught:
        read_trace((HEADER + rows).encode(), format="itp-2021")
    assert (caught.value.row, caught.value.field) == (row, field)


def test_missing_column_is_named():
    with pytest.raises(InputError) as caught:
        read_trace(b"job_id,submission_time,num_gpu,cluster\na,0,1,c\n", format="itp-2021")
    assert caught.value.field == "duration"
