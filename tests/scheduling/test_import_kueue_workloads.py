"""The Kueue workload history importer: each field mapping on small hand-written Workloads, LocalQueues
naming the ClusterQueue of workloads never admitted, every refusal with the workload and the field
named, and the committed sample."""

import io
import json
from pathlib import Path

from conftest import refusal

from scheduling.traces import read_trace

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "kueue"


def workload(
    name="wl-1",
    *,
    queue="team-a",
    gpus="4",
    pods=2,
    start="2026-09-07T10:10:00Z",
    end="2026-09-07T11:10:00Z",
    version="v1beta1",
    **status_changes,
):
    """2 pods x 4 GPUs of flavor a100 in ClusterQueue team-a: created 10:00, admitted 10:10, done 11:10."""
    conditions = []
    if start:
        conditions.append({"type": "QuotaReserved", "status": "True", "lastTransitionTime": start})
        conditions.append({"type": "Admitted", "status": "True", "lastTransitionTime": start})
    if end:
        conditions.append(
            {"type": "Finished", "status": "True", "reason": "Succeeded", "lastTransitionTime": end}
        )
    status = {
        "conditions": conditions,
        "admission": {
            "clusterQueue": queue,
            "podSetAssignments": [{"name": "main", "count": pods, "flavors": {"nvidia.com/gpu": "a100"}}],
        }
        if start
        else None,
    }
    status.update(status_changes)
    return {
        "apiVersion": f"kueue.x-k8s.io/{version}",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ns-a",
            "creationTimestamp": "2026-09-07T10:00:00Z",
            "labels": {"team": "alpha"},
        },
        "spec": {
            "queueName": "lq",
            "priority": 100,
            "podSets": [
                {
                    "name": "main",
                    "count": pods,
                    "template": {
                        "spec": {
                            "containers": [
                                {"name": "c", "resources": {"requests": {"nvidia.com/gpu": gpus, "cpu": "8"}}}
                            ]
                        }
                    },
                }
            ],
        },
        "status": {k: v for k, v in status.items() if v is not None},
    }


def local_queue(namespace="ns-a", name="lq", cluster_queue="team-a"):
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "LocalQueue",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"clusterQueue": cluster_queue},
    }


def read(*items, stats=None, **options):
    body = json.dumps({"apiVersion": "v1", "items": list(items), "kind": "List", "metadata": {}})
    return read_trace(io.BytesIO(body.encode()), format="kueue-workloads", stats=stats, **options)


def test_a_finished_workload_becomes_one_job():
    trace = read(workload())
    # 8 GPUs on flavor a100 = 8 instances of type a100; submit 10:00, start 10:10, one hour of work
    assert trace.job_id == ["ns-a/wl-1"]
    assert trace.share_names == ["team-a"] and trace.type_names == ["a100"]
    assert trace.instance_count.tolist() == [8]
    assert trace.recorded_start[0] - trace.submit_time[0] == 600
    assert trace.duration.tolist() == [3600.0]
    assert trace.priority.tolist() == [100]
    assert trace.recorded_preemptions.tolist() == [0]


def test_v1beta2_workloads_read_the_same():
    assert read(workload(version="v1beta2")).duration.tolist() == [3600.0]


def test_past_execution_counts_in_the_work_and_evictions_are_the_recorded_preemptions():
    evicted = workload(
        accumulatedPastExecutionTimeSeconds=1200,
        schedulingStats={
            "evictions": [
                {"reason": "Preempted", "underlyingCause": "InCohortReclamation", "count": 2},
                {"reason": "PodsReadyTimeout", "underlyingCause": "", "count": 1},
            ]
        },
    )
    stats: dict = {}
    trace = read(evicted, stats=stats)
    # 1 h in the last admission + 20 min before it; only the 2 Preempted evictions are preemptions
    assert trace.duration.tolist() == [4800.0]
    assert trace.recorded_preemptions.tolist() == [2]
    # the first start is at most the last admission minus the time admitted before: 10:10 - 20 min
    assert trace.recorded_start[0] == trace.submit_time[0] + 600 - 1200
    assert stats["notes"]["evicted_workloads_start_estimated"] == 1


def test_without_scheduling_stats_a_preempted_condition_counts_one():
    item = workload()
    item["status"]["conditions"].append(
        {
            "type": "Evicted",
            "status": "False",
            "reason": "Preempted",
            "lastTransitionTime": "2026-09-07T10:05:00Z",
        }
    )
    assert read(item).recorded_preemptions.tolist() == [1]


def test_priorities_of_any_size_keep_their_order():
    low, high = workload("low"), workload("high")
    low["spec"]["priority"], high["spec"]["priority"] = -5, 1_000_000
    trace = read(low, high)
    assert trace.priority.tolist() == [0, 9999]


def test_workloads_not_finished_at_the_export_are_left_out_and_counted():
    stats: dict = {}
    running = workload("running", end=None)
    pending = workload("pending", start=None, end=None)
    trace = read(workload(), running, pending, local_queue(), stats=stats)
    assert trace.job_id == ["ns-a/wl-1"]
    assert stats["skipped"] == {"pending_at_export": 1, "running_at_export": 1}


def test_the_share_of_a_workload_without_admission_comes_from_its_local_queue():
    # finished, then its admission was cleared: the ClusterQueue is found through LocalQueue ns-a/lq
    item = workload(queue="team-a")
    del item["status"]["admission"]
    trace = read(item, local_queue(cluster_queue="team-a"))
    assert trace.share_names == ["team-a"]
    trace = read(item, mapping={"queue_shares": {"ns-a/lq": "team-b"}})
    assert trace.share_names == ["team-b"]


def test_the_share_may_be_mapped_to_a_label():
    assert read(workload(), mapping={"share_column": "labels.team"}).share_names == ["alpha"]


# -- refusals -------------------------------------------------------------------------------------


def test_a_workload_without_pod_sets_is_refused():
    item = workload()
    del item["spec"]["podSets"]
    error = refusal(read, workload("ok"), item)
    assert (error.row, error.field) == (2, "spec.podSets")
    assert error.reason.startswith("workload ns-a/wl-1: has no podSets")


def test_a_finished_workload_without_admission_and_no_local_queue_is_refused():
    item = workload()
    del item["status"]["admission"]
    error = refusal(read, item)
    assert error.field == "status.admission.clusterQueue"
    assert "LocalQueue ns-a/lq is unknown" in error.reason


def test_finished_before_admitted_is_refused():
    error = refusal(read, workload(end="2026-09-07T10:05:00Z"))
    assert error.field == "status.conditions[2].lastTransitionTime"
    assert "before it was admitted" in error.reason


def test_admitted_before_created_is_refused():
    error = refusal(read, workload(start="2026-09-07T09:00:00Z"))
    assert error.field == "status.conditions[0].lastTransitionTime"


def test_a_timestamp_that_is_not_rfc3339_is_refused():
    item = workload()
    item["metadata"]["creationTimestamp"] = "yesterday"
    assert refusal(read, item).field == "metadata.creationTimestamp"


def test_a_workload_listed_twice_is_refused():
    error = refusal(read, workload(), workload())
    assert (error.row, error.field) == (2, "metadata.name")


def test_other_kinds_are_refused_by_name():
    error = refusal(
        read, {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Cohort", "metadata": {"name": "q"}}
    )  # (ClusterQueues and ResourceFlavors are read: the flavors a workload could use, section 12)
    assert error.field == "kind" and "import it as a policy" in error.reason
    error = refusal(read, {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}})
    assert "'Job', not a Workload" in error.reason


def test_an_unknown_api_version_is_refused():
    assert refusal(read, workload(version="v1alpha1")).field == "apiVersion"


def test_a_gpu_request_that_is_not_a_number_is_refused():
    error = refusal(read, workload(gpus="many"))
    assert error.field == "spec.podSets[0].template.spec.containers[0].resources.requests.nvidia.com/gpu"


# -- the committed sample -------------------------------------------------------------------------


def test_the_sample_history():
    stats: dict = {}
    trace = read_trace(SAMPLES / "workloads.json", format="kueue-workloads", stats=stats)
    # 389 workloads and 4 LocalQueues; 21 pending and 17 running at the export
    assert (stats["source_rows"], len(trace)) == (393, 351)
    assert stats["skipped"] == {"pending_at_export": 21, "running_at_export": 17}
    assert sorted(trace.share_names) == ["team-nlp", "team-prod", "team-research", "team-vision"]
    assert sorted(trace.type_names) == ["a100-80gb", "l4"]
    assert int(trace.recorded_preemptions.sum()) == 89
    assert stats["notes"]["failed_workloads"] == 13
