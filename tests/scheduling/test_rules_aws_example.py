"""SEMANTICS.md section 4: the AWS quota-share example, with every time written out by hand."""

from __future__ import annotations

import pytest
from aws_example import AWS_JOBS, AWS_POLICY, AWS_UPDATES, T


def test_aws_example_timeline(run):
    r = run(AWS_POLICY, AWS_JOBS, AWS_UPDATES)
    assert r.events == [
        (0, "p3", "start", None, None),  # p3 runs on QS1's quota
        (0, "p2", "start", None, None),  # p2 borrows QS2's idle instance; p1 waits (QS3 lends nothing)
        (100, "p2", "preempt", "cross_share", "q2"),  # QS2 reclaims its instance from the borrowing QS1
        (100, "q2", "start", None, None),
        (200, "p3", "preempt", "in_share", "p1"),  # p1 raised to 4 outranks p3 inside QS1
        (200, "p1", "start", None, None),
        (500, "p1", "finish", None, None),  # 200 + 300
        (500, "p3", "start", None, None),  # QS1's quota is free again; p3 (3) before p2 (2)
        (600, "q2", "finish", None, None),  # 100 + 500
        (600, "p2", "start", None, None),  # QS2's instance is idle again: p2 borrows it
        (1500, "p3", "finish", None, None),  # no checkpoints: all 1000 s of work again from 500
        (1600, "p2", "finish", None, None),
    ]


def test_aws_example_jobs(run):
    r = run(AWS_POLICY, AWS_JOBS, AWS_UPDATES)
    # (state, first_start, end, wait, queued, preemptions, lost_seconds, reason)
    assert r.row("p3") == ("SUCCEEDED", 0, 1500, 0, 300, 1, 200, None)  # ran 0-200, lost 200, queued 200-500
    assert r.row("p2") == ("SUCCEEDED", 0, 1600, 0, 500, 1, 100, None)  # ran 0-100, lost 100, queued 100-600
    assert r.row("p1") == ("SUCCEEDED", 200, 500, 200, 200, 0, 0, None)
    assert r.row("q2") == ("SUCCEEDED", 100, 600, 0, 0, 0, 0, None)
    assert r.job("q2")["share"] == "QS2"


def test_aws_example_metrics(engine_run):
    summary = engine_run(AWS_POLICY, AWS_JOBS, AWS_UPDATES).raw["summary"]
    assert (summary["jobs"], summary["succeeded"], summary["failed"], summary["unschedulable"]) == (
        4,
        4,
        0,
        0,
    )
    assert summary["preemptions"] == {"cross_share": 1, "in_share": 1, "fair_sharing": 0, "capacity": 0}
    assert summary["lost_instance_seconds"] == pytest.approx(300)
    assert summary["rerun_instance_seconds"] == pytest.approx(300)  # no start-up time
    assert summary["horizon"]["seconds"] == pytest.approx(1600)
    # busy: p3 200 + 1000, p2 100 + 1000, p1 300, q2 500 = 3100 of 3 x 1600 instance-seconds
    assert summary["utilization"] == pytest.approx(3100 / 4800)
    assert summary["useful_utilization"] == pytest.approx((3100 - 300) / 4800)  # minus the lost work
    assert summary["ignored_priority_updates"] == 0
    # wait: 0, 0, 200, 0; JCT: 1500, 1600, 500, 500
    assert summary["wait_seconds"]["mean"] == pytest.approx(50)
    assert summary["wait_seconds"]["max"] == pytest.approx(200)
    assert summary["jct_seconds"]["mean"] == pytest.approx(1025)
    assert summary["jct_seconds"]["max"] == pytest.approx(1600)


def test_aws_example_share_accounting(engine_run):
    out = engine_run(AWS_POLICY, AWS_JOBS, AWS_UPDATES).raw
    by_name = {share["name"]: share["by_type"][T] for share in out["shares"]}
    # QS1 holds 2 instances in [0, 100) and [600, 1500): 1 own + 1 borrowed; 1 own at other times
    assert by_name["QS1"] == pytest.approx(
        {"capacity": 1600, "own": 1600, "borrowed": 1000, "lent": 0, "idle": 0, "stranded": 0}
    )
    # QS2: own q2 [100, 600); lent to QS1 [0, 100) and [600, 1500); idle [1500, 1600)
    assert by_name["QS2"] == pytest.approx(
        {"capacity": 1600, "own": 500, "borrowed": 0, "lent": 1000, "idle": 100, "stranded": 0}
    )
    # QS3 idle throughout; stranded while QS1 had a job pending that could borrow it: [0, 600)
    assert by_name["QS3"] == pytest.approx(
        {"capacity": 1600, "own": 0, "borrowed": 0, "lent": 0, "idle": 1600, "stranded": 600}
    )
