"""Alibaba openb 2023 pods: the real shared file (counts, recorded starts) and the choices made."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.traces import read_trace
from scheduling.traces.mapping import trace_rows

OPENB = Path("/work/shared/data/alibaba-openb-2023/openb_pod_list_default.csv")
HEADER = (
    "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,"
    "scheduled_time\n"
)

needs_openb = pytest.mark.skipif(not OPENB.exists(), reason="the shared openb trace is not on this machine")


@needs_openb
def test_the_real_pod_list():
    stats: dict = {}
    trace = read_trace(OPENB, format="alibaba-openb-2023", stats=stats)
    # 8,152 pods: 1,088 ask no GPU, 861 GPU pods were never scheduled
    assert stats["source_rows"] == 8152
    assert stats["skipped"] == {"never_scheduled": 861, "no_gpu": 1088}
    assert len(trace) == 8152 - 1088 - 861 == 6203
    assert trace.recorded_start is not None and not np.isnan(trace.recorded_start).any()
    assert (trace.recorded_start >= trace.submit_time).all()
    assert sorted(trace.share_names) == ["BE", "Burstable", "Guaranteed", "LS"]
    assert sorted(set(trace.priority.tolist())) == [0, 1000, 2000, 3000]
    # every fractional pod holds one whole GPU by default; the largest pods ask 8
    assert sorted(set(trace.instance_count.tolist())) == [1, 2, 4, 8]


@needs_openb
def test_tenths_count_fractional_gpus():
    trace = read_trace(OPENB, format="alibaba-openb-2023", mapping={"fractional_gpus": "tenths"})
    assert trace.type_names == ["gpu-tenth"]
    first = trace_rows(trace, 2)
    assert first[0]["instance_count"] == 10  # openb-pod-0000: gpu_milli 1000
    assert first[1]["instance_count"] == 5  # openb-pod-0001: gpu_milli 460, rounded up to 5 tenths


def test_pod_times_and_qos_priority():
    text = HEADER + (
        "p1,1000,100,1,460,,BE,Running,100,1100,150\n"
        "p2,1000,100,2,1000,V100M16|V100M32,LS,Succeeded,200,900,200\n"
        "p3,1000,100,1,1000,,Burstable,Pending,300,400,\n"
        "p4,1000,100,1,1000,,LS,Failed,300,350,350\n"
    )
    stats: dict = {}
    trace = read_trace(
        text.encode(),
        format="alibaba-openb-2023",
        stats=stats,
        mapping={"instance_types": {"V100M32": "v100"}},
    )
    rows = {row["job_id"]: row for row in trace_rows(trace, 5)}
    assert rows["p1"] == {
        "job_id": "p1",
        "submit_time": 100.0,
        "share": "BE",
        "priority": 0,
        "instance_type": "gpu",
        "instance_count": 1,
        "duration": 950.0,
        "recorded_start": 150.0,
    }
    assert rows["p2"]["instance_type"] == "v100" and rows["p2"]["priority"] == 3000
    assert stats["skipped"] == {"never_scheduled": 1, "zero_duration": 1}


@pytest.mark.parametrize(
    ("row_text", "field", "words"),
    [
        ("p,1,1,1,1000,,LS,Running,100,90,95", "deletion_time", "before scheduled_time"),
        ("p,1,1,1,1000,,LS,Running,100,200,50", "scheduled_time", "before creation_time"),
        ("p,1,1,1,1500,,LS,Running,100,200,150", "gpu_milli", "outside 0..1000"),
        ("p,1,1,1,1000,,XX,Running,100,200,150", "qos", "not in the priority map"),
        ("p,1,1,one,1000,,LS,Running,100,200,150", "num_gpu", "not a whole number"),
    ],
)
def test_errors_name_row_and_field(row_text, field, words):
    text = HEADER + "ok,1,1,1,1000,,LS,Running,0,10,0\n" + row_text + "\n"
    with pytest.raises(InputError, match=words) as caught:
        read_trace(text.encode(), format="alibaba-openb-2023")
    assert (caught.value.row, caught.value.field) == (2, field)
