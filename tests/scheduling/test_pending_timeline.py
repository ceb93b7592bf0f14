"""Why a job waited, job by job: the timeline rebuilt from the replay's wait history
(scheduling.pending), hand-computed on the AWS example of SEMANTICS.md section 4."""

from __future__ import annotations

import io

import pytest
from aws_example import AWS_POLICY
from conftest import demo_replay

from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.pending import find_job, job_timeline
from scheduling.replay.engine import replay
from scheduling.result import ReplayResult
from scheduling.trace import Trace


@pytest.fixture
def aws(build_trace):
    trace = build_trace(
        [
            {"job_id": "p3", "submit_time": 0, "share": "QS1", "duration": 1000, "priority": 3},
            {"job_id": "p2", "submit_time": 0, "share": "QS1", "duration": 1000, "priority": 2},
            {"job_id": "p1", "submit_time": 0, "share": "QS1", "duration": 1000, "priority": 1},
            {"job_id": "q2", "submit_time": 100, "share": "QS2", "duration": 1000},
        ],
        [{"time": 200, "job_id": "p1", "priority": 4}],
    )
    policy = Policy.from_dict(AWS_POLICY)
    return policy, trace, replay(policy, trace)


def spans(timeline: dict) -> list[tuple]:
    return [(s["start"], s["end"], s["state"], s["reason"] or s["words"]) for s in timeline["segments"]]


def timeline_of(replayed: tuple[Policy, Trace, ReplayResult], job_id: str) -> dict:
    """One job's timeline in a replay given as (policy, trace, result), as the ``aws`` fixture gives it."""
    policy, trace, result = replayed
    return job_timeline(policy, trace, result.outcomes, find_job(trace, job_id))


def test_p2_is_reclaimed_then_waits_for_lendable_capacity(aws):
    timeline = timeline_of(aws, "p2")
    # p2 borrows QS2's idle instance at 0; q2 reclaims it at 100; p2 waits until p1 ends at 1200
    # (QS3's idle instance is RESERVE: nothing lendable), then runs on QS1's own quota to 2200.
    # From 200 to 1100 p3 (priority 3, preempted by p1) waits in the same queue, ahead of p2.
    assert spans(timeline) == [
        (0, 100, "running", "preempted by q2 (cross-share)"),
        (100, 200, "waiting", "nothing_lendable"),
        (200, 1100, "waiting", "nothing_lendable"),
        (1100, 1200, "waiting", "nothing_lendable"),
        (1200, 2200, "running", "succeeded"),
    ]
    behind = [s["words"].endswith("higher-priority jobs of its own queue") for s in timeline["segments"]]
    assert behind == [False, False, True, False, False]
    assert timeline["waited_by_reason_seconds"] == {"nothing_lendable": 1100}


def test_p3_is_preempted_in_share_by_the_raised_p1(aws):
    assert spans(timeline_of(aws, "p3")) == [
        (0, 200, "running", "preempted by p1 (in-share)"),
        (200, 1100, "waiting", "nothing_lendable"),
        (1100, 2100, "running", "succeeded"),
    ]


def test_the_history_survives_the_outcomes_file(aws):
    policy, trace, result = aws
    buffer = io.BytesIO()
    result.save_outcomes(buffer)
    buffer.seek(0)
    outcomes = ReplayResult.load_outcomes(buffer)
    job = find_job(trace, "p1")
    assert job_timeline(policy, trace, outcomes, job) == job_timeline(policy, trace, result.outcomes, job)


def test_a_job_waits_behind_an_earlier_job_of_its_own_queue(build_trace):
    # One instance: a runs 0-100; b and c (same share and size) wait; b, submitted first, is ahead
    # of c from 10 (c's submit) until b starts at 100. c then waits alone until 200.
    policy = Policy.from_dict({"capacity": {"gpu": 1}, "shares": [{"name": "A", "capacity": {"gpu": 1}}]})
    trace = build_trace(
        [
            {"job_id": "a", "submit_time": 0, "share": "A", "duration": 100},
            {"job_id": "b", "submit_time": 5, "share": "A", "duration": 100},
            {"job_id": "c", "submit_time": 10, "share": "A", "duration": 100},
        ]
    )
    timeline = timeline_of((policy, trace, replay(policy, trace)), "c")
    assert [(s["start"], s["end"], s["state"]) for s in timeline["segments"]] == [
        (10, 100, "waiting"),
        (100, 200, "waiting"),
        (200, 300, "running"),
    ]
    assert timeline["segments"][0]["words"].endswith("behind higher-priority jobs of its own queue")
    assert "behind" not in timeline["segments"][1]["words"]
    assert timeline["waited_by_reason_seconds"] == {"pool_full": 190}


def test_an_unknown_job_is_named(aws):
    _, trace, _ = aws
    with pytest.raises(InputError, match="no job 'nope'"):
        find_job(trace, "nope")


@pytest.mark.parametrize("queueing", ["best_effort_fifo", "strict_fifo"])
def test_every_job_waits_exactly_its_queued_time(queueing):
    policy, trace, result, out = demo_replay(1500, 5, queueing)
    for job in range(0, len(trace), 7):
        timeline = job_timeline(policy, trace, result.outcomes, job)
        assert sum(timeline["waited_by_reason_seconds"].values()) == pytest.approx(out["jobs"][job]["queued"])
