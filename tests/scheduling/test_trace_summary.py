"""Trace summaries: numbers checked by hand on a four-job trace, and bounded size on big ones."""

from __future__ import annotations

import json

import pytest

from scheduling.synthetic import generate
from scheduling.traces.builder import TraceBuilder
from scheduling.traces.summary import summarize


def small_trace():
    builder = TraceBuilder()
    # job, submit, share, duration, instances (of g2: 2 GPUs each), priority, user
    for row, (job_id, submit, share, duration, count, priority, user) in enumerate(
        [
            ("a", 0, "A", 100, 1, 0, "x"),  # 2 GPUs,   200 GPU-s
            ("b", 50, "A", 300, 2, 5, "y"),  # 4 GPUs, 1,200 GPU-s
            ("c", 100, "B", 10, 4, 0, "x"),  # 8 GPUs,    80 GPU-s
            ("d", 200, "B", 1000, 1, 5, None),  # 2 GPUs, 2,000 GPU-s
        ],
        start=1,
    ):
        builder.add_job(
            row,
            job_id=job_id,
            submit_time=submit,
            share=share,
            duration=duration,
            instance_type="g2",
            instance_count=count,
            priority=priority,
            user=user,
            checkpoint_interval=600 if share == "B" else None,
        )
    return builder.build()


def test_totals_and_span():
    summary = summarize(small_trace(), buckets=4, gpus_per_type={"g2": 2})
    assert summary["jobs"] == 4
    assert summary["gpu_hours"] == pytest.approx(3480 / 3600)
    assert summary["span"] == {"start": 0.0, "end": 200.0, "seconds": 200.0, "epoch_times": False}
    assert summary["instance_types"] == {"g2": 4}
    assert summary["users"] == 2
    assert summary["checkpointing_jobs"] == 2
    assert summary["priority_updates"] == 0


def test_per_share_numbers():
    a, b = summarize(small_trace(), buckets=4, gpus_per_type={"g2": 2})["shares"]
    assert (a["name"], a["jobs"], b["name"], b["jobs"]) == ("A", 2, "B", 2)
    assert a["gpu_hours"] == pytest.approx(1400 / 3600)
    assert b["gpu_hours"] == pytest.approx(2080 / 3600)
    assert a["duration_seconds"] == pytest.approx({"mean": 200, "p50": 200, "p95": 290})  # 100 + 0.95 x 200
    assert b["duration_seconds"] == pytest.approx({"mean": 505, "p50": 505, "p95": 950.5})


def test_arrivals_and_demand_per_bucket():
    summary = summarize(small_trace(), buckets=4, gpus_per_type={"g2": 2})
    assert summary["arrivals"]["t"] == [0, 50, 100, 150]
    assert summary["arrivals"]["width"] == 50
    # d is submitted at the span's end: it falls in the last bucket.
    assert summary["arrivals"]["shares"] == {"A": [1, 1, 0, 0], "B": [0, 0, 1, 1]}
    demand = summary["demand"]["shares"]
    assert demand["A"]["gpus_requested"] == [2, 4, 0, 0]
    assert demand["B"]["gpus_requested"] == [0, 0, 8, 2]
    # Started on submission: a holds 2 GPUs over 0-100, b 4 GPUs over 50-350 (cut at 200).
    assert demand["A"]["gpu_seconds"] == pytest.approx([100, 300, 200, 200])
    # c holds 8 GPUs over 100-110; d starts at 200, the span's end.
    assert demand["B"]["gpu_seconds"] == pytest.approx([0, 0, 80, 0])


def test_histograms():
    summary = summarize(small_trace(), buckets=4)
    assert summary["sizes"] == {"values": [1, 2, 4], "jobs": [2, 1, 1], "binned": False}
    assert summary["priorities"] == {"values": [0, 5], "jobs": [2, 2], "binned": False}
    durations = summary["durations"]
    assert durations["edges"][:2] == [0.0, 1.0] and durations["edges"][-1] == pytest.approx(10_000)
    assert len(durations["jobs"]) == len(durations["edges"]) - 1
    counted = {round(durations["edges"][i], 6): n for i, n in enumerate(durations["jobs"]) if n}
    # 10 s, 100 s and 1,000 s sit on bin edges (each opens its bin); 300 s is in [10^2.25, 10^2.5).
    assert counted == {10.0: 1, 100.0: 1, round(10**2.25, 6): 1, 1000.0: 1}


def test_default_is_one_gpu_per_instance_and_untyped_jobs_use_the_only_type():
    assert summarize(small_trace())["gpu_hours"] == pytest.approx(1740 / 3600)
    builder = TraceBuilder()
    builder.add_job(1, job_id="a", submit_time=0, share="s", duration=3600, instance_count=2)
    untyped = builder.build()
    assert summarize(untyped)["gpu_hours"] == pytest.approx(2)
    assert summarize(untyped, gpus_per_type={"ml.p4d.24xlarge": 8})["gpu_hours"] == pytest.approx(16)
    assert summarize(untyped)["instance_types"] == {"": 1}


def test_many_distinct_priorities_are_binned():
    builder = TraceBuilder()
    for i in range(200):
        builder.add_job(i + 1, job_id=str(i), submit_time=i, share="s", duration=60, priority=i)
    priorities = summarize(builder.build())["priorities"]
    assert priorities["binned"] is True
    assert len(priorities["values"]) <= 64
    assert sum(priorities["jobs"]) == 200
    assert priorities["values"][0] == 0 and priorities["upper"][-1] > 199


def test_summary_size_does_not_grow_with_jobs():
    small = json.dumps(summarize(generate(1_000, seed=2)), allow_nan=False)
    large = json.dumps(summarize(generate(50_000, seed=2)), allow_nan=False)
    assert len(large) < 2 * len(small)
    assert len(large) < 100_000


def test_demand_over_time_accounts_for_all_work_ending_within_the_span():
    builder = TraceBuilder()
    builder.add_job(1, job_id="a", submit_time=0, share="s", duration=30, instance_count=3)
    builder.add_job(2, job_id="b", submit_time=1000, share="s", duration=0)
    summary = summarize(builder.build(), buckets=7)
    assert sum(summary["demand"]["shares"]["s"]["gpu_seconds"]) == pytest.approx(90)
    assert sum(summary["arrivals"]["shares"]["s"]) == 2
