"""The AWS Batch service-job history importer: each field mapping on small hand-written records (times
are epoch milliseconds), the three export kinds (describe-service-job, list-service-jobs pages,
EventBridge events), every refusal with the job and the field named, and the committed sample."""

import gzip
import io
import json
from pathlib import Path

import pytest
from conftest import refusal

from scheduling.errors import InputError
from scheduling.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "aws-batch"
T0 = 1_788_000_000_000  # epoch ms


def job(job_id="j1", **changes):
    """A finished 2 x ml.p4d.24xlarge job of share nlp: created at T0, started 10 min later, ran 1 h."""
    record = {
        "jobId": job_id,
        "jobName": f"train-{job_id}",
        "jobQueue": "arn:aws:batch:us-east-1:1:job-queue/q",
        "serviceJobType": "SAGEMAKER_TRAINING",
        "quotaShareName": "nlp",
        "schedulingPriority": 20,
        "status": "SUCCEEDED",
        "createdAt": T0,
        "startedAt": T0 + 600_000,
        "stoppedAt": T0 + 4_200_000,
        "capacityUsage": [{"capacityUnit": "ml.p4d.24xlarge", "quantity": 2}],
        "attempts": [{"startedAt": T0 + 600_000, "stoppedAt": T0 + 4_200_000, "statusReason": "Succeeded"}],
        "preemptionConfiguration": {"preemptionRetriesBeforeTermination": 3},
        "tags": {"team": "language"},
    }
    record.update(changes)
    return {k: v for k, v in record.items() if v is not None}


def read(*records, stats=None, **options):
    text = "\n".join(json.dumps(r) for r in records)
    return read_trace(io.BytesIO(text.encode()), format="aws-batch-jobs", stats=stats, **options)


def test_a_describe_record_becomes_one_job():
    trace = read(job())
    # submit = createdAt, recorded start = startedAt, duration = the attempt's 3,600 s of work
    assert trace.job_id == ["j1"]
    assert trace.submit_time.tolist() == [T0 / 1000]
    assert trace.recorded_start.tolist() == [T0 / 1000 + 600]
    assert trace.duration.tolist() == [3600.0]
    assert trace.share_names == ["nlp"] and trace.type_names == ["ml.p4d.24xlarge"]
    assert trace.instance_count.tolist() == [2] and trace.priority.tolist() == [20]
    assert trace.preemption_retries.tolist() == [3]
    assert trace.name == ["train-j1"]
    assert trace.recorded_preemptions.tolist() == [0]
    assert trace.epoch_times


def test_a_preempted_job_counts_its_last_attempt_as_the_work_and_its_first_as_the_start():
    # preempted after 20 min (T0+10 min to T0+30 min), then ran 50 min from T0+40 min
    attempts = [
        {"startedAt": T0 + 600_000, "stoppedAt": T0 + 1_800_000, "statusReason": "Preempted"},
        {"startedAt": T0 + 2_400_000, "stoppedAt": T0 + 5_400_000, "statusReason": "Succeeded"},
    ]
    summary = {"preemptedAttemptCount": 1, "recentPreemptedAttempts": [attempts[0]]}
    trace = read(
        job(attempts=attempts, startedAt=T0 + 2_400_000, stoppedAt=T0 + 5_400_000, preemptionSummary=summary)
    )
    assert trace.recorded_start.tolist() == [T0 / 1000 + 600]
    assert trace.duration.tolist() == [3000.0]  # the preempted 1,200 s were lost: not work
    assert trace.recorded_preemptions.tolist() == [1]


def test_a_preemption_count_beyond_the_recent_window_is_kept_and_noted():
    recent = [{"startedAt": T0 + 600_000 + i, "stoppedAt": T0 + 700_000 + i} for i in range(5)]
    stats: dict = {}
    trace = read(
        job(preemptionSummary={"preemptedAttemptCount": 7, "recentPreemptedAttempts": recent}), stats=stats
    )
    assert trace.recorded_preemptions.tolist() == [7]
    assert stats["notes"]["preempted_attempts_beyond_recent_window"] == 1


def test_share_falls_back_to_share_identifier_and_may_be_mapped_to_a_tag():
    trace = read(job(quotaShareName=None, shareIdentifier="vision"))
    assert trace.share_names == ["vision"]
    trace = read(job(), mapping={"share_column": "tags.team"})
    assert trace.share_names == ["language"]


def test_type_and_count_come_from_the_payload_when_capacity_usage_counts_instances():
    payload = json.dumps({"ResourceConfig": {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 4}})
    trace = read(
        job(capacityUsage=[{"capacityUnit": "NUM_INSTANCES", "quantity": 4}], serviceRequestPayload=payload)
    )
    assert trace.type_names == ["ml.g5.12xlarge"] and trace.instance_count.tolist() == [4]
    trace = read(job(capacityUsage=None, serviceRequestPayload=payload))
    assert trace.type_names == ["ml.g5.12xlarge"] and trace.instance_count.tolist() == [4]


def test_jobs_not_finished_at_the_export_are_left_out_and_counted():
    stats: dict = {}
    trace = read(
        job("done"),
        job("queued", status="RUNNABLE", startedAt=None, stoppedAt=None, attempts=None),
        job("running", status="RUNNING", stoppedAt=None, attempts=[{"startedAt": T0 + 600_000}]),
        job("failed-queued", status="FAILED", startedAt=None, stoppedAt=None, attempts=None),
        stats=stats,
    )
    assert trace.job_id == ["done"]
    assert stats["skipped"] == {"ended_without_starting": 1, "pending_at_export": 1, "running_at_export": 1}


def test_a_failed_job_is_replayed_for_the_time_it_ran():
    stats: dict = {}
    failed = job(
        status="FAILED",
        stoppedAt=T0 + 1_200_000,
        attempts=[{"startedAt": T0 + 600_000, "stoppedAt": T0 + 1_200_000, "statusReason": "Error"}],
    )
    trace = read(failed, stats=stats)
    assert trace.duration.tolist() == [600.0] and stats["notes"]["failed_jobs"] == 1


def test_list_service_jobs_pages_have_no_priority_and_take_the_default():
    summary = {
        k: v
        for k, v in job().items()
        if k not in ("schedulingPriority", "attempts", "preemptionConfiguration")
    }
    pages = [
        {"jobSummaryList": [summary], "nextToken": "abc"},
        {"jobSummaryList": [dict(summary, jobId="j2")]},
    ]
    stats: dict = {}
    trace = read(*pages, stats=stats, mapping={"default_priority": 50})
    assert trace.priority.tolist() == [50, 50]
    assert stats["default_priority"] == 50 and stats["notes"]["list_summaries_without_priority"] == 2
    assert trace.recorded_preemptions is None  # a summary does not say how often a job was preempted


def test_state_change_events_fold_per_job_and_a_raised_priority_is_an_update():
    def event(minute, status, priority, **detail):
        stamp = f"2026-08-29T{10 + minute // 60:02d}:{minute % 60:02d}:00Z"
        body = dict(job(), status=status, schedulingPriority=priority, **detail)
        return {
            "detail-type": "Batch Service Job State Change",
            "source": "aws.batch",
            "time": stamp,
            "detail": body,
        }

    events = [event(0, "SUBMITTED", 10), event(5, "RUNNABLE", 90), event(70, "SUCCEEDED", 90)]
    trace = read(*reversed(events))  # EventBridge does not promise order
    # submitted at priority 10, raised to 90 at the 5th minute (epoch seconds of that event)
    assert trace.priority.tolist() == [10]
    assert trace.updates.priority.tolist() == [90]
    assert trace.updates.time[0] - trace.updates.time[0] // 86400 * 86400 == (10 * 60 + 5) * 60


def test_gzip_is_looked_through():
    data = gzip.compress(json.dumps(job()).encode())
    assert len(read_trace(io.BytesIO(data), format="aws-batch-jobs")) == 1


# -- refusals: the job and the field named ---------------------------------------------------------


def test_stopped_before_started_is_refused():
    error = refusal(read, job(), job("j2", stoppedAt=T0))
    assert (error.row, error.field) == (2, "stoppedAt")
    assert "job j2" in error.reason and "before startedAt" in error.reason


def test_an_attempt_stopping_before_it_started_is_refused():
    error = refusal(read, job(attempts=[{"startedAt": T0 + 600_000, "stoppedAt": T0}]))
    assert error.field == "attempts[0].stoppedAt"


def test_a_start_before_the_job_was_created_is_refused():
    error = refusal(read, job(startedAt=T0 - 1000, attempts=None))
    assert error.field == "startedAt" and "before its createdAt" in error.reason


def test_a_missing_created_at_is_refused():
    error = refusal(read, job(createdAt=None))
    assert error.field == "createdAt" and error.reason == "job j1: is missing"


def test_a_job_id_repeated_across_pages_is_refused():
    error = refusal(read, {"jobSummaryList": [job()]}, {"jobSummaryList": [job()]})
    assert (error.row, error.field) == (2, "jobId")
    assert error.reason.startswith("job j1 is listed twice: in record 1")


def test_describe_outputs_of_other_kinds_are_refused_by_name():
    error = refusal(read, {"computeEnvironments": [{"computeEnvironmentName": "ce"}]})
    assert error.field == "computeEnvironments" and "describe-compute-environments" in error.reason
    error = refusal(read, {"jobs": [{"jobId": "x", "container": {}}]})
    assert "describe-jobs" in error.reason


def test_jobs_of_another_queue_type_are_refused():
    error = refusal(read, job(serviceJobType="EKS"))
    assert error.field == "serviceJobType" and "'EKS'" in error.reason
    error = refusal(read, job(jobDefinition="arn:...:job-definition/x"))
    assert "ECS/EKS job" in error.reason
    error = refusal(
        read, {"detail-type": "Batch Job State Change", "time": "2026-01-01T00:00:00Z", "detail": job()}
    )
    assert error.field == "detail-type"


def test_a_job_without_a_share_is_refused():
    error = refusal(read, job(quotaShareName=None))
    assert error.field == "quotaShareName" and "nor shareIdentifier" in error.reason


def test_several_instance_types_in_one_job_are_refused():
    usage = [
        {"capacityUnit": "ml.p4d.24xlarge", "quantity": 1},
        {"capacityUnit": "ml.g5.12xlarge", "quantity": 1},
    ]
    assert refusal(read, job(capacityUsage=usage)).field == "capacityUsage"


def test_a_payload_that_is_not_json_is_refused():
    error = refusal(read, job(capacityUsage=None, serviceRequestPayload="{not json"))
    assert error.field == "serviceRequestPayload"


def test_a_priority_outside_the_range_is_refused():
    assert refusal(read, job(schedulingPriority=10_000)).field == "schedulingPriority"


def test_broken_json_names_the_record():
    with pytest.raises(InputError) as caught:
        read_trace(io.BytesIO(json.dumps(job()).encode() + b'\n{"jobId": '), format="aws-batch-jobs")
    assert "record 2" in caught.value.reason


# -- the committed sample -----------------------------------------------------------------------


def test_the_sample_history_in_its_three_forms():
    stats: dict = {}
    described = read_trace(SAMPLES / "describe-service-jobs.json", format="aws-batch-jobs", stats=stats)
    # 412 jobs exported; 50 queued (never started, or preempted and queued again) and 9 running at the export
    assert (stats["source_rows"], len(described)) == (412, 353)
    assert stats["skipped"] == {"pending_at_export": 50, "running_at_export": 9}
    assert described.share_names == ["nlp", "vision", "research", "prod-tuning"]
    assert int(described.recorded_preemptions.sum()) == 95
    listed = read_trace(SAMPLES / "list-service-jobs.json", format="aws-batch-jobs")
    assert listed.job_id == described.job_id and set(listed.priority.tolist()) == {0}
    events = read_trace(SAMPLES / "service-job-events.jsonl.gz", format="aws-batch-jobs")
    # the events end where the describe records do (a few more were STARTING when exported)
    assert len(events) == 353 and len(events.updates) == 11


def test_the_row_limit_is_enforced_while_reading():
    records = [job(f"j{i}") for i in range(5)]
    error = refusal(read, *records, max_rows=3)
    assert error.row == 4 and error.reason == "more than 3 jobs: the limit is 3"
