"""Calibration of preemptions: per share, the preemptions the real scheduler recorded against those of
the replay under the policy in force, with a verdict in words (scheduling.calibration)."""

import io
import json

from aws_example import aws_policy

from scheduling.calibration import calibrate, compare_preemptions, preemption_direction
from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.traces import read_trace

# SEMANTICS.md section 4's AWS example as an AWS Batch history: QS1's p2 borrows QS2's idle instance
# and is preempted (cross-share) when QS2's q submits at t=10 s; the history recorded 3 preemptions of p2.
POLICY = aws_policy(name="aws-example")


def service_job(job_id, share, priority, created_s, started_s, stopped_s, preempted):
    return {
        "jobId": job_id,
        "quotaShareName": share,
        "schedulingPriority": priority,
        "status": "SUCCEEDED",
        "createdAt": created_s * 1000,
        "startedAt": started_s * 1000,
        "stoppedAt": stopped_s * 1000,
        "capacityUsage": [{"capacityUnit": "ml.g5.xlarge", "quantity": 1}],
        "preemptionSummary": {"preemptedAttemptCount": preempted},
    }


def history():
    jobs = [
        service_job("p3", "QS1", 3, 0, 0, 100, 0),
        service_job("p2", "QS1", 2, 0, 0, 100, 3),
        service_job("q", "QS2", 0, 10, 10, 60, 0),
    ]
    return read_trace(io.BytesIO("\n".join(json.dumps(j) for j in jobs).encode()), format="aws-batch-jobs")


def test_the_aws_example_replays_one_preemption_where_three_were_recorded():
    trace = history()
    result = calibrate(trace, replay(Policy.from_dict(POLICY), trace))
    qs1 = next(block for block in result["shares"] if block["name"] == "QS1")
    # QS1: recorded 0 + 3, simulated p2 preempted once by q (cross-share)
    assert (qs1["preemptions"]["recorded"], qs1["preemptions"]["simulated"]) == (3, 1)
    assert qs1["preemptions"]["verdict"] == (
        "simulated preemptions are close to the recorded ones: 1 against 3 recorded (0.3x); "
        "1 job preempted against 1"
    )
    qs2 = next(block for block in result["shares"] if block["name"] == "QS2")
    assert qs2["preemptions"]["verdict"] == "no preemption, in the replay as in the record: 1 job"
    assert result["all"]["preemptions"]["per_100_jobs"] == {"recorded": 100.0, "simulated": 100 / 3}


def test_direction_allows_two_preemptions_or_a_quarter_either_way():
    assert preemption_direction(3, 1) == "close"  # 2 apart
    assert preemption_direction(10, 12) == "close"  # 1.2x
    assert preemption_direction(10, 13) == "more"
    assert preemption_direction(40, 10) == "fewer"


def test_compare_preemptions_counts_jobs_preempted_and_the_ratio():
    # four jobs: recorded 0, 2, 5, 0 (7); simulated 1, 0, 1, 0 (2): fewer, 0.3x
    summary = compare_preemptions([0, 2, 5, 0], [1, 0, 1, 0])
    assert (summary["recorded"], summary["simulated"]) == (7, 2)
    assert summary["jobs_preempted"] == {"recorded": 2, "simulated": 2}
    assert summary["ratio"] == 2 / 7
    assert (
        summary["verdict"]
        == "simulated preemptions are fewer: 2 against 7 recorded (0.3x); 2 jobs preempted against 2"
    )


def test_jobs_without_a_recorded_count_are_left_out_of_the_comparison():
    trace = history()
    trace.recorded_preemptions[1] = -1  # p2's count unknown (a list-service-jobs summary)
    result = calibrate(trace, replay(Policy.from_dict(POLICY), trace))
    assert result["all"]["preemptions"]["jobs"] == 2 and result["all"]["preemptions"]["unknown"] == 1
