"""TraceMapping: its JSON round trip, priority scales, GPU counting, and the upload preview."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.traces import FORMATS
from scheduling.traces.mapping import IMPORTERS, TraceMapping, columns, preview, rank_priorities

SAMPLES = Path(__file__).parent / "samples"
ITP = Path("/work/shared/data/itp-2021/itp_all_clusters.csv")


def test_every_importer_is_registered_for_read_trace():
    assert set(IMPORTERS) <= set(FORMATS)


def test_mapping_round_trips_through_json():
    mapping = TraceMapping.from_dict(
        {
            "share_column": "Account",
            "share_names": {"cv": "vision"},
            "priority_column": "QOS",
            "priority_mode": "map",
            "priority_map": {"high": 100},
            "instance_types": {"a100": "p4d"},
            "gpus_per_instance": 8,
            "fractional_gpus": "tenths",
        }
    )
    assert TraceMapping.from_dict(mapping.to_dict()) == mapping


def test_from_dict_keeps_the_format_default_for_keys_left_out():
    base = TraceMapping(share_column="vc", user_column="user")
    assert TraceMapping.from_dict({"gpus_per_instance": 2}, base=base).share_column == "vc"


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"share_column": "a", "colour": "red"}, "mapping"),
        ({"share_column": None}, "mapping.share_column"),
        ({"share_column": "a", "priority_mode": "loud"}, "mapping.priority_mode"),
        ({"share_column": "a", "priority_mode": "rank"}, "mapping.priority_column"),
        ({"share_column": "a", "priority_column": "q", "priority_mode": "map"}, "mapping.priority_map"),
        ({"share_column": "a", "priority_map": {"x": 12000}}, "mapping.priority_map.x"),
        ({"share_column": "a", "gpus_per_instance": 0}, "mapping.gpus_per_instance"),
    ],
)
def test_bad_mappings_name_the_setting(data, field):
    with pytest.raises(InputError) as caught:
        TraceMapping.from_dict(data)
    assert caught.value.field == field


def test_rank_priorities_keep_order_and_distinctness():
    raw = np.array([5.0, 4294967295.0, 5.0, 17.0])
    assert rank_priorities(raw).tolist() == [0, 9999, 0, 5000]
    assert rank_priorities(np.array([3.0, 700.0])).tolist() == [3, 700]  # already on the scale
    many = rank_priorities(np.arange(20000, dtype=float) * 7)
    assert many[0] == 0 and many[-1] == 9999 and (np.diff(many) >= 0).all()


def test_gpu_counting():
    whole = TraceMapping(share_default="s")
    assert [whole.instances_for(g) for g in (0, 0.01, 0.46, 1, 2.5)] == [0, 1, 1, 1, 3]
    tenths = TraceMapping(share_default="s", fractional_gpus="tenths")
    assert [tenths.instances_for(g) for g in (0.3, 0.46, 1)] == [3, 5, 10]
    machines = TraceMapping(share_default="s", gpus_per_instance=8)
    assert [machines.instances_for(g) for g in (1, 8, 9)] == [1, 1, 2]


def test_preview_shows_jobs_as_imported():
    rows = preview(SAMPLES / "sacct_header.txt", "slurm-sacct", {"share_column": "User"}, rows=2)
    assert [row["job_id"] for row in rows] == ["1001", "1002"]
    assert rows[0]["share"] == "alice" and rows[0]["instance_count"] == 4


@pytest.mark.skipif(not ITP.exists(), reason="the shared ITP trace is not on this machine")
def test_preview_of_a_large_file_reads_only_its_start():
    rows = preview(ITP, "itp-2021", rows=3)
    assert len(rows) == 3 and rows[0]["share"] == "cluster07"


def test_preview_of_only_skipped_rows_is_empty():
    text = b"job_id,submission_time,duration,num_gpu,cluster\na,0,10,0,c\n"
    assert preview(text, "itp-2021") == []


def test_columns_lists_what_a_mapping_may_name():
    assert columns(SAMPLES / "sacct_noheader.txt", "slurm-sacct")[:3] == ["JobID", "Account", "Partition"]
    assert "vc" in columns(SAMPLES / "helios_cluster_log.csv", "helios")
    assert "jobid" in columns(SAMPLES / "philly_cluster_job_log.json", "philly")
    assert "user" in columns(SAMPLES / "pai_task_table.csv", "alibaba-pai-2020")


def test_unknown_format_for_preview():
    with pytest.raises(InputError) as caught:
        preview(b"", "lsf")
    assert caught.value.field == "format"
