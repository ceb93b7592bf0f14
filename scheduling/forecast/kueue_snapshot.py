"""A snapshot from Kueue: ``kubectl get workloads -A -o json`` (``kubectl get workloads,localqueues
-A -o json`` to name the ClusterQueue of workloads not admitted), SEMANTICS.md section 11.

- admitted, not finished (``QuotaReserved``, else ``Admitted``, True; no ``Finished`` True): running
  since that condition's ``lastTransitionTime``; finished workloads are left out; the others are
  pending since ``metadata.creationTimestamp``;
- share = ``status.admission.clusterQueue``, else the ClusterQueue of its LocalQueue
  (``spec.queueName`` in its namespace) from the LocalQueues in the List or ``queue_shares``, as the
  trace importer does; the policy imported from the live configuration names shares by ClusterQueue;
- instance type = the flavor assigned to the GPU resource (flavors are the policy's instance types);
  a pending workload has none yet: the first type its share has quota of **(choice: Kueue tries a
  ClusterQueue's flavors in order)**;
- instances = GPUs (per podSet, ``count`` x the GPUs its pod template requests, requests else limits)
  / the type's GPUs per instance in the policy (1 without one, as the Kueue policy import counts a
  flavor without its annotation); workloads asking no GPU are not in the pool: left out;
- priority = ``spec.priority`` (kept when all are within 0..9999, else ranked keeping their order);
- ``max_runtime_seconds`` = ``spec.maximumExecutionTimeSeconds`` minus the
  ``status.accumulatedPastExecutionTimeSeconds`` already spent;
- T0 = the List's ``time`` when the file carries one (the planner's addition: kubectl writes no
  time), else the latest time the List records **(choice: the snapshot was taken no earlier)**.

Errors name the workload (``items[3]``, namespace/name) and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from scheduling.errors import InputError
from scheduling.forecast.snapshot import Snapshot, SnapshotJob, check_snapshot, default_type, snapshot_time
from scheduling.model import MAX_PRIORITY, Policy
from scheduling.traces.json_fields import JsonFields
from scheduling.traces.kueue_workloads import API_VERSIONS, GPU_RESOURCE, Listed, is_true, pod_gpus

PAST = "status.accumulatedPastExecutionTimeSeconds"


class _Item(JsonFields):
    def __init__(self, index: int, value: Any):
        self.index = index
        self.value = value
        self.where = f"items[{index}]"
        metadata = value.get("metadata") if isinstance(value, Mapping) else None
        if isinstance(metadata, Mapping) and isinstance(metadata.get("name"), str):
            namespace = metadata.get("namespace") or "default"
            self.where = f"items[{index}] ({namespace}/{metadata['name']})"

    def fail(self, message: str, field: str) -> InputError:
        return InputError(message, field=f"{self.where}.{field}")

    def time(self, value: Any, field: str) -> float:
        return self.rfc3339(value, field).timestamp()


def read_kueue_snapshot(
    value: Any,
    *,
    queue_shares: Mapping[str, str] | None = None,
    policy: Policy | None = None,
    gpu_resource: str = GPU_RESOURCE,
) -> Snapshot:
    """``policy`` (the live configuration's) tells how many GPUs an instance of each flavor has and
    which type a workload not admitted will take (``snapshot.default_type``); without it an instance
    is one GPU and the type is left to the forecast."""
    if not isinstance(value, Mapping) or not isinstance(value.get("items"), list):
        raise InputError("must be a kubectl List: {kind: List, items: [...]}", field="items")
    shares = dict(queue_shares or {})
    items = [_Item(i, item) for i, item in enumerate(value["items"])]
    for item in items:
        if not isinstance(item.value, Mapping):
            raise InputError("must be a Kubernetes object", field=item.where)
        if item.value.get("kind") == "LocalQueue":
            _local_queue(item, shares)
    workloads = []
    latest = -math.inf
    for item in items:
        kind = item.value.get("kind")
        if kind == "LocalQueue":
            continue
        if kind != "Workload":
            raise item.fail(f"{kind!r} is not a Workload or LocalQueue", "kind")
        read = _workload(item, gpu_resource)
        latest = max(latest, read["latest"])
        if read["finished"] or not read["gpus"]:
            continue
        workloads.append((item, read))
    t0 = snapshot_time(value, latest, "no time: the List has no workload and no time key")
    priorities = _priorities([read["priority"] for _, read in workloads])
    running: list[SnapshotJob] = []
    pending: list[SnapshotJob] = []
    for (item, read), priority in zip(workloads, priorities, strict=True):
        share = read["cluster_queue"] or shares.get(f"{read['namespace']}/{read['queue']}")
        if share is None:
            raise item.fail(
                f"is not admitted and its LocalQueue {read['namespace']}/{read['queue']} is unknown: "
                "add the LocalQueues (kubectl get workloads,localqueues -A -o json)",
                "spec.queueName",
            )
        flavor = read["flavor"]
        if flavor is None and policy is not None and share in policy.share_index():
            flavor = default_type(policy, share)
        per = 1.0
        if flavor is not None and policy is not None and flavor in policy.instance_types:
            per = float(policy.instance_types[flavor].gpus)
        count = read["gpus"] / per
        if not float(count).is_integer():
            raise item.fail(f"{read['gpus']:g} GPUs are not whole instances of {per:g} GPUs", "spec.podSets")
        limit = read["max_runtime"]
        if limit is not None:
            limit = max(1.0, limit - read["past"])
        if read["started"] is not None and read["started"] > t0:
            raise item.fail("is after the snapshot's time", "status.conditions.lastTransitionTime")
        job = SnapshotJob(
            job_id=read["job_id"],
            share=share,
            instance_type=flavor,
            instance_count=int(count),
            priority=priority,
            started_at=read["started"],
            submit_time=min(read["submit"], t0),
            max_runtime_seconds=limit,
            name=read["name"],
            user=read["namespace"],
        )
        (running if job.running else pending).append(job)
    snapshot = Snapshot(t0, running, pending, [], True)
    check_snapshot(snapshot)
    return snapshot


def _local_queue(item: _Item, shares: dict[str, str]) -> None:
    metadata = item.mapping(item.value.get("metadata"), "metadata")
    name, namespace = metadata.get("name"), metadata.get("namespace")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise item.fail("a LocalQueue needs metadata.name and metadata.namespace", "metadata")
    cluster_queue = item.mapping(item.value.get("spec"), "spec").get("clusterQueue")
    if not isinstance(cluster_queue, str) or not cluster_queue:
        raise item.fail("names no ClusterQueue", "spec.clusterQueue")
    shares.setdefault(f"{namespace}/{name}", cluster_queue)


def _workload(item: _Item, gpu_resource: str) -> dict[str, Any]:
    """What the snapshot needs of one Workload, its fields checked in the order a person reads them."""
    value = item.value
    if value.get("apiVersion") not in API_VERSIONS:
        raise item.fail(f"{value.get('apiVersion')!r} is not {' or '.join(API_VERSIONS)}", "apiVersion")
    metadata = item.mapping(value.get("metadata"), "metadata")
    if not isinstance(metadata.get("name"), str):
        raise item.fail("is missing", "metadata.name")
    namespace = metadata.get("namespace") or "default"
    submit = item.time(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
    spec = item.mapping(value.get("spec"), "spec")
    status = item.mapping(value.get("status"), "status")
    conditions, latest = _conditions(item, status, submit)
    finished = is_true(conditions.get("Finished"))
    started, cluster_queue, admission = _admitted(item, conditions, status.get("admission"), submit, finished)
    pod_sets = spec.get("podSets")
    if not isinstance(pod_sets, list) or not pod_sets:
        raise item.fail("has no podSets", "spec.podSets")
    assignments = _assignments(item, admission) if started is not None else {}
    gpus, flavor = _gpus_and_flavor(item, pod_sets, assignments, gpu_resource)
    priority = spec.get("priority", 0)
    whole_number = isinstance(priority, (int, float)) and not isinstance(priority, bool)
    if not whole_number or not float(priority).is_integer():
        raise item.fail(f"{priority!r} is not a whole number", "spec.priority")
    limit = spec.get("maximumExecutionTimeSeconds")
    if limit is not None:
        limit = float(item.whole(limit, "spec.maximumExecutionTimeSeconds", minimum=1))
    past = status.get("accumulatedPastExecutionTimeSeconds")
    queue = spec.get("queueName") or ""
    if not isinstance(queue, str):
        raise item.fail(f"{queue!r} is not a LocalQueue name", "spec.queueName")
    return {
        "job_id": f"{namespace}/{metadata['name']}", "name": metadata["name"], "namespace": namespace,
        "submit": submit, "started": started, "finished": finished, "cluster_queue": cluster_queue,
        "queue": queue, "gpus": gpus, "flavor": flavor, "priority": int(priority),
        "max_runtime": limit, "latest": latest,
        "past": 0.0 if past is None else float(item.whole(past, PAST)),
    }  # fmt: skip


def _conditions(item: _Item, status: Mapping[str, Any], submit: float) -> tuple[dict[str, Listed], float]:
    """(status.conditions by type, with their index; the latest time among them and ``submit``): the
    latest time of all workloads is the snapshot's time when the List gives none."""
    conditions: dict[str, Listed] = {}
    listed = status.get("conditions") or []
    if not isinstance(listed, list):
        raise item.fail("must be a list", "status.conditions")
    latest = submit
    for i, condition in enumerate(listed):
        if not isinstance(condition, Mapping) or not isinstance(condition.get("type"), str):
            raise item.fail("must be an object with a type", f"status.conditions[{i}]")
        conditions[condition["type"]] = (condition, i)
        if condition.get("lastTransitionTime") is not None:
            at = item.time(condition["lastTransitionTime"], f"status.conditions[{i}].lastTransitionTime")
            latest = max(latest, at)
    return conditions, latest


def _admitted(
    item: _Item, conditions: Mapping[str, Listed], admission: Any, submit: float, finished: bool
) -> tuple[float | None, str | None, Any]:
    """(running since, ClusterQueue, status.admission) of a workload holding quota (QuotaReserved,
    else Admitted, True, and not finished); (None, None, admission as given) for the others."""
    reserved = conditions.get("QuotaReserved") or conditions.get("Admitted")
    if not is_true(reserved) or finished:
        return None, None, admission
    condition, i = reserved  # type: ignore[misc]
    started = item.time(condition.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime")
    admission = item.mapping(admission, "status.admission")
    cluster_queue = admission.get("clusterQueue")
    if not isinstance(cluster_queue, str) or not cluster_queue:
        raise item.fail("an admitted workload names no ClusterQueue", "status.admission.clusterQueue")
    if started < submit:
        raise item.fail("is before its creationTimestamp", f"status.conditions[{i}].lastTransitionTime")
    return started, cluster_queue, admission


def _assignments(item: _Item, admission: Any) -> dict[str, Listed]:
    """status.admission.podSetAssignments by podSet name (``main`` when unnamed), with their index."""
    assignments: dict[str, Listed] = {}
    listed_assignments = item.mapping(admission, "status.admission").get("podSetAssignments") or []
    for j, assignment in enumerate(listed_assignments):
        assignment = item.mapping(assignment, f"status.admission.podSetAssignments[{j}]")
        assignments[str(assignment.get("name", "main"))] = (assignment, j)
    return assignments


def _gpus_and_flavor(
    item: _Item, pod_sets: list, assignments: Mapping[str, Listed], gpu_resource: str
) -> tuple[float, str | None]:
    """(GPUs, the flavor assigned to them or None): per podSet its count (the admission's when it
    has one) x the GPUs of one pod. A planner job runs on one type: several flavors are refused."""
    gpus = 0.0
    flavors: dict[str, float] = {}
    for i, pod_set in enumerate(pod_sets):
        where = f"spec.podSets[{i}]"
        pod_set = item.mapping(pod_set, where)
        count = item.whole(pod_set.get("count", 1), f"{where}.count")
        assigned = assignments.get(str(pod_set.get("name", "main")))
        flavor = None
        if assigned is not None:
            assignment, j = assigned
            if assignment.get("count") is not None:
                count = item.whole(assignment["count"], f"status.admission.podSetAssignments[{j}].count")
            where_flavors = f"status.admission.podSetAssignments[{j}].flavors"
            flavors_of = item.mapping(assignment.get("flavors"), where_flavors)
            flavor = flavors_of.get(gpu_resource)
        per_pod = pod_gpus(item, pod_set.get("template"), where, gpu_resource)
        gpus += count * per_pod
        if flavor and count * per_pod:
            flavors[str(flavor)] = flavors.get(str(flavor), 0.0) + count * per_pod
    if len(flavors) > 1:
        raise item.fail(f"uses several GPU flavors ({', '.join(sorted(flavors))}): a planner job has one",
                        "status.admission.podSetAssignments")  # fmt: skip
    return gpus, next(iter(flavors), None)


def _priorities(values: list[int]) -> list[int]:
    """Kubernetes priorities (any int32) on the planner's 0..9999: kept when all fit, else ranked
    (the lowest 0), keeping their order, as the Kueue trace import does."""
    if all(0 <= v <= MAX_PRIORITY for v in values):
        return values
    distinct = sorted(set(values))
    if len(distinct) > MAX_PRIORITY + 1:
        raise InputError(
            f"{len(distinct)} distinct priorities: at most {MAX_PRIORITY + 1}", field="spec.priority"
        )
    rank = {v: i for i, v in enumerate(distinct)}
    return [rank[v] for v in values]
