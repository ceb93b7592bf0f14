"""Writes the Kueue org sample: a live configuration with a tree of cohorts and its workload history.

``configuration.yaml`` is what ``kubectl get clusterqueues,cohorts,resourceflavors,
workloadpriorityclasses -o yaml`` prints on a cluster of Acme's ML org (kueue.x-k8s.io/v1beta2, as in
kubernetes-sigs/kueue apis/kueue/v1beta2): the org's root Cohort ``acme-ml`` (a shared spot pool), two
departments (``research``, ``product``), a team cohort ``nlp`` under research, and six ClusterQueues, on
three ResourceFlavors of H100 GPUs: ``reserved`` (bought for a year), ``on-demand`` and ``spot``; each
ClusterQueue lists them in that order with its flavorFungibility. ``kueue-manager-config.yaml`` is the
Kueue manager's Configuration (fair sharing on). ``workloads.json`` is ``kubectl get workloads,
localqueues,clusterqueues,resourceflavors -A -o json``: a few hundred finished, running and pending
Workloads.

The workloads' timelines are the planner's own replay of a synthetic workload under the imported policy,
with the helpers of ``samples/generate.py`` (seeded: running it again writes the same files, with the same
engine), which applies the cohort tree (SEMANTICS.md section 13) and fair sharing over it.

    .venv/bin/python samples/kueue/org/generate.py
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np
import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))
_spec = importlib.util.spec_from_file_location("sample_helpers", ROOT / "samples" / "generate.py")
helpers = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(helpers)

from scheduling.export.kueue_cluster import from_kueue_cluster, load_yaml_documents  # noqa: E402
from scheduling.model import Policy  # noqa: E402
from scheduling.replay.engine import replay  # noqa: E402
from scheduling.trace import UNLIMITED_RETRIES, PriorityUpdates, Trace  # noqa: E402

V1BETA2 = "kueue.x-k8s.io/v1beta2"
GPU = "nvidia.com/gpu"
FLAVORS = ["reserved", "on-demand", "spot"]
# Cohort: parent, own nominalQuota, borrowingLimit, lendingLimit (GPUs per flavor), fair weight
COHORTS = {
    "acme-ml": (None, {"spot": 32}, {}, {}, None),
    "research": ("acme-ml", {"on-demand": 16}, {"reserved": 32}, {}, "2"),
    "nlp": ("research", {}, {}, {"reserved": 16}, None),
    "product": ("acme-ml", {}, {}, {"reserved": 16}, "1"),
}
# ClusterQueue: cohort, nominalQuota per flavor (0 = may borrow it), borrowingLimit, lendingLimit,
# withinClusterQueue, reclaimWithinCohort, fair weight, flavorFungibility (whenCanBorrow, whenCanPreempt)
QUEUES = {
    "llm-pretrain": ("nlp", {"reserved": 64, "on-demand": 0, "spot": 0}, {}, {}, "LowerPriority", "Any", "2",
                     ("TryNextFlavor", "TryNextFlavor")),
    "llm-finetune": ("nlp", {"reserved": 16, "on-demand": 0, "spot": 0}, {}, {}, "LowerOrNewerEqualPriority",
                     "Any", None, ("MayStopSearch", "TryNextFlavor")),
    "vision": ("research", {"reserved": 32, "on-demand": 0, "spot": 0}, {"reserved": 16}, {}, "LowerPriority",
               "LowerPriority", None, ("TryNextFlavor", "TryNextFlavor")),
    "search-ranking": ("product", {"reserved": 32, "on-demand": 8, "spot": 0}, {}, {"reserved": 16}, "Never",
                       "Any", "1", ("MayStopSearch", "TryNextFlavor")),
    "ads-models": ("product", {"reserved": 16, "spot": 0}, {}, {}, "LowerPriority", "Any", None,
                   ("TryNextFlavor", "TryNextFlavor")),
    "eval-gate": ("product", {"reserved": 8}, {"reserved": 0}, {"reserved": 0}, "Never", "Never", None, None),
}  # fmt: skip
PRIORITIES = {"research-low": 100, "standard": 500, "high": 1000, "production": 5000}
# Per ClusterQueue: share of the jobs, GPUs per job, median minutes, priority values
TEAMS = [
    {"name": "llm-pretrain", "weight": 2, "sizes": [8, 16, 16, 32, 64], "minutes": 420,
     "priorities": [500, 1000]},
    {"name": "llm-finetune", "weight": 4, "sizes": [1, 2, 4, 8], "minutes": 90, "priorities": [100, 500]},
    {"name": "vision", "weight": 3, "sizes": [4, 8, 16], "minutes": 240, "priorities": [100, 500]},
    {"name": "search-ranking", "weight": 3, "sizes": [2, 4, 8], "minutes": 180, "priorities": [500, 1000]},
    {"name": "ads-models", "weight": 2, "sizes": [4, 8, 16], "minutes": 200, "priorities": [500]},
    {"name": "eval-gate", "weight": 1, "sizes": [8], "minutes": 60, "priorities": [5000]},
]  # fmt: skip
N_JOBS = 420
# The planner's preemption causes as Kueue's Preempted condition reasons.
PREEMPTION_REASONS = {"in_share": "InClusterQueue", "cross_share": "InCohortReclamation",
                      "fair_sharing": "InCohortFairSharing", "capacity": "InCohortReclamation"}  # fmt: skip
CREATED = helpers.k8s_time(-60 * 86400)


def meta(name: str, **extra) -> dict:
    return {"creationTimestamp": CREATED, "generation": 1, "name": name, "resourceVersion": "2001",
            "uid": helpers.job_uuid(f"org-{name}"), **extra}  # fmt: skip


def resource_groups(quotas: dict, borrowing: dict, lending: dict) -> list[dict]:
    flavors = []
    for flavor in FLAVORS:
        if flavor not in quotas and flavor not in borrowing and flavor not in lending:
            continue
        resource = {"name": GPU, "nominalQuota": quotas.get(flavor, 0)}
        if flavor in borrowing:
            resource["borrowingLimit"] = borrowing[flavor]
        if flavor in lending:
            resource["lendingLimit"] = lending[flavor]
        flavors.append({"name": flavor, "resources": [resource]})
    return [{"coveredResources": [GPU], "flavors": flavors}] if flavors else []


def cohort_objects() -> list[dict]:
    out = []
    for name, (parent, quotas, borrowing, lending, weight) in COHORTS.items():
        spec: dict = {}
        if parent:
            spec["parentName"] = parent
        groups = resource_groups(quotas, borrowing, lending)
        if groups:
            spec["resourceGroups"] = groups
        if weight is not None:
            spec["fairSharing"] = {"weight": weight}
        out.append({"apiVersion": V1BETA2, "kind": "Cohort", "metadata": meta(name), "spec": spec,
                    "status": {"fairSharing": {"weightedShare": 0}}})  # fmt: skip
    return out


def queue_objects() -> list[dict]:
    out = []
    for name, (cohort, quotas, borrowing, lending, within, reclaim, weight, fungible) in QUEUES.items():
        spec: dict = {
            "cohortName": cohort,
            "namespaceSelector": {"matchLabels": {"acme.example/team": name}},
            "queueingStrategy": "BestEffortFIFO",
            "preemption": {"withinClusterQueue": within, "reclaimWithinCohort": reclaim,
                           "borrowWithinCohort": {"policy": "Never"}},
            "resourceGroups": resource_groups(quotas, borrowing, lending),
            "stopPolicy": "None",
        }  # fmt: skip
        if fungible is not None:
            spec["flavorFungibility"] = {"whenCanBorrow": fungible[0], "whenCanPreempt": fungible[1]}
        if weight is not None:
            spec["fairSharing"] = {"weight": weight}
        status = {
            "conditions": [
                {
                    "type": "Active",
                    "status": "True",
                    "reason": "Ready",
                    "message": "Can admit new workloads",
                    "lastTransitionTime": CREATED,
                }
            ]
        }
        out.append({"apiVersion": V1BETA2, "kind": "ClusterQueue", "metadata": meta(name), "spec": spec,
                    "status": status})  # fmt: skip
    return out


def flavor_objects() -> list[dict]:
    out = []
    for flavor in FLAVORS:
        spec: dict = {"nodeLabels": {"acme.example/capacity-type": flavor,
                                     "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}}  # fmt: skip
        if flavor == "spot":
            spec["nodeTaints"] = [{"key": "acme.example/spot", "value": "true", "effect": "NoSchedule"}]
        out.append({"apiVersion": V1BETA2, "kind": "ResourceFlavor", "metadata": meta(flavor), "spec": spec})
    return out


def configuration() -> dict:
    items = queue_objects() + cohort_objects() + flavor_objects()
    items += [{"apiVersion": V1BETA2, "kind": "WorkloadPriorityClass", "metadata": meta(name), "value": value,
               "description": f"{name} training jobs"} for name, value in PRIORITIES.items()]  # fmt: skip
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def manager_configuration() -> dict:
    return {"apiVersion": "config.kueue.x-k8s.io/v1beta2", "kind": "Configuration",
            "namespace": "kueue-system", "fairSharing": {"preemptionStrategies":
            ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]}}  # fmt: skip


def replayed(policy: Policy, jobs: dict) -> tuple[list[list], list[str]]:
    """Each job's attempts [start, stop, how] and the flavor of its last run, from the planner's replay."""
    n = len(jobs["submit"])
    accepted = ["|".join(QUEUES[t["name"]][1]) for t in TEAMS]  # every flavor of the ClusterQueue
    names = list(dict.fromkeys(accepted))
    codes = np.array([names.index(accepted[t]) for t in jobs["team"]], dtype=np.int32)
    trace = Trace(
        job_id=[str(i) for i in range(n)], submit_time=jobs["submit"], share=jobs["team"].astype(np.int32),
        share_names=[t["name"] for t in TEAMS], priority=jobs["priority"], instance_type=codes,
        type_names=names, instance_count=jobs["count"], duration=jobs["duration"],
        checkpoint_interval=np.full(n, np.nan),
        preemption_retries=np.full(n, UNLIMITED_RETRIES, dtype=np.int32),
        updates=PriorityUpdates.empty(),
    )  # fmt: skip
    result = replay(policy, trace, record_events=True)
    attempts: list[list] = [[] for _ in range(n)]
    for event in result.iter_events():
        job = int(event["job_id"])
        if event["event"] == "start":
            attempts[job].append([event["time"], None, None])
        elif event["event"] in ("preempt", "finish", "fail"):
            attempts[job][-1][1] = event["time"]
            attempts[job][-1][2] = event["cause"] if event["event"] == "preempt" else event["event"]
    ran = [job["instance_type"] for job in result.to_dict(include_jobs=True, include_events=False)["jobs"]]
    return attempts, ran


def condition(kind: str, status: str, reason: str, time: float, message: str = "") -> dict:
    return {"type": kind, "status": status, "reason": reason, "message": message,
            "lastTransitionTime": helpers.k8s_time(time)}  # fmt: skip


def workload_object(i: int, jobs: dict, attempts: list, flavor: str | None, rng: np.random.Generator) -> dict:
    team = TEAMS[jobs["team"][i]]["name"]
    gpus = int(jobs["count"][i])
    pods, per_pod = (gpus // 8, 8) if gpus >= 8 else (1, gpus)
    submit = float(jobs["submit"][i])
    lag = float(rng.uniform(3, 30))  # the controller's lag from the planner's start to QuotaReserved
    seen = [a for a in attempts if a[0] <= helpers.EXPORT_AFTER]
    done = [a for a in seen if a[1] is not None and a[1] <= helpers.EXPORT_AFTER]
    preempted = [a for a in done if a[2] not in ("finish", "fail")]
    last = seen[-1] if seen else None
    finished = last is not None and last in done and last[2] in ("finish", "fail")
    running = last is not None and last not in done
    status: dict = {}
    conditions = []
    if finished or running:
        status["admission"] = {
            "clusterQueue": team,
            "podSetAssignments": [
                {"name": "main", "count": pods, "flavors": {GPU: flavor}, "resourceUsage": {GPU: str(gpus)}}
            ],
        }
        conditions.append(condition("QuotaReserved", "True", "QuotaReserved", last[0] + lag))
        conditions.append(condition("Admitted", "True", "Admitted", last[0] + lag + 1))
    else:
        conditions.append(
            condition(
                "QuotaReserved",
                "False",
                "Pending",
                submit + 1,
                f"couldn't assign flavors to pod set main: insufficient quota for {GPU}",
            )
        )
    if finished:
        conditions.append(condition("Finished", "True", "Succeeded", last[1] + lag, "Job finished"))
    if preempted:
        reasons = [PREEMPTION_REASONS[a[2]] for a in preempted]
        conditions.append(
            condition(
                "Preempted",
                "False" if finished or running else "True",
                reasons[-1],
                preempted[-1][1],
                "Preempted to accommodate a workload",
            )
        )
        status["accumulatedPastExecutionTimeSeconds"] = int(sum(a[1] - a[0] for a in preempted))
        status["schedulingStats"] = {
            "evictions": [
                {"reason": "Preempted", "underlyingCause": r, "count": reasons.count(r)}
                for r in sorted(set(reasons))
            ]
        }
    status["conditions"] = conditions
    priority = int(jobs["priority"][i])
    name = f"{team}-train-{i:04d}-{helpers.job_uuid(f'org-wl-{i}')[:5]}"
    return {
        "apiVersion": V1BETA2, "kind": "Workload",
        "metadata": {"creationTimestamp": helpers.k8s_time(submit), "name": name, "namespace": team,
                     "labels": {"acme.example/team": team}, "uid": helpers.job_uuid(f"org-uid-{i}")},
        "spec": {"active": True, "queueName": "training", "priority": priority,
                 "priorityClassName": {v: k for k, v in PRIORITIES.items()}[priority],
                 "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                 "podSets": [{"name": "main", "count": pods, "template": {"spec": {"containers": [
                     {"name": "trainer", "image": f"registry.acme.example/{team}/train:2026.09",
                      "resources": {"requests": {"cpu": "16", GPU: str(per_pod)},
                                    "limits": {GPU: str(per_pod)}}}
                 ], "restartPolicy": "Never"}}}]},
        "status": status,
    }  # fmt: skip


def history(policy: Policy, rng: np.random.Generator) -> dict:
    jobs = helpers.workload(rng, [{**t, "types": ["h100"]} for t in TEAMS], N_JOBS, ["h100"])
    attempts, ran = replayed(policy, jobs)
    items = [workload_object(i, jobs, attempts[i], ran[i], rng) for i in range(N_JOBS)
             if jobs["submit"][i] <= helpers.EXPORT_AFTER]  # fmt: skip
    items += [{"apiVersion": V1BETA2, "kind": "LocalQueue", "metadata": meta("training", namespace=t["name"]),
               "spec": {"clusterQueue": t["name"]}} for t in TEAMS]  # fmt: skip
    items += queue_objects() + flavor_objects()
    return {"apiVersion": "v1", "kind": "List", "items": items, "metadata": {"resourceVersion": ""}}


def main() -> None:
    (HERE / "configuration.yaml").write_text(yaml.safe_dump(configuration(), sort_keys=False))
    (HERE / "kueue-manager-config.yaml").write_text(yaml.safe_dump(manager_configuration(), sort_keys=False))
    paths = (HERE / "configuration.yaml", HERE / "kueue-manager-config.yaml")
    files = [(p.name, p.read_bytes()) for p in paths]
    policy = Policy.from_dict(from_kueue_cluster(load_yaml_documents(files)))
    rng = np.random.default_rng(20260914)
    (HERE / "workloads.json").write_text(json.dumps(history(policy, rng), indent=1) + "\n")


if __name__ == "__main__":
    main()
