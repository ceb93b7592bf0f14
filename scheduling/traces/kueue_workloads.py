"""Importer for Kueue workload histories: ``kubectl get workloads -A -o json`` (a ``List`` of
``Workload``, ``kueue.x-k8s.io/v1beta1`` or ``v1beta2``), streamed one Workload at a time. LocalQueues in
the same List (``kubectl get workloads,localqueues -A -o json``) or a mapping name the ClusterQueue of
workloads never admitted. ClusterQueues and ResourceFlavors in it (``kubectl get
workloads,clusterqueues,resourceflavors -A -o json``), or given as ``cluster``, tell which flavors each
workload could have used (SEMANTICS.md section 12): its job then accepts all of them.

Kueue keeps one condition per type, so only the latest transition of each survives: a workload evicted
and admitted again shows its last admission, not its first (see ``_recorded_start``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scheduling.errors import InputError
from scheduling.trace import Trace
from scheduling.traces.fields import check_time_range, epoch_seconds, open_source
from scheduling.traces.json_fields import JsonFields
from scheduling.traces.json_records import JsonRecord, first_keys, iter_json_records
from scheduling.traces.mapping import (
    SKIP_ZERO_DURATION,
    PriorityMode,
    TraceImport,
    TraceMapping,
    split_mapping,
)

FORMAT = "kueue-workloads"
API_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
GPU_RESOURCE = "nvidia.com/gpu"
LIST_KEYS = ("items",)
# an object of a list (a condition, a podSet assignment) and its index there, for messages
Listed = tuple[Mapping[str, Any], int]

# share = the admitting ClusterQueue; priorities are Kubernetes priority values (any int32), put on
# the planner's 0..9999 keeping their order (rank, as for Slurm; values already within stay).
DEFAULT_MAPPING = TraceMapping(
    share_column="clusterQueue", priority_column="priority", priority_mode=PriorityMode.RANK
)
SOURCE_COLUMNS = ("clusterQueue", "queueName", "namespace", "name", "priority")
EXTRA_SETTINGS = ("queue_shares", "gpu_resource")

# Workloads left out (choice), counted in stats["skipped"]:
SKIP_PENDING = "pending_at_export"  # never admitted, or evicted and waiting again: work unknown
SKIP_RUNNING = "running_at_export"  # admitted, not finished: its work is not known yet
SKIP_NO_GPU = "no_gpu"  # asks for no GPU: not in the GPU pool
SKIP_NEVER_ADMITTED = "finished_without_admission"  # deactivated or rejected while queued
CLUSTER_KINDS = ("ClusterQueue", "ResourceFlavor")


@dataclass
class _Cluster:
    """Section 12: per ClusterQueue the flavors of its resource group covering the GPU resource, in the
    order listed, and per ResourceFlavor its node labels."""

    flavors: dict[str, list[str]]
    labels: dict[str, dict[str, str]]

    @classmethod
    def empty(cls) -> _Cluster:
        return cls({}, {})

    def read(self, record: JsonRecord, gpu_resource: str) -> None:
        value = record.value
        kind = value.get("kind")
        metadata = value.get("metadata") if isinstance(value.get("metadata"), Mapping) else {}
        name = metadata.get("name")
        if not isinstance(name, str) or not name:
            raise InputError(f"a {kind} needs metadata.name", row=record.number, field="metadata.name")
        spec = value.get("spec") if isinstance(value.get("spec"), Mapping) else {}
        if kind == "ResourceFlavor":
            labels = spec.get("nodeLabels") or {}
            if not isinstance(labels, Mapping):
                raise InputError(
                    f"ResourceFlavor {name}: must be an object", row=record.number, field="spec.nodeLabels"
                )
            self.labels[name] = {str(k): str(v) for k, v in labels.items()}
            return
        groups = spec.get("resourceGroups") or []
        if not isinstance(groups, list):
            raise InputError(
                f"ClusterQueue {name}: must be a list", row=record.number, field="spec.resourceGroups"
            )
        listed: list[str] = []
        for g, group in enumerate(groups):
            covered = group.get("coveredResources") if isinstance(group, Mapping) else None
            if not isinstance(covered, list) or gpu_resource not in covered:
                continue
            flavors = group.get("flavors") or []
            if not isinstance(flavors, list):
                raise InputError(
                    f"ClusterQueue {name}: must be a list", row=record.number,
                    field=f"spec.resourceGroups[{g}].flavors",
                )  # fmt: skip
            for f, flavor in enumerate(flavors):
                flavor_name = flavor.get("name") if isinstance(flavor, Mapping) else None
                if not isinstance(flavor_name, str) or not flavor_name:
                    raise InputError(
                        f"ClusterQueue {name}: a flavor needs a name", row=record.number,
                        field=f"spec.resourceGroups[{g}].flavors[{f}].name",
                    )  # fmt: skip
                if flavor_name not in listed:
                    listed.append(flavor_name)
        self.flavors[name] = listed

    def usable(self, cluster_queue: str, node_selector: Mapping[str, str]) -> list[str]:
        """The flavors of the ClusterQueue a workload could use, in its order: those whose node labels
        agree with the workload's nodeSelector on every key both name (Kueue's flavor matching; a key
        the flavor does not label is left to the node scheduler)."""
        out = []
        for flavor in self.flavors.get(cluster_queue, []):
            labels = self.labels.get(flavor, {})
            if all(labels.get(key, value) == value for key, value in node_selector.items()):
                out.append(flavor)
        return out


@dataclass
class _Workload:
    """What the import keeps of one Workload until the LocalQueues are known."""

    number: int
    job_id: str
    namespace: str
    queue_name: str
    cluster_queue: str | None
    fields: dict[str, Any]


class _Reader(JsonFields):
    """Reads one Workload's fields; each error names the workload (namespace/name), its record and the
    field path."""

    def __init__(self, record: JsonRecord, job_id: str):
        self.record = record
        self.job_id = job_id

    def fail(self, message: str, field: str) -> InputError:
        return InputError(f"workload {self.job_id}: {message}", row=self.record.number, field=field)

    def time(self, value: Any, field: str) -> float:
        stamp = self.rfc3339(value, field)
        try:
            return check_time_range(epoch_seconds(stamp), repr(value), None, None)
        except InputError as error:
            raise self.fail(error.reason, field) from None

    def count(self, value: Any, field: str) -> int:
        """A count: a whole number, 0 or more."""
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise self.fail(f"{value!r} is not a whole number", field)
        if value < 0:
            raise self.fail(f"{value!r} is negative", field)
        return int(value)


def source_columns(source: Any, **options: Any) -> list[str]:
    """The fields a mapping may use, and ``labels.<key>`` of the first workloads."""
    with open_source(source) as opened:
        found = first_keys(opened, LIST_KEYS, "labels", _labels)
    return [*SOURCE_COLUMNS, *found]


def _labels(record: JsonRecord) -> Mapping[str, Any]:
    """metadata.labels of a record, empty when it has none (or the record is no object)."""
    metadata = record.value.get("metadata") if isinstance(record.value, Mapping) else None
    labels = metadata.get("labels") if isinstance(metadata, Mapping) else None
    return labels if isinstance(labels, Mapping) else {}


def read(
    source: Any,
    *,
    mapping: TraceMapping | Mapping[str, Any] | None = None,
    max_rows: int | None = None,
    stats: dict | None = None,
    source_rows: int | None = None,
    allow_empty: bool = False,
    local_queues: Any = None,
    cluster: Any = None,
) -> Trace | None:
    """A trace of the workloads that were admitted and finished.

    - job_id = ``namespace/name``; submit = ``metadata.creationTimestamp``;
    - share = ``status.admission.clusterQueue``; for a workload never admitted, the ClusterQueue of
      its LocalQueue (``spec.queueName``), from LocalQueues in the List, ``local_queues`` (another
      ``kubectl get localqueues -A -o json``) or the mapping's ``queue_shares``
      (``{"namespace/queue": "cluster-queue"}``);
    - priority = ``spec.priority``;
    - instances = per podSet, its count (``podSetAssignments[].count``, else ``spec.podSets[].count``)
      x the GPUs its pod template requests (``nvidia.com/gpu``, requests else limits, all containers);
      type = the flavor assigned to that resource (``podSetAssignments[].flavors``); with its
      ClusterQueue known (ClusterQueues and ResourceFlavors in the List, or ``cluster``: another
      ``kubectl get clusterqueues,resourceflavors -o json``), every flavor of its resource group for
      that resource whose node labels agree with the pods' ``nodeSelector`` (section 12: the job
      accepts them all, in the ClusterQueue's order);
    - recorded start = the ``QuotaReserved`` (else ``Admitted``) condition's ``lastTransitionTime``;
      end = ``Finished``'s; work = end - start + ``accumulatedPastExecutionTimeSeconds``;
    - recorded preemptions = ``status.schedulingStats.evictions`` with reason ``Preempted`` (else 1 when
      the ``Preempted`` or ``Evicted``/Preempted condition is there).
    """
    chosen, extras = _split_mapping(mapping)
    queue_shares: dict[str, str] = dict(extras.get("queue_shares", {}))
    if local_queues is not None:
        with open_source(local_queues) as opened:
            for record in iter_json_records(opened, list_keys=LIST_KEYS):
                if isinstance(record.value, Mapping) and record.value.get("kind") == "LocalQueue":
                    _read_local_queue(record, queue_shares)
                else:
                    raise InputError("is not a LocalQueue", row=record.number, field="local_queues.kind")
    gpu_resource = extras.get("gpu_resource", GPU_RESOURCE)
    configuration = _Cluster.empty()
    if cluster is not None:
        with open_source(cluster) as opened:
            for record in iter_json_records(opened, list_keys=LIST_KEYS):
                if isinstance(record.value, Mapping) and record.value.get("kind") in CLUSTER_KINDS:
                    configuration.read(record, gpu_resource)
                else:
                    raise InputError(
                        "is not a ClusterQueue or ResourceFlavor", row=record.number, field="cluster.kind"
                    )
    run = TraceImport(FORMAT, chosen, max_rows=max_rows, stats=stats, field_names=_field_names(chosen))
    workloads: list[_Workload] = []
    versions: set[str] = set()
    with open_source(source) as opened:
        for record in iter_json_records(opened, list_keys=LIST_KEYS):
            if source_rows is not None and record.number > source_rows:
                break
            run.source_rows = record.number
            value = record.value
            if isinstance(value, Mapping) and value.get("kind") == "LocalQueue":
                _read_local_queue(record, queue_shares)
                continue
            if isinstance(value, Mapping) and value.get("kind") in CLUSTER_KINDS:
                configuration.read(record, gpu_resource)
                continue
            workload = _read_workload(record, chosen, gpu_resource, run)
            versions.add(value.get("apiVersion"))
            if workload is not None:
                workloads.append(workload)
            if max_rows is not None and len(workloads) > max_rows:  # refused while reading, not after
                raise InputError(f"more than {max_rows} jobs: the limit is {max_rows}", row=record.number)
    seen: set[str] = set()
    for workload in workloads:
        _add(run, chosen, workload, queue_shares, seen, configuration)
    trace = run.finish(epoch_times=True, allow_empty=allow_empty)
    run.stats["api_versions"] = sorted(versions)
    return trace


def _split_mapping(mapping: TraceMapping | Mapping[str, Any] | None) -> tuple[TraceMapping, dict[str, Any]]:
    """TraceMapping's settings, and this importer's own (``queue_shares``, ``gpu_resource``)."""
    own = {"queue_shares": _queue_shares, "gpu_resource": _gpu_resource}
    return split_mapping(mapping, DEFAULT_MAPPING, own)


def _queue_shares(table: Any) -> dict[str, str]:
    """``{"namespace/local-queue": "cluster-queue"}``: the ClusterQueue of workloads never admitted."""
    if not isinstance(table, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) and v.strip() for k, v in table.items()
    ):
        raise InputError(
            'must be an object {"namespace/local-queue": "cluster-queue"}',
            field="mapping.queue_shares",
        )
    return {k.strip(): v.strip() for k, v in table.items()}


def _gpu_resource(name: Any) -> str:
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{name!r} is not a resource name", field="mapping.gpu_resource")
    return name.strip()


def _field_names(mapping: TraceMapping) -> dict[str, str]:
    names = {
        "job_id": "metadata.name",
        "submit_time": "metadata.creationTimestamp",
        "recorded_start": "status.conditions[QuotaReserved].lastTransitionTime",
        "duration": "status.conditions[Finished].lastTransitionTime",
        "priority": "spec.priority",
        "instance_count": "spec.podSets",
        "instance_type": "status.admission.podSetAssignments",
        "recorded_preemptions": "status.schedulingStats.evictions",
    }
    names.update(mapping.field_columns("share"))
    return names


def _read_local_queue(record: JsonRecord, queue_shares: dict[str, str]) -> None:
    value = record.value
    metadata = value.get("metadata") or {}
    name, namespace = metadata.get("name"), metadata.get("namespace")
    cluster_queue = (value.get("spec") or {}).get("clusterQueue")
    if not isinstance(name, str) or not isinstance(namespace, str):
        raise InputError(
            "a LocalQueue needs metadata.name and metadata.namespace",
            row=record.number,
            field="metadata.name",
        )
    if not isinstance(cluster_queue, str) or not cluster_queue:
        raise InputError(
            f"LocalQueue {namespace}/{name} names no ClusterQueue",
            row=record.number,
            field="spec.clusterQueue",
        )
    queue_shares.setdefault(f"{namespace}/{name}", cluster_queue)


# -- one Workload ---------------------------------------------------------------------------------


def _conditions(reader: _Reader, status: Mapping[str, Any]) -> dict[str, tuple[Mapping[str, Any], int]]:
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list):
        raise reader.fail("must be a list", "status.conditions")
    found: dict[str, tuple[Mapping[str, Any], int]] = {}
    for i, condition in enumerate(conditions):
        if not isinstance(condition, Mapping) or not isinstance(condition.get("type"), str):
            raise reader.fail("must be an object with a type", f"status.conditions[{i}]")
        found[condition["type"]] = (condition, i)
    return found


def is_true(condition: tuple[Mapping[str, Any], int] | None) -> bool:
    return condition is not None and condition[0].get("status") == "True"


def pod_gpus(reader: JsonFields, template: Any, where: str, gpu_resource: str) -> float:
    """GPUs one pod of a podSet asks for: the sum over its containers (requests, else limits); the
    trace importer and the forecast's Kueue snapshot count them alike."""
    spec = reader.mapping(reader.mapping(template, f"{where}.template").get("spec"), f"{where}.template.spec")
    containers = spec.get("containers") or []
    if not isinstance(containers, list):
        raise reader.fail("must be a list", f"{where}.template.spec.containers")
    total = 0.0
    for i, container in enumerate(containers):
        path = f"{where}.template.spec.containers[{i}].resources"
        resources = reader.mapping(
            reader.mapping(container, path[: -len(".resources")]).get("resources"), path
        )
        for kind in ("requests", "limits"):
            table = reader.mapping(resources.get(kind), f"{path}.{kind}")
            if gpu_resource in table:
                total += _quantity(reader, table[gpu_resource], f"{path}.{kind}.{gpu_resource}")
                break
    return total


def _node_selector(reader: _Reader, template: Any, where: str) -> dict[str, str]:
    spec = reader.mapping(reader.mapping(template, f"{where}.template").get("spec"), f"{where}.template.spec")
    selector = reader.mapping(spec.get("nodeSelector"), f"{where}.template.spec.nodeSelector")
    return {str(key): str(value) for key, value in selector.items()}


def _quantity(reader: JsonFields, value: Any, field: str) -> float:
    """A Kubernetes quantity of GPUs: a whole number (``4`` or ``"4"``)."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise reader.fail(f"{value!r} is not a number of GPUs", field) from None
    if not math.isfinite(number) or number < 0:
        raise reader.fail(f"{value!r} is not a number of GPUs", field)
    return number


def _read_workload(
    record: JsonRecord, mapping: TraceMapping, gpu_resource: str, run: TraceImport
) -> _Workload | None:
    """What the import keeps of one Workload, its fields checked in the order a person reads them."""
    value = record.value
    metadata, namespace, job_id = _workload_identity(record)
    reader = _Reader(record, job_id)
    labels = reader.mapping(metadata.get("labels"), "metadata.labels")
    if value.get("apiVersion") not in API_VERSIONS:
        raise reader.fail(f"{value.get('apiVersion')!r} is not {' or '.join(API_VERSIONS)}", "apiVersion")
    submit = reader.time(metadata.get("creationTimestamp"), "metadata.creationTimestamp")
    spec = reader.mapping(value.get("spec"), "spec")
    status = reader.mapping(value.get("status"), "status")
    pod_sets = spec.get("podSets")
    if not isinstance(pod_sets, list) or not pod_sets:
        raise reader.fail("has no podSets: a Workload describes its pods in spec.podSets", "spec.podSets")
    admission = status.get("admission")
    if admission is not None and not isinstance(admission, Mapping):
        raise reader.fail("must be an object", "status.admission")
    assignments = _assignments(reader, admission)
    gpus, gpus_by_flavor, node_selector = _pod_sets(reader, pod_sets, assignments, gpu_resource)
    if len(gpus_by_flavor) > 1:
        run.note("workloads_on_several_flavors")
    conditions = _conditions(reader, status)
    fields = {
        "submit": submit,
        "gpus": gpus,
        # a workload on several flavors is counted on the one holding most of its GPUs
        "flavor": max(gpus_by_flavor, key=lambda f: gpus_by_flavor[f]) if gpus_by_flavor else None,
        "priority": _priority(reader, spec.get("priority")),
        "labels": {str(key): str(value) for key, value in labels.items()},
        "name": metadata["name"],
        "node_selector": node_selector,
    }
    _timeline(reader, status, conditions, submit, fields, admission is not None)
    cluster_queue = admission.get("clusterQueue") if admission else None
    if admission is not None and (not isinstance(cluster_queue, str) or not cluster_queue):
        raise reader.fail("names no ClusterQueue", "status.admission.clusterQueue")
    queue_name = spec.get("queueName") or ""
    if not isinstance(queue_name, str):
        raise reader.fail(f"{queue_name!r} is not a LocalQueue name", "spec.queueName")
    return _Workload(record.number, job_id, namespace, queue_name, cluster_queue, fields)


def _workload_identity(record: JsonRecord) -> tuple[Mapping[str, Any], str, str]:
    """(metadata, namespace, job id ``namespace/name``) of a record that must be a Workload; the
    errors before the id is known name the record only."""
    value = record.value
    if not isinstance(value, Mapping):
        raise InputError("is not a Kubernetes object", row=record.number, field=record.where)
    kind = value.get("kind")
    if kind != "Workload":
        hint = (
            " (configuration: import it as a policy)" if kind in ("Cohort", "WorkloadPriorityClass") else ""
        )
        raise InputError(
            f"{record.where} is a {kind!r}, not a Workload{hint}", row=record.number, field="kind"
        )
    metadata = value.get("metadata")
    if not isinstance(metadata, Mapping) or not isinstance(metadata.get("name"), str):
        raise InputError("the Workload has no metadata.name", row=record.number, field="metadata.name")
    namespace = metadata.get("namespace") or "default"
    if not isinstance(namespace, str):
        raise InputError(f"{namespace!r} is not a namespace", row=record.number, field="metadata.namespace")
    return metadata, namespace, f"{namespace}/{metadata['name']}"


def _assignments(reader: _Reader, admission: Mapping[str, Any] | None) -> dict[str, Listed]:
    """status.admission.podSetAssignments by podSet name (``main`` when unnamed), with their index."""
    assignments = {}
    if admission:
        listed = admission.get("podSetAssignments") or []
        if not isinstance(listed, list):
            raise reader.fail("must be a list", "status.admission.podSetAssignments")
        for i, assignment in enumerate(listed):
            if not isinstance(assignment, Mapping):
                raise reader.fail("must be an object", f"status.admission.podSetAssignments[{i}]")
            name = assignment.get("name", "main")
            if not isinstance(name, str):
                raise reader.fail(
                    f"{name!r} is not a podSet name", f"status.admission.podSetAssignments[{i}].name"
                )
            assignments[name] = (assignment, i)
    return assignments


def _pod_sets(
    reader: _Reader,
    pod_sets: list,
    assignments: Mapping[str, Listed],
    gpu_resource: str,
) -> tuple[float, dict[str, float], dict[str, str]]:
    """(GPUs, GPUs per assigned flavor, node selector of the pods asking for GPUs) of spec.podSets:
    per podSet its count (the admission's when it has one) x the GPUs of one pod."""
    gpus_by_flavor: dict[str, float] = {}
    node_selector: dict[str, str] = {}
    gpus = 0.0
    for i, pod_set in enumerate(pod_sets):
        where = f"spec.podSets[{i}]"
        if not isinstance(pod_set, Mapping):
            raise reader.fail("must be an object {name, count, template}", where)
        count = reader.count(pod_set.get("count", 1), f"{where}.count")
        name = pod_set.get("name", "main")
        if not isinstance(name, str):
            raise reader.fail(f"{name!r} is not a podSet name", f"{where}.name")
        assigned = assignments.get(name)
        flavor = None
        if assigned is not None:
            count, flavor = _assigned(reader, *assigned, count, gpu_resource)
        pod_set_gpus = count * pod_gpus(reader, pod_set.get("template"), where, gpu_resource)
        if pod_set_gpus:
            node_selector.update(_node_selector(reader, pod_set.get("template"), where))
        gpus += pod_set_gpus
        if pod_set_gpus and flavor:
            gpus_by_flavor[flavor] = gpus_by_flavor.get(flavor, 0) + pod_set_gpus
    return gpus, gpus_by_flavor, node_selector


def _assigned(
    reader: _Reader, assignment: Mapping[str, Any], j: int, count: int, gpu_resource: str
) -> tuple[int, str | None]:
    """(pods, flavor of the GPU resource) a podSet was admitted with; ``count`` when it says none."""
    where = f"status.admission.podSetAssignments[{j}]"
    if assignment.get("count") is not None:
        count = reader.count(assignment["count"], f"{where}.count")
    flavor = reader.mapping(assignment.get("flavors"), f"{where}.flavors").get(gpu_resource)
    if flavor is not None and (not isinstance(flavor, str) or not flavor):
        raise reader.fail(f"{flavor!r} is not a ResourceFlavor name", f"{where}.flavors.{gpu_resource}")
    return count, flavor


def _priority(reader: _Reader, value: Any) -> int | None:
    """spec.priority: an int32 (Kubernetes priorities may be negative or in the billions)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise reader.fail(f"{value!r} is not a whole number", "spec.priority")
    if not -(2**31) <= value < 2**31:
        raise reader.fail(f"{value!r} is outside the int32 range", "spec.priority")
    return int(value)


def _timeline(
    reader: _Reader,
    status: Mapping[str, Any],
    conditions: dict[str, tuple[Mapping[str, Any], int]],
    submit: float,
    fields: dict[str, Any],
    admitted: bool,
) -> None:
    """Start, end, work and recorded preemptions from the conditions, checked for order."""
    reserved = conditions.get("QuotaReserved") or conditions.get("Admitted")
    finished = conditions.get("Finished")
    start = end = None
    if reserved is not None and (is_true(reserved) or is_true(finished)):
        condition, i = reserved
        start = reader.time(condition.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime")
        if start < submit:
            raise reader.fail(
                f"{condition['type']} at {condition['lastTransitionTime']}, before its creationTimestamp",
                f"status.conditions[{i}].lastTransitionTime",
            )
    if is_true(finished):
        condition, i = finished
        end = reader.time(condition.get("lastTransitionTime"), f"status.conditions[{i}].lastTransitionTime")
        if start is not None and end < start:
            raise reader.fail(
                f"Finished at {condition['lastTransitionTime']}, before it was admitted "
                f"({reserved[0]['lastTransitionTime']})",
                f"status.conditions[{i}].lastTransitionTime",
            )
        fields["failed"] = condition.get("reason") == "Failed"
    past = status.get("accumulatedPastExecutionTimeSeconds")
    past_seconds = 0 if past is None else reader.count(past, "status.accumulatedPastExecutionTimeSeconds")
    if (start is not None or end is not None) and not admitted and not is_true(finished):
        raise reader.fail("is admitted but has no status.admission", "status.admission")
    fields.update(
        start=start,
        end=end,
        past=past_seconds,
        finished=is_true(finished),
        preemptions=_preemptions(reader, status, conditions),
    )


def _preemptions(reader: _Reader, status: Mapping[str, Any], conditions) -> int:
    stats = reader.mapping(status.get("schedulingStats"), "status.schedulingStats")
    evictions = stats.get("evictions")
    if evictions is not None:
        if not isinstance(evictions, list):
            raise reader.fail("must be a list", "status.schedulingStats.evictions")
        total = 0
        for i, eviction in enumerate(evictions):
            if not isinstance(eviction, Mapping):
                raise reader.fail("must be an object", f"status.schedulingStats.evictions[{i}]")
            if eviction.get("reason") == "Preempted":
                total += reader.count(
                    eviction.get("count", 0), f"status.schedulingStats.evictions[{i}].count"
                )
        return total
    # Without schedulingStats only the latest eviction survives: at least one preemption.
    preempted = conditions.get("Preempted")
    evicted = conditions.get("Evicted")
    if preempted is not None or (evicted is not None and evicted[0].get("reason") == "Preempted"):
        return 1
    return 0


def _add(
    run: TraceImport,
    mapping: TraceMapping,
    workload: _Workload,
    queue_shares: Mapping[str, str],
    seen: set[str],
    cluster: _Cluster,
) -> None:
    """The workload as a planner job, or counted as skipped (why: ``_skipped``)."""
    reader = _Reader(JsonRecord(workload.number, None, 0, None), workload.job_id)
    if workload.job_id in seen:
        raise reader.fail("is listed twice", "metadata.name")
    seen.add(workload.job_id)
    fields = workload.fields
    cluster_queue = workload.cluster_queue
    local = f"{workload.namespace}/{workload.queue_name}"
    if cluster_queue is None:
        cluster_queue = queue_shares.get(local)
    if _skipped(run, fields, cluster_queue):
        return
    if cluster_queue is None:
        raise reader.fail(
            f"has no status.admission and its LocalQueue {local} is unknown: add "
            "`kubectl get localqueues -A -o json` or mapping.queue_shares",
            "status.admission.clusterQueue",
        )
    duration = fields["end"] - fields["start"] + fields["past"]
    if duration <= 0:
        run.skip(SKIP_ZERO_DURATION)
        return
    if fields.get("failed"):
        run.note("failed_workloads")
    if fields["past"]:
        run.note("evicted_workloads_start_estimated")
    cells = _cells(workload, cluster_queue)
    share = mapping.share_of(
        cells.get(mapping.share_column or ""), workload.number, mapping.share_column or ""
    )
    priority = (
        run.priority.value(cells.get(mapping.priority_column), workload.number)
        if mapping.priority_column
        else 0
    )
    run.add(
        workload.number,
        job_id=workload.job_id,
        submit_time=fields["submit"],
        share=share,
        duration=duration,
        priority=priority,
        instance_type=_accepted_types(run, mapping, cluster, cluster_queue, fields),
        instance_count=mapping.instances_for(fields["gpus"]),
        user=cells.get(mapping.user_column) if mapping.user_column else None,
        name=cells.get(mapping.name_column) if mapping.name_column else fields["name"],
        recorded_start=_recorded_start(fields),
        recorded_preemptions=fields["preemptions"],
    )


def _skipped(run: TraceImport, fields: Mapping[str, Any], cluster_queue: str | None) -> bool:
    """Whether the workload is left out (counted under its reason): never admitted, still pending
    or running at the export, or asking no GPU."""
    if fields["start"] is None:
        if fields["finished"]:
            run.skip(SKIP_NEVER_ADMITTED)
        else:
            run.skip(SKIP_PENDING)
            if cluster_queue is None:
                run.note("pending_without_known_cluster_queue")
        return True
    if not fields["finished"]:
        run.skip(SKIP_RUNNING)
        return True
    if not fields["gpus"]:
        run.skip(SKIP_NO_GPU)
        return True
    return False


def _cells(workload: _Workload, cluster_queue: str) -> dict[str, str]:
    """The workload's source columns (SOURCE_COLUMNS and ``labels.<key>``), for the mapping."""
    fields = workload.fields
    cells = {
        "clusterQueue": cluster_queue,
        "queueName": workload.queue_name,
        "namespace": workload.namespace,
        "name": fields["name"],
        # a Workload without spec.priority has Kueue's default, 0
        "priority": str(fields["priority"] if fields["priority"] is not None else 0),
    }
    for key, label in fields["labels"].items():
        cells[f"labels.{key}"] = str(label)
    return cells


def _accepted_types(
    run: TraceImport, mapping: TraceMapping, cluster: _Cluster, cluster_queue: str, fields: Mapping[str, Any]
) -> str:
    """Section 12: the instance types the job accepts, in its ClusterQueue's order: every flavor it
    could have used, else the flavor it was admitted on."""
    flavor = fields["flavor"]
    usable = cluster.usable(cluster_queue, fields["node_selector"])
    if usable and flavor and flavor not in usable:
        usable.append(flavor)  # (the configuration changed since it was admitted)
        run.note("admitted_on_a_flavor_its_cluster_queue_no_longer_lists")
    types: list[str] = []
    for name in usable or [flavor]:
        kind = _instance_type(mapping, name)
        if kind not in types:
            types.append(kind)
    if len(types) > 1:
        run.note("workloads_accepting_several_flavors")
    return "|".join(types)


def _instance_type(mapping: TraceMapping, flavor: str | None) -> str:
    if flavor and flavor in mapping.instance_types:
        return mapping.instance_types[flavor]
    if flavor and not mapping.default_instance_type:
        return flavor  # the flavor is the instance type, as the Kueue policy import names it
    return mapping.instance_type_of(flavor)


def _recorded_start(fields: Mapping[str, Any]) -> float:
    """The first start as far as Kueue's status tells it **(choice)**: the latest admission minus the
    time spent admitted before it (accumulatedPastExecutionTimeSeconds). For a workload evicted and
    admitted again this is the latest its first start can have been (the queueing between its
    admissions is not kept), so its recorded wait is an upper bound."""
    return fields["start"] - fields["past"]
