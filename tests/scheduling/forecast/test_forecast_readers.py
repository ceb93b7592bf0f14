"""Snapshots from live systems (SEMANTICS.md section 11): Kueue workloads and AWS Batch pages, read
from the samples under samples/forecast/, and their errors naming the record and the field."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import pytest

from scheduling.errors import InputError
from scheduling.forecast import ForecastInputs, forecast, read_snapshot
from scheduling.forecast.kueue_snapshot import read_kueue_snapshot
from scheduling.model import Policy

SAMPLES = Path(__file__).resolve().parents[3] / "samples" / "forecast"


def stamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def kueue() -> dict:
    return json.loads((SAMPLES / "kueue-workloads.json").read_text())


def aws() -> dict:
    return json.loads((SAMPLES / "aws-batch-snapshot.json").read_text())


def by_id(snapshot) -> dict:
    return {job.job_id: job for job in snapshot.jobs}


def test_kueue_workloads():
    snapshot = read_snapshot(kueue())
    assert snapshot.time == stamp("2026-09-20T12:00:00Z")
    jobs = by_id(snapshot)
    assert len(snapshot.running) == 5 and len(snapshot.pending) == 4
    assert "nlp/eval-0000" not in jobs  # finished: not in the queue
    big = jobs["nlp/pretrain-7b-0001"]
    assert big.running and big.started_at == stamp("2026-09-20T06:00:05Z")  # QuotaReserved's time
    assert big.instance_count == 16  # 2 pods x 8 GPUs
    assert (big.share, big.instance_type, big.priority) == ("team-nlp", "a100-80gb", 100)
    assert big.max_runtime_seconds == 86_400
    waiting = jobs["vision/segmenter-0007"]
    assert not waiting.running and waiting.submit_time == stamp("2026-09-20T11:40:00Z")
    assert waiting.share == "team-vision"  # its LocalQueue vision/training's ClusterQueue
    assert waiting.instance_type is None  # no flavor before admission
    assert jobs["nlp/pretrain-13b-0006"].instance_count == 32


def test_kueue_time_is_the_latest_recorded_without_a_time_key():
    data = kueue()
    del data["time"]
    assert read_snapshot(data).time == stamp("2026-09-20T11:55:00Z")  # the last creationTimestamp


def policy_with_gpus(a100_gpus: int) -> Policy:
    data = json.loads((SAMPLES / "kueue-policy.json").read_text())
    data["instance_types"]["a100-80gb"]["gpus"] = a100_gpus
    return Policy.from_dict(data)


def test_kueue_gpus_per_instance_and_priorities_ranked():
    data = kueue()
    for item in data["items"]:
        if item["kind"] == "Workload":
            old = item["spec"]["priority"]
            item["spec"]["priority"] = {100: -5, 500: 100_000}.get(old, old)
    snapshot = read_kueue_snapshot(data, policy=policy_with_gpus(4))
    jobs = by_id(snapshot)
    assert jobs["nlp/pretrain-7b-0001"].instance_count == 4  # 16 GPUs of 4-GPU instances
    assert jobs["nlp/pretrain-13b-0006"].instance_type == "a100-80gb"  # team-nlp's first (only) type
    assert jobs["nlp/pretrain-13b-0006"].instance_count == 8
    # priorities -5, 0, 100000, 1000 ranked in order: -5 -> 0, 0 -> 1, 1000 -> 2, 100000 -> 3
    assert jobs["nlp/finetune-0002"].priority == 0
    assert jobs["research/sweep-0004"].priority == 1
    assert jobs["prod/serve-train-0005"].priority == 2
    assert jobs["vision/detector-0003"].priority == 3


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (
            lambda w: w["metadata"].update(creationTimestamp="yesterday"),
            "items[4] (nlp/pretrain-7b-0001).metadata.creationTimestamp",
        ),
        (
            lambda w: w["spec"]["podSets"][0].update(count=1.5),
            "items[4] (nlp/pretrain-7b-0001).spec.podSets[0].count",
        ),
        (lambda w: w["spec"].update(priority="high"), "items[4] (nlp/pretrain-7b-0001).spec.priority"),
        (
            lambda w: w["spec"].update(maximumExecutionTimeSeconds=-1),
            "items[4] (nlp/pretrain-7b-0001).spec.maximumExecutionTimeSeconds",
        ),
        (
            lambda w: w["status"]["admission"].pop("clusterQueue"),
            "items[4] (nlp/pretrain-7b-0001).status.admission.clusterQueue",
        ),
    ],
)
def test_kueue_errors_name_the_workload_and_field(edit, field):
    data = kueue()
    edit(data["items"][4])
    with pytest.raises(InputError) as caught:
        read_snapshot(data)
    assert caught.value.field == field


def test_kueue_pending_workload_of_unknown_local_queue():
    data = kueue()
    data["items"] = [i for i in data["items"] if i["kind"] != "LocalQueue"]
    with pytest.raises(InputError) as caught:
        read_snapshot(data)
    assert caught.value.field == "items[6] (nlp/pretrain-13b-0006).spec.queueName"  # (LocalQueues removed)


def test_kueue_instances_must_be_whole():
    data = kueue()
    with pytest.raises(InputError) as caught:
        read_kueue_snapshot(data, policy=policy_with_gpus(3))
    assert "not whole instances" in str(caught.value)


def test_aws_batch_pages():
    snapshot = read_snapshot(aws())
    t0 = 1_790_510_400.0
    assert snapshot.time == t0  # the queue snapshot's lastUpdatedAt, the latest time recorded
    jobs = by_id(snapshot)
    running = sorted(j.job_id for j in snapshot.running)
    assert running == ["j-run-nlp-1", "j-run-res-1", "j-run-vis-1", "j-sch-prod-1"]
    assert jobs["j-sch-prod-1"].started_at == t0 - 600 + 1  # SCHEDULED: holds capacity since scheduledAt
    assert jobs["j-run-res-1"].started_at == t0 - 120  # STARTING since startedAt
    nlp = jobs["j-run-nlp-1"]
    assert (nlp.share, nlp.instance_type) == ("nlp", "ml.p4d.24xlarge")
    assert (nlp.instance_count, nlp.priority) == (4, 50)
    assert nlp.max_runtime_seconds == 432_000 and nlp.user == "nlp-user-1"
    queued = jobs["j-q-res-2"]
    assert not queued.running and queued.submit_time == t0 - 1800
    assert (queued.instance_type, queued.instance_count) == ("ml.g5.12xlarge", 6)
    assert snapshot.queue_order == ["j-q-nlp-3", "j-q-vis-2", "j-q-nlp-2", "j-q-res-2"]


def test_aws_batch_front_of_queue_gives_positions():
    data = aws()
    data["job_queue_snapshot"]["frontOfQueue"]["jobs"].reverse()  # nlp-2 before nlp-3, against priority
    policy = Policy.from_dict(json.loads((SAMPLES / "aws-batch-policy.json").read_text()))
    out = forecast(ForecastInputs(policy, read_snapshot(data), samples=1))
    positions = {j["job_id"]: j["position"] for j in out["jobs"]}
    assert positions["j-q-nlp-2"] == 1 and positions["j-q-nlp-3"] == 2
    assert positions["j-run-nlp-1"] is None


def describe(data: dict, job_id: str) -> dict:
    return next(d for d in data["describe_service_job"] if d["jobId"] == job_id)


def test_aws_batch_errors_name_the_record_and_field():
    data = aws()
    data["describe_service_job"] = [d for d in data["describe_service_job"] if d["jobId"] != "j-q-nlp-2"]
    with pytest.raises(InputError) as caught:
        read_snapshot(data)
    assert caught.value.field.endswith("(job 'j-q-nlp-2').jobId")
    assert caught.value.field.startswith("list_service_jobs[")
    for edit, field in [
        (lambda d: d.update(serviceRequestPayload="{not json"), "serviceRequestPayload"),
        (lambda d: d.update(schedulingPriority=12_000), "schedulingPriority"),
        (lambda d: d.update(createdAt="noon"), "createdAt"),
        (lambda d: d.pop("quotaShareName"), "shareIdentifier"),
    ]:
        data = aws()
        index = next(i for i, d in enumerate(data["describe_service_job"]) if d["jobId"] == "j-q-nlp-3")
        edit(data["describe_service_job"][index])
        with pytest.raises(InputError) as caught:
            read_snapshot(data)
        assert caught.value.field == f"describe_service_job[{index}] (job 'j-q-nlp-3').{field}"


def test_forecast_of_each_sample_runs():
    for policy_file, snapshot_file in [("kueue-policy.json", "kueue-workloads.json"),
                                       ("aws-batch-policy.json", "aws-batch-snapshot.json"),
                                       ("policy.json", "snapshot.json")]:  # fmt: skip
        policy = Policy.from_dict(json.loads((SAMPLES / policy_file).read_text()))
        snapshot = read_snapshot((SAMPLES / snapshot_file).read_bytes(), policy=policy)
        out = forecast(ForecastInputs(policy, snapshot, samples=2))
        assert len(out["jobs"]) == len(snapshot)


def test_a_pending_job_without_type_takes_its_shares_first():
    policy = Policy.from_dict(json.loads((SAMPLES / "kueue-policy.json").read_text()))
    snapshot = read_snapshot(kueue(), policy=policy)
    jobs = {j["job_id"]: j for j in forecast(ForecastInputs(policy, snapshot, samples=1))["jobs"]}
    assert jobs["research/ablation-0008"]["instance_type"] == "l4"  # team-research holds only l4
    assert jobs["vision/segmenter-0007"]["instance_type"] == "a100-80gb"  # team-vision: a100 first


def test_unknown_format_and_auto_detection():
    with pytest.raises(InputError):
        read_snapshot({"hello": 1})
    with pytest.raises(InputError) as caught:
        read_snapshot(b"{", fmt="planner")
    assert caught.value.field == "snapshot"
    assert read_snapshot(copy.deepcopy(aws()), fmt="aws-batch") == read_snapshot(aws())
