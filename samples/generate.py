"""Writes the "Bring your scheduler" samples: for AWS Batch and for Kueue, a configuration as the
scheduler prints it and a job history as it exports it, both written from the published schemas
(AWS Batch API reference: DescribeServiceEnvironments, DescribeSchedulingPolicies, ListQuotaShares,
DescribeJobQueues, DescribeServiceJob, ListServiceJobs, "Batch Service Job State Change" events;
Kueue apis/kueue/v1beta1: Cohort, ResourceFlavor, ClusterQueue, WorkloadPriorityClass, LocalQueue,
Workload; config/v1beta1 Configuration). Real histories cannot be shipped.

The jobs' timelines are the planner's own replay of a synthetic workload under the configuration,
with what a real scheduler adds (a start-up delay before each attempt runs, jobs that fail, priorities
raised while queued), cut at an export time so that some jobs are still queued or running. Everything
is seeded: running it again writes the same files.

    .venv/bin/python samples/generate.py          # rewrites samples/aws-batch/ and samples/kueue/
"""

from __future__ import annotations

import gzip
import hashlib
import json
import sys
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import yaml

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT.parent))

from scheduling.model import Policy  # noqa: E402
from scheduling.replay.engine import replay  # noqa: E402
from scheduling.trace import UNLIMITED_RETRIES, PriorityUpdates, Trace  # noqa: E402

START = datetime(2026, 9, 7, 8, 0, tzinfo=UTC).timestamp()  # a Monday
DAYS = 6
EXPORT_AFTER = DAYS * 86400 - 6 * 3600  # the export runs while the last jobs still queue and run
ACCOUNT = "123456789012"
REGION = "us-east-1"
RECENT_PREEMPTED_ATTEMPTS = 5  # what AWS keeps of a job's preempted attempts (its window)


# ---------------------------------------------------------------------------------------------
# The workload


def workload(rng: np.random.Generator, teams: list[dict], n_jobs: int, types: list[str]) -> dict:
    """Jobs per team: submit (s from START), type, count, duration, priority; sorted by submit."""
    weights = np.array([t["weight"] for t in teams], dtype=float)
    team = rng.choice(len(teams), size=n_jobs, p=weights / weights.sum())
    # Working hours bring more submissions: a daily wave on top of a steady stream.
    submit = np.sort(rng.uniform(0, DAYS * 86400 - 3600, size=n_jobs))
    submit = np.round(submit + 1800 * np.sin(submit / 86400 * 2 * np.pi), 3).clip(0)
    order = np.argsort(submit, kind="stable")
    submit = submit[order]
    team = team[order]
    kinds, counts, durations, priorities = [], [], [], []
    for t in team:
        spec = teams[t]
        kinds.append(types.index(rng.choice(spec["types"])))
        counts.append(int(rng.choice(spec["sizes"])))
        durations.append(
            float(
                np.round(np.clip(spec["minutes"] * 60 * np.exp(0.9 * rng.standard_normal()), 300, 30 * 3600))
            )
        )
        priorities.append(int(rng.choice(spec["priorities"])))
    return {
        "submit": submit,
        "team": team,
        "type": np.array(kinds, dtype=np.int32),
        "count": np.array(counts, dtype=np.int32),
        "duration": np.array(durations),
        "priority": np.array(priorities, dtype=np.int32),
    }


def raised_priorities(rng: np.random.Generator, jobs: dict, teams: list[dict], n: int) -> list[tuple]:
    """(job index, time, new priority): a few queued jobs raised a while after submission, as an
    admin does with UpdateServiceJob or by changing a Workload's priority class."""
    picks = rng.choice(len(jobs["submit"]), size=n, replace=False)
    out = []
    for i in sorted(int(p) for p in picks):
        top = max(teams[jobs["team"][i]]["priorities"])
        if jobs["priority"][i] >= top:
            continue
        out.append((i, float(jobs["submit"][i] + rng.uniform(600, 3 * 3600)), int(top + 10)))
    return out


def timelines(
    policy: dict, jobs: dict, teams: list[dict], types: list[str], updates: list[tuple]
) -> list[dict]:
    """Each job's attempts from the planner's replay: [(start, stop, preempted_by_cause)], the end
    state and the planned failure."""
    n = len(jobs["submit"])
    trace = Trace(
        job_id=[str(i) for i in range(n)],
        submit_time=jobs["submit"],
        share=jobs["team"].astype(np.int32),
        share_names=[t["name"] for t in teams],
        priority=jobs["priority"],
        instance_type=jobs["type"],
        type_names=list(types),
        instance_count=jobs["count"],
        duration=jobs["duration"],
        checkpoint_interval=np.full(n, np.nan),
        preemption_retries=np.full(n, UNLIMITED_RETRIES, dtype=np.int32),
        updates=PriorityUpdates(
            np.array([u[1] for u in updates]),
            [str(u[0]) for u in updates],
            np.array([u[2] for u in updates], dtype=np.int32),
        ),
    )
    result = replay(Policy.from_dict(policy), trace, record_events=True)
    attempts: list[list[list]] = [[] for _ in range(n)]
    for event in result.iter_events():
        job = int(event["job_id"])
        if event["event"] == "start":
            attempts[job].append([event["time"], None, None])
        elif event["event"] in ("preempt", "finish", "fail"):
            attempts[job][-1][1] = event["time"]
            attempts[job][-1][2] = event["cause"] if event["event"] == "preempt" else event["event"]
    return [{"attempts": a} for a in attempts]


# ---------------------------------------------------------------------------------------------
# AWS Batch


AWS_TYPES = ["ml.p4d.24xlarge", "ml.g5.12xlarge"]
AWS_TEAMS = [
    {
        "name": "nlp",
        "weight": 3,
        "types": ["ml.p4d.24xlarge"],
        "sizes": [1, 1, 2, 2, 4],
        "minutes": 150,
        "priorities": [10, 10, 20, 50],
    },
    {
        "name": "vision",
        "weight": 3,
        "types": ["ml.p4d.24xlarge", "ml.g5.12xlarge"],
        "sizes": [1, 1, 2],
        "minutes": 100,
        "priorities": [10, 20],
    },
    {
        "name": "research",
        "weight": 4,
        "types": ["ml.g5.12xlarge"],
        "sizes": [1, 1, 1, 2, 4],
        "minutes": 120,
        "priorities": [0, 0, 10],
    },
    {
        "name": "prod-tuning",
        "weight": 1,
        "types": ["ml.p4d.24xlarge"],
        "sizes": [1, 2],
        "minutes": 90,
        "priorities": [50, 80],
    },
]
AWS_QUOTAS = {
    "nlp": ({"ml.p4d.24xlarge": 5}, "LEND_AND_BORROW", 100, "ENABLED"),
    "vision": ({"ml.p4d.24xlarge": 3, "ml.g5.12xlarge": 3}, "LEND", None, "DISABLED"),
    "research": ({"ml.g5.12xlarge": 5}, "LEND_AND_BORROW", 200, "ENABLED"),
    "prod-tuning": ({"ml.p4d.24xlarge": 2}, "RESERVE", None, "DISABLED"),
}
AWS_CAPACITY = {"ml.p4d.24xlarge": 11, "ml.g5.12xlarge": 8}
AWS_GPUS = {"ml.p4d.24xlarge": 8, "ml.g5.12xlarge": 4}
AWS_PRICES = {"ml.p4d.24xlarge": 37.69, "ml.g5.12xlarge": 7.09}


def aws_policy() -> dict:
    shares = []
    for name, (quota, strategy, borrow, in_share) in AWS_QUOTAS.items():
        share = {
            "name": name,
            "capacity": quota,
            "strategy": strategy,
            "in_share_preemption": "lower_priority" if in_share == "ENABLED" else "never",
            "reclaim": "any",
        }
        if borrow is not None:
            share["borrow_limit_percent"] = borrow
        shares.append(share)
    return {
        "name": "ml-training",
        "instance_types": {t: {"gpus": AWS_GPUS[t], "hourly_price": AWS_PRICES[t]} for t in AWS_TYPES},
        "capacity": AWS_CAPACITY,
        "queueing": "best_effort_fifo",
        "startup_seconds": 0,
        "shares": shares,
    }


def arn(kind: str, name: str) -> str:
    return f"arn:aws:batch:{REGION}:{ACCOUNT}:{kind}/{name}"


def aws_configuration() -> list[dict]:
    """What the four describe calls print, in the order a script runs them."""
    environment = {
        "serviceEnvironmentName": "ml-training",
        "serviceEnvironmentArn": arn("service-environment", "ml-training"),
        "serviceEnvironmentType": "SAGEMAKER_TRAINING",
        "state": "ENABLED",
        "status": "VALID",
        "capacityLimits": [{"maxCapacity": n, "capacityUnit": t} for t, n in AWS_CAPACITY.items()],
        "tags": {"team": "ml-platform"},
    }
    policy = {
        "name": "ml-quota-policy",
        "arn": arn("scheduling-policy", "ml-quota-policy"),
        "quotaSharePolicy": {"idleResourceAssignmentStrategy": "FIFO"},
        "tags": {},
    }
    queue = {
        "jobQueueName": "ml-training-queue",
        "jobQueueArn": arn("job-queue", "ml-training-queue"),
        "state": "ENABLED",
        "schedulingPolicyArn": policy["arn"],
        "status": "VALID",
        "statusReason": "JobQueue Healthy",
        "priority": 1,
        "computeEnvironmentOrder": [],
        "serviceEnvironmentOrder": [{"order": 1, "serviceEnvironment": environment["serviceEnvironmentArn"]}],
        "jobQueueType": "SAGEMAKER_TRAINING",
        "tags": {},
        "jobStateTimeLimitActions": [
            {
                "reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
                "state": "RUNNABLE",
                "maxTimeSeconds": 86400,
                "action": "CANCEL",
            },
        ],
    }
    shares = []
    for name, (quota, strategy, borrow, in_share) in AWS_QUOTAS.items():
        sharing = {"strategy": strategy}
        if borrow is not None:
            sharing["borrowLimit"] = borrow
        shares.append(
            {
                "quotaShareName": name,
                "quotaShareArn": arn("quota-share", f"ml-training-queue/{name}"),
                "jobQueueArn": queue["jobQueueArn"],
                "capacityLimits": [{"maxCapacity": n, "capacityUnit": t} for t, n in quota.items()],
                "resourceSharingConfiguration": sharing,
                "preemptionConfiguration": {"inSharePreemption": in_share},
                "state": "ENABLED",
                "status": "VALID",
                "tags": {"cost-center": f"cc-{name}"},
            }
        )
    return [
        {"serviceEnvironments": [environment]},
        {"schedulingPolicies": [policy]},
        {"quotaShares": shares},
        {"jobQueues": [queue]},
    ]


def ms(t: float) -> int:
    """Seconds from START as AWS epoch milliseconds."""
    return int(round((START + t) * 1000))


def job_uuid(seed: str) -> str:
    digest = hashlib.sha256(seed.encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def aws_history(rng: np.random.Generator) -> tuple[list[dict], list[dict]]:
    """(describe-service-job records, the state-change events of the same jobs)."""
    jobs = workload(rng, AWS_TEAMS, 420, AWS_TYPES)
    updates = raised_priorities(rng, jobs, AWS_TEAMS, 30)
    final_priority = jobs["priority"].copy()
    for i, _, p in updates:
        final_priority[i] = p
    timeline = timelines(aws_policy(), jobs, AWS_TEAMS, AWS_TYPES, updates)
    export = EXPORT_AFTER
    records, events = [], []
    for i in range(len(jobs["submit"])):
        submit = float(jobs["submit"][i])
        if submit > export:
            continue
        team = AWS_TEAMS[jobs["team"][i]]["name"]
        kind = AWS_TYPES[jobs["type"][i]]
        count = int(jobs["count"][i])
        job_id = job_uuid(f"aws-{i}")
        name = f"{team}-{['pretrain', 'finetune', 'eval', 'sweep'][i % 4]}-{i:04d}"
        startup = rng.uniform(120, 420, size=16)  # instances provisioned before the script runs
        fails = rng.random() < 0.06
        attempts = []
        for k, (start, stop, how) in enumerate(timeline[i]["attempts"]):
            if start > export:
                break
            run_start = start + startup[k % 16]
            if stop is not None and stop <= export:
                reason = {
                    "cross_share": "Preempted: cross-share",
                    "in_share": "Preempted: in-share",
                    "finish": "Succeeded",
                    "fail": "Failed",
                }[how]
                attempts.append([run_start, stop + startup[k % 16], reason])
            else:
                attempts.append([run_start, None, None])
                break
        last = attempts[-1] if attempts else None
        if last is None or (last[2] or "").startswith("Preempted"):
            status = "RUNNABLE"  # never started, or preempted and queued again
        elif last[1] is None:
            status = "RUNNING"
        elif last[2] == "Succeeded" and fails:
            status = "FAILED"
            last[1] = last[0] + (last[1] - last[0]) * rng.uniform(0.05, 0.6)
            last[2] = "AlgorithmError: CUDA out of memory"
        else:
            status = "SUCCEEDED"
        preempted = [a for a in attempts if a[2] and a[2].startswith("Preempted")]
        payload = {
            "TrainingJobName": name,
            "AlgorithmSpecification": {
                "TrainingImage": f"{ACCOUNT}.dkr.ecr.{REGION}.amazonaws.com/{team}:latest",
                "TrainingInputMode": "File",
            },
            "RoleArn": f"arn:aws:iam::{ACCOUNT}:role/SageMakerTraining",
            "ResourceConfig": {"InstanceType": kind, "InstanceCount": count, "VolumeSizeInGB": 200},
            "StoppingCondition": {"MaxRuntimeInSeconds": 5 * 86400},
            "OutputDataConfig": {"S3OutputPath": f"s3://ml-artifacts-{ACCOUNT}/{team}/"},
        }
        record = {
            "jobArn": f"arn:aws:batch:{REGION}:{ACCOUNT}:service-job/{job_id}",
            "jobId": job_id,
            "jobName": name,
            "jobQueue": arn("job-queue", "ml-training-queue"),
            "serviceJobType": "SAGEMAKER_TRAINING",
            "quotaShareName": team,
            "schedulingPriority": int(final_priority[i]),
            "status": status,
            "statusReason": {
                "RUNNABLE": "Waiting for capacity",
                "RUNNING": "Training",
                "SUCCEEDED": "Training job completed",
                "FAILED": last[2] if last else "",
            }[status],
            "createdAt": ms(submit),
            "capacityUsage": [{"capacityUnit": kind, "quantity": count}],
            "serviceRequestPayload": json.dumps(payload, separators=(",", ":")),
            "preemptionConfiguration": {"preemptionRetriesBeforeTermination": 10},
            "retryStrategy": {"attempts": 1},
            "isTerminated": status in ("SUCCEEDED", "FAILED"),
            "tags": {"team": team, "user": f"{team}-user-{i % 5 + 1}"},
            "_submitted_priority": int(jobs["priority"][i]),
        }
        if attempts:
            record["scheduledAt"] = ms(attempts[0][0] - startup[0] + 1)
            record["startedAt"] = ms(attempts[-1][0])
            record["attempts"] = [
                {
                    "serviceResourceId": {
                        "name": "TrainingJobArn",
                        "value": f"arn:aws:sagemaker:{REGION}:{ACCOUNT}:training-job/{name}-{k}",
                    },
                    "startedAt": ms(a[0]),
                    **({"stoppedAt": ms(a[1]), "statusReason": a[2]} if a[1] is not None else {}),
                }
                for k, a in enumerate(attempts)
            ]
            record["latestAttempt"] = {"serviceResourceId": record["attempts"][-1]["serviceResourceId"]}
        if status in ("SUCCEEDED", "FAILED"):
            record["stoppedAt"] = ms(attempts[-1][1])
        if preempted:
            record["preemptionSummary"] = {
                "preemptedAttemptCount": len(preempted),
                "recentPreemptedAttempts": [
                    {
                        "serviceResourceId": record["attempts"][attempts.index(a)]["serviceResourceId"],
                        "startedAt": ms(a[0]),
                        "stoppedAt": ms(a[1]),
                        "statusReason": a[2],
                    }
                    for a in preempted[-RECENT_PREEMPTED_ATTEMPTS:]
                ],
            }
        records.append(record)
        events.extend(aws_events(record, i, submit, attempts, updates))
    events.sort(key=lambda e: (e["time"], e["id"]))
    return records, events


def aws_events(record: dict, i: int, submit: float, attempts: list, updates: list) -> list[dict]:
    """EventBridge events of one job: each status change, with the job as it was then."""
    raised = [t for j, t, _ in updates if j == i]
    changes: list[tuple[float, str]] = [(submit, "SUBMITTED"), (submit + 1, "RUNNABLE")]
    for attempt in attempts:
        changes.append((attempt[0] - 60, "STARTING"))
        changes.append((attempt[0], "RUNNING"))
        if attempt[1] is not None and attempt[2] and attempt[2].startswith("Preempted"):
            changes.append((attempt[1], "RUNNABLE"))
    if record["status"] in ("SUCCEEDED", "FAILED"):
        changes.append((attempts[-1][1], record["status"]))
    out = []
    for t, status in changes:
        # an event after the UpdateServiceJob call shows the new priority, one before it the old
        priority = record["_submitted_priority"] if raised and t < raised[0] else record["schedulingPriority"]
        detail = {
            k: v
            for k, v in record.items()
            if k
            not in (
                "attempts",
                "preemptionSummary",
                "stoppedAt",
                "startedAt",
                "latestAttempt",
                "isTerminated",
            )
        }
        detail["status"] = status
        detail["schedulingPriority"] = priority
        started = [a for a in attempts if a[0] <= t]
        if started and status != "STARTING":
            detail["startedAt"] = ms(started[-1][0])
            detail["attempts"] = list(record.get("attempts", [])[: len(started)])
        if status in ("SUCCEEDED", "FAILED"):
            detail["stoppedAt"] = record["stoppedAt"]
            detail["attempts"] = record["attempts"]
            if "preemptionSummary" in record:
                detail["preemptionSummary"] = record["preemptionSummary"]
        out.append(
            {
                "version": "0",
                "id": job_uuid(f"event-{i}-{t}-{status}"),
                "detail-type": "Batch Service Job State Change",
                "source": "aws.batch",
                "account": ACCOUNT,
                "time": datetime.fromtimestamp(START + t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "region": REGION,
                "resources": [record["jobArn"]],
                "detail": detail,
            }
        )
    return out


def list_pages(records: list[dict], page: int = 100) -> list[dict]:
    """list-service-jobs pages: summaries only (no priority, no attempts)."""
    keys = (
        "jobArn",
        "jobId",
        "jobName",
        "capacityUsage",
        "createdAt",
        "scheduledAt",
        "startedAt",
        "stoppedAt",
        "status",
        "statusReason",
        "quotaShareName",
        "serviceJobType",
        "latestAttempt",
    )
    pages = []
    for first in range(0, len(records), page):
        summaries = [{k: r[k] for k in keys if k in r} for r in records[first : first + page]]
        body: dict = {"jobSummaryList": summaries}
        if first + page < len(records):
            body["nextToken"] = job_uuid(f"token-{first}")
        pages.append(body)
    return pages


# ---------------------------------------------------------------------------------------------
# Kueue


KUEUE_TYPES = ["a100-80gb", "l4"]
KUEUE_TEAMS = [
    {
        "name": "team-nlp",
        "weight": 3,
        "types": ["a100-80gb"],
        "sizes": [1, 2, 4, 8, 8],
        "minutes": 360,
        "priorities": [100, 100, 500],
    },
    {
        "name": "team-vision",
        "weight": 3,
        "types": ["a100-80gb", "l4"],
        "sizes": [1, 2, 4],
        "minutes": 240,
        "priorities": [100, 500],
    },
    {
        "name": "team-research",
        "weight": 4,
        "types": ["l4"],
        "sizes": [1, 1, 2, 4],
        "minutes": 150,
        "priorities": [0, 100],
    },
    {
        "name": "team-prod",
        "weight": 1,
        "types": ["a100-80gb"],
        "sizes": [4, 8],
        "minutes": 200,
        "priorities": [1000],
    },
]
# nominalQuota (GPUs), borrowingLimit, lendingLimit, withinClusterQueue, reclaimWithinCohort, fair weight
KUEUE_QUOTAS = {
    "team-nlp": ({"a100-80gb": 24}, None, None, "LowerPriority", "Any", "2"),
    "team-vision": ({"a100-80gb": 8, "l4": 6}, {"a100-80gb": 0, "l4": 0}, None, "Never", "Any", None),
    "team-research": ({"l4": 10}, {"l4": 6}, {"l4": 4}, "LowerPriority", "LowerPriority", "1"),
    "team-prod": ({"a100-80gb": 8}, {"a100-80gb": 0}, {"a100-80gb": 0}, "Never", "Any", None),
}
KUEUE_POOL = {"a100-80gb": 48, "l4": 16}
KUEUE_PRIORITIES = {"research-low": 0, "standard": 100, "high": 500, "production": 1000}


def kueue_policy() -> dict:
    shares = []
    for name, (quota, borrowing, lending, within, reclaim, _) in KUEUE_QUOTAS.items():
        if borrowing is not None and all(v == 0 for v in borrowing.values()):
            strategy = "RESERVE" if lending is not None and all(v == 0 for v in lending.values()) else "LEND"
        else:
            strategy = "LEND_AND_BORROW"
        share = {
            "name": name,
            "capacity": quota,
            "strategy": strategy,
            "in_share_preemption": {"LowerPriority": "lower_priority", "Never": "never"}[within],
            "reclaim": {"Any": "any", "LowerPriority": "lower_priority"}[reclaim],
        }
        if strategy == "LEND_AND_BORROW" and borrowing:
            share["borrowing_limit"] = {t: borrowing.get(t, 0) for t in KUEUE_TYPES}
        if lending and strategy != "RESERVE":
            share["lending_limit"] = lending
        shares.append(share)
    return {
        "name": "ml-cohort",
        "instance_types": {t: {"gpus": 1, "hourly_price": 0} for t in KUEUE_TYPES},
        "capacity": KUEUE_POOL,
        "queueing": "best_effort_fifo",
        "startup_seconds": 0,
        "shares": shares,
    }


def k8s_time(t: float) -> str:
    return datetime.fromtimestamp(START + t, tz=UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def kueue_configuration() -> dict:
    """``kubectl get clusterqueues,cohorts,resourceflavors,workloadpriorityclasses -o yaml``."""
    created = k8s_time(-30 * 86400)

    def meta(name: str, uid: int) -> dict:
        return {
            "creationTimestamp": created,
            "generation": 1,
            "name": name,
            "resourceVersion": str(1000 + uid),
            "uid": job_uuid(f"k8s-{name}"),
        }

    items = []
    for k, (name, (quota, borrowing, lending, within, reclaim, weight)) in enumerate(KUEUE_QUOTAS.items()):
        flavors = []
        for flavor in KUEUE_TYPES:
            if flavor not in quota:
                continue
            resource = {"name": "nvidia.com/gpu", "nominalQuota": quota[flavor]}
            if borrowing is not None and flavor in borrowing:
                resource["borrowingLimit"] = borrowing[flavor]
            if lending is not None and flavor in lending:
                resource["lendingLimit"] = lending[flavor]
            cpu = {"name": "cpu", "nominalQuota": quota[flavor] * 12}
            flavors.append({"name": flavor, "resources": [cpu, resource]})
        spec = {
            "cohort": "ml-cohort",
            "namespaceSelector": {},
            "queueingStrategy": "BestEffortFIFO",
            "flavorFungibility": {"whenCanBorrow": "Borrow", "whenCanPreempt": "TryNextFlavor"},
            "preemption": {
                "borrowWithinCohort": {"policy": "Never"},
                "reclaimWithinCohort": reclaim,
                "withinClusterQueue": within,
            },
            "resourceGroups": [{"coveredResources": ["cpu", "nvidia.com/gpu"], "flavors": flavors}],
            "stopPolicy": "None",
        }
        if weight is not None:
            spec["fairSharing"] = {"weight": weight}
        items.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ClusterQueue",
                "metadata": meta(name, k),
                "spec": spec,
                "status": {
                    "admittedWorkloads": 0,
                    "pendingWorkloads": 0,
                    "reservingWorkloads": 0,
                    "conditions": [
                        {
                            "lastTransitionTime": created,
                            "message": "Can admit new workloads",
                            "observedGeneration": 1,
                            "reason": "Ready",
                            "status": "True",
                            "type": "Active",
                        }
                    ],
                },
            }
        )
    assigned = {f: sum(q[0].get(f, 0) for q in KUEUE_QUOTAS.values()) for f in KUEUE_TYPES}
    items.append(
        {
            "apiVersion": "kueue.x-k8s.io/v1beta1",
            "kind": "Cohort",
            "metadata": meta("ml-cohort", 10),
            "spec": {
                "resourceGroups": [
                    {
                        "coveredResources": ["nvidia.com/gpu"],
                        "flavors": [
                            {
                                "name": f,
                                "resources": [
                                    {"name": "nvidia.com/gpu", "nominalQuota": KUEUE_POOL[f] - assigned[f]}
                                ],
                            }
                            for f in KUEUE_TYPES
                        ],
                    }
                ]
            },
        }
    )
    labels = {"a100-80gb": "p4de.24xlarge", "l4": "g6.12xlarge"}
    for k, flavor in enumerate(KUEUE_TYPES):
        items.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "ResourceFlavor",
                "metadata": meta(flavor, 20 + k),
                "spec": {"nodeLabels": {"node.kubernetes.io/instance-type": labels[flavor]}},
            }
        )
    for k, (name, value) in enumerate(KUEUE_PRIORITIES.items()):
        items.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "WorkloadPriorityClass",
                "metadata": meta(name, 30 + k),
                "value": value,
                "description": f"{name} training jobs",
            }
        )
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


def kueue_kueue_configuration() -> dict:
    """The Kueue manager's Configuration (the controller's config map), with fair sharing on."""
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta1",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": ":8081"},
        "manageJobsWithoutQueueName": False,
        "fairSharing": {
            "enable": True,
            "preemptionStrategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
        },
        "integrations": {"frameworks": ["batch/job", "kubeflow.org/pytorchjob", "jobset.x-k8s.io/jobset"]},
    }


def kueue_history(rng: np.random.Generator) -> dict:
    """``kubectl get workloads,localqueues -A -o json``: every Workload, then the LocalQueues."""
    jobs = workload(rng, KUEUE_TEAMS, 400, KUEUE_TYPES)
    updates = raised_priorities(rng, jobs, KUEUE_TEAMS, 25)
    final_priority = jobs["priority"].copy()
    for i, _, p in updates:
        final_priority[i] = p
    timeline = timelines(kueue_policy(), jobs, KUEUE_TEAMS, KUEUE_TYPES, updates)
    classes = {v: k for k, v in KUEUE_PRIORITIES.items()}
    items = []
    for i in range(len(jobs["submit"])):
        submit = float(jobs["submit"][i])
        if submit > EXPORT_AFTER:
            continue
        team = KUEUE_TEAMS[jobs["team"][i]]["name"]
        namespace = team.removeprefix("team-")
        flavor = KUEUE_TYPES[jobs["type"][i]]
        gpus = int(jobs["count"][i])
        pods, per_pod = (gpus // 4, 4) if gpus >= 8 else (1, gpus)
        kind = ["pytorchjob", "job", "jobset"][i % 3]
        name = f"{kind}-{namespace}-train-{i:04d}-{job_uuid(f'kq-{i}')[:5]}"
        delay = rng.uniform(5, 40, size=16)  # admission to quota reservation, as the controller lags
        attempts = []
        for k, (start, stop, how) in enumerate(timeline[i]["attempts"]):
            if start > EXPORT_AFTER:
                break
            begin = start + delay[k % 16]
            if stop is not None and stop <= EXPORT_AFTER:
                attempts.append([begin, stop + delay[k % 16], how])
            else:
                attempts.append([begin, None, None])
                break
        fails = rng.random() < 0.05
        priority = int(final_priority[i])
        conditions = []
        status: dict = {}
        preempted = [a for a in attempts if a[2] in ("cross_share", "in_share")]
        last = attempts[-1] if attempts else None
        finished = last is not None and last[1] is not None and last[2] in ("finish", "fail")
        running = last is not None and last[1] is None
        if finished or running:
            status["admission"] = {
                "clusterQueue": team,
                "podSetAssignments": [
                    {
                        "name": "main",
                        "count": pods,
                        "flavors": {"cpu": flavor, "memory": flavor, "nvidia.com/gpu": flavor},
                        "resourceUsage": {
                            "cpu": str(pods * 8),
                            "memory": f"{pods * 64}Gi",
                            "nvidia.com/gpu": str(gpus),
                        },
                    }
                ],
            }
            conditions.append(
                {
                    "type": "QuotaReserved",
                    "status": "True",
                    "reason": "QuotaReserved",
                    "message": f"Quota reserved in ClusterQueue {team}",
                    "lastTransitionTime": k8s_time(last[0]),
                }
            )
            conditions.append(
                {
                    "type": "Admitted",
                    "status": "True",
                    "reason": "Admitted",
                    "message": "The workload is admitted",
                    "lastTransitionTime": k8s_time(last[0] + 1),
                }
            )
            conditions.append(
                {
                    "type": "PodsReady",
                    "status": "True",
                    "reason": "PodsReady",
                    "message": "All pods reached readiness",
                    "lastTransitionTime": k8s_time(last[0] + 45),
                }
            )
        else:
            conditions.append(
                {
                    "type": "QuotaReserved",
                    "status": "False",
                    "reason": "Pending",
                    "message": f"couldn't assign flavors to pod set main: insufficient unused quota for "
                    f"nvidia.com/gpu in flavor {flavor}, {gpus} more needed",
                    "lastTransitionTime": k8s_time(preempted[-1][1] if preempted else submit + 1),
                }
            )
        if finished:
            end = last[1]
            reason, message = "Succeeded", "Job finished successfully"
            if fails:
                end = last[0] + (last[1] - last[0]) * rng.uniform(0.05, 0.5)
                reason, message = "Failed", "Job has reached the specified backoff limit"
            conditions.append(
                {
                    "type": "Finished",
                    "status": "True",
                    "reason": reason,
                    "message": message,
                    "lastTransitionTime": k8s_time(end),
                }
            )
        if preempted:
            cause = preempted[-1][2]
            conditions.append(
                {
                    "type": "Evicted",
                    "status": "False" if (finished or running) else "True",
                    "reason": "Preempted",
                    "message": "Preempted to accommodate a workload",
                    "lastTransitionTime": k8s_time(preempted[-1][1]),
                }
            )
            conditions.append(
                {
                    "type": "Preempted",
                    "status": "False" if (finished or running) else "True",
                    "reason": "InCohortReclamation" if cause == "cross_share" else "InClusterQueue",
                    "message": "Preempted to accommodate a workload",
                    "lastTransitionTime": k8s_time(preempted[-1][1]),
                }
            )
            conditions.append(
                {
                    "type": "Requeued",
                    "status": "True",
                    "reason": "Preempted",
                    "message": "",
                    "lastTransitionTime": k8s_time(preempted[-1][1] + 1),
                }
            )
            status["accumulatedPastExecutionTimeSeconds"] = int(sum(a[1] - a[0] for a in preempted))
            by_cause: dict[str, int] = {}
            for a in preempted:
                key = "InCohortReclamation" if a[2] == "cross_share" else "InClusterQueue"
                by_cause[key] = by_cause.get(key, 0) + 1
            status["schedulingStats"] = {
                "evictions": [
                    {"reason": "Preempted", "underlyingCause": key, "count": n}
                    for key, n in sorted(by_cause.items())
                ]
            }
            status["requeueState"] = {"count": len(preempted)}
        status["conditions"] = conditions
        items.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "Workload",
                "metadata": {
                    "creationTimestamp": k8s_time(submit),
                    "generation": 1 + len(preempted),
                    "labels": {"kueue.x-k8s.io/job-uid": job_uuid(f"uid-{i}"), "team": namespace},
                    "name": name,
                    "namespace": namespace,
                    "ownerReferences": [
                        {
                            "apiVersion": "kubeflow.org/v1" if kind == "pytorchjob" else "batch/v1",
                            "kind": {"pytorchjob": "PyTorchJob", "job": "Job", "jobset": "JobSet"}[kind],
                            "name": name.rsplit("-", 1)[0],
                            "uid": job_uuid(f"owner-{i}"),
                            "blockOwnerDeletion": True,
                            "controller": True,
                        }
                    ],
                    "resourceVersion": str(50000 + i),
                    "uid": job_uuid(f"wl-{i}"),
                },
                "spec": {
                    "active": True,
                    "podSets": [
                        {
                            "name": "main",
                            "count": pods,
                            "template": {
                                "spec": {
                                    "containers": [
                                        {
                                            "name": "trainer",
                                            "image": f"registry.example.com/{namespace}/train:2026.09",
                                            "resources": {
                                                "requests": {
                                                    "cpu": "8",
                                                    "memory": "64Gi",
                                                    "nvidia.com/gpu": str(per_pod),
                                                },
                                                "limits": {"nvidia.com/gpu": str(per_pod)},
                                            },
                                        }
                                    ],
                                    "restartPolicy": "Never",
                                }
                            },
                        }
                    ],
                    "priority": priority,
                    "priorityClassName": classes.get(priority, "high"),
                    "priorityClassSource": "kueue.x-k8s.io/workloadpriorityclass",
                    "queueName": "training",
                },
                "status": status,
            }
        )
    for team in KUEUE_TEAMS:
        namespace = team["name"].removeprefix("team-")
        items.append(
            {
                "apiVersion": "kueue.x-k8s.io/v1beta1",
                "kind": "LocalQueue",
                "metadata": {
                    "creationTimestamp": k8s_time(-30 * 86400),
                    "name": "training",
                    "namespace": namespace,
                    "uid": job_uuid(f"lq-{namespace}"),
                    "resourceVersion": "900",
                },
                "spec": {"clusterQueue": team["name"], "stopPolicy": "None"},
            }
        )
    return {"apiVersion": "v1", "items": items, "kind": "List", "metadata": {"resourceVersion": ""}}


# ---------------------------------------------------------------------------------------------


def main() -> None:
    aws = ROOT / "aws-batch"
    kueue = ROOT / "kueue"
    aws.mkdir(exist_ok=True)
    kueue.mkdir(exist_ok=True)
    rng = np.random.default_rng(20260907)
    with open(aws / "configuration.json", "w") as f:
        for document in aws_configuration():
            f.write(json.dumps(document, indent=4) + "\n")
    records, events = aws_history(rng)
    with open(aws / "describe-service-jobs.json", "w") as f:
        for record in records:
            f.write(json.dumps({k: v for k, v in record.items() if not k.startswith("_")}, indent=4) + "\n")
    with open(aws / "list-service-jobs.json", "w") as f:
        for page in list_pages(records):
            f.write(json.dumps(page, indent=4) + "\n")
    lines = []
    for event in events:
        event["detail"] = {k: v for k, v in event["detail"].items() if not k.startswith("_")}
        lines.append(json.dumps(event, separators=(",", ":")) + "\n")
    # gzip without a time stamp in the header, so the file is the same on every run
    (aws / "service-job-events.jsonl.gz").write_bytes(gzip.compress("".join(lines).encode(), mtime=0))
    (kueue / "configuration.yaml").write_text(yaml.safe_dump(kueue_configuration(), sort_keys=False))
    (kueue / "kueue-manager-config.yaml").write_text(
        yaml.safe_dump(kueue_kueue_configuration(), sort_keys=False)
    )
    (kueue / "workloads.json").write_text(json.dumps(kueue_history(rng), indent=4) + "\n")


if __name__ == "__main__":
    main()
