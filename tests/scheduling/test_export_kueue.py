"""Kueue export and import: the SEMANTICS.md section 4 example against a checked-in YAML, how instances,
strategies and limits map onto ClusterQueues, round trips, a hand-written Kueue config, and bad input."""

from __future__ import annotations

import copy
from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from aws_example import AWS_JOBS, AWS_POLICY, AWS_UPDATES, P4, T

from scheduling.errors import InputError
from scheduling.export import from_kueue_yaml, to_kueue_yaml
from scheduling.export.kueue import parse_quantity
from scheduling.model import Policy

GOLDEN = Path(__file__).parent / "data" / "export" / "aws-example.kueue.yaml"
# Every knob Kueue has: absolute limits both ways, all preemption settings, strict FIFO, 8-GPU instances,
# unassigned capacity (1 x T, 1 x P4) and a start-up time.
KUEUE_STYLE = {
    "name": "kueue-style",
    "instance_types": {T: {"gpus": 1, "hourly_price": 1.41}, P4: {"gpus": 8, "hourly_price": 37.69}},
    "capacity": {T: 10, P4: 4},
    "queueing": "strict_fifo",
    "startup_seconds": 300,
    "shares": [
        {"name": "team-a", "capacity": {T: 4, P4: 2}, "strategy": "LEND_AND_BORROW",
         "borrowing_limit": {T: 2, P4: 1}, "lending_limit": {T: 1},
         "in_share_preemption": "lower_or_newer_equal_priority", "reclaim": "lower_priority"},
        {"name": "team-b", "capacity": {T: 4}, "strategy": "LEND_AND_BORROW", "reclaim": "never"},
        {"name": "Prod Serving", "capacity": {P4: 1}, "strategy": "RESERVE",
         "in_share_preemption": "lower_priority"},
        {"name": "lender", "capacity": {T: 1}, "strategy": "LEND", "lending_limit": {T: 0}},
    ],
}  # fmt: skip


def objects(text: str) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(text)}


def gpu_quota(cluster_queue: dict, flavor: str) -> dict:
    for group in cluster_queue["spec"]["resourceGroups"]:
        for entry in group["flavors"]:
            if entry["name"] == flavor:
                (resource,) = entry["resources"]
                assert resource["name"] == "nvidia.com/gpu"
                return {k: v for k, v in resource.items() if k != "name"}
    raise AssertionError(f"no flavor {flavor}")


def test_aws_example_matches_the_checked_in_yaml():
    assert to_kueue_yaml(AWS_POLICY, priorities=[0, 1, 2, 3, 4]) == GOLDEN.read_text()


def test_aws_example_as_cluster_queues():
    docs = objects(to_kueue_yaml(AWS_POLICY))
    qs1, qs2, qs3 = (docs[("ClusterQueue", f"qs{i}")] for i in (1, 2, 3))
    # QS1 borrows up to 200% of 1 instance = 2 GPUs; QS2 lends but never borrows; QS3 neither.
    assert gpu_quota(qs1, T) == {"nominalQuota": 1, "borrowingLimit": 2}
    assert gpu_quota(qs2, T) == {"nominalQuota": 1, "borrowingLimit": 0}
    assert gpu_quota(qs3, T) == {"nominalQuota": 1, "borrowingLimit": 0, "lendingLimit": 0}
    assert qs1["spec"]["preemption"] == {
        "reclaimWithinCohort": "Any",  # AWS reclaims lent quota
        "withinClusterQueue": "LowerPriority",  # inSharePreemption ENABLED
        "borrowWithinCohort": {"policy": "Never"},
    }
    assert {q["spec"]["cohort"] for q in (qs1, qs2, qs3)} == {"seed-demo"}
    assert qs1["metadata"]["annotations"]["planner/share-name"] == "QS1"
    assert docs[("ResourceFlavor", T)]["spec"] == {"nodeLabels": {"node.kubernetes.io/instance-type": T}}
    assert docs[("Cohort", "seed-demo")]["spec"] == {}  # no unassigned capacity
    assert docs[("WorkloadPriorityClass", "priority-0")]["value"] == 0


def test_aws_example_comes_back_with_its_percent_as_an_absolute_limit():
    text = to_kueue_yaml(AWS_POLICY)
    assert "borrow_limit_percent 200 of share QS1 becomes an absolute borrowingLimit" in " ".join(
        line.lstrip("# ") for line in text.splitlines() if line.startswith("#")
    )
    expected = copy.deepcopy(AWS_POLICY)
    del expected["shares"][0]["borrow_limit_percent"]
    expected["shares"][0]["borrowing_limit"] = {T: 2}
    assert Policy.from_dict(from_kueue_yaml(text)) == Policy.from_dict(expected)


def test_aws_example_replays_the_same_after_the_kueue_round_trip(run):
    back = from_kueue_yaml(to_kueue_yaml(AWS_POLICY))
    assert run(back, AWS_JOBS, AWS_UPDATES).events == run(AWS_POLICY, AWS_JOBS, AWS_UPDATES).events


def test_kueue_style_round_trip_gives_the_same_policy():
    text = to_kueue_yaml(KUEUE_STYLE)
    assert Policy.from_dict(from_kueue_yaml(text)) == Policy.from_dict(KUEUE_STYLE)


def test_instances_become_gpus_and_unassigned_capacity_is_the_cohorts_quota():
    docs = objects(to_kueue_yaml(KUEUE_STYLE))
    team_a = docs[("ClusterQueue", "team-a")]
    # 2 x p4d of 8 GPUs = 16 GPUs of quota; 1 instance of borrowing = 8 GPUs.
    assert gpu_quota(team_a, P4) == {"nominalQuota": 16, "borrowingLimit": 8}
    assert gpu_quota(team_a, T) == {"nominalQuota": 4, "borrowingLimit": 2, "lendingLimit": 1}
    assert team_a["spec"]["queueingStrategy"] == "StrictFIFO"
    assert team_a["spec"]["preemption"]["withinClusterQueue"] == "LowerOrNewerEqualPriority"
    assert team_a["spec"]["preemption"]["reclaimWithinCohort"] == "LowerPriority"
    assert docs[("ClusterQueue", "team-b")]["spec"]["preemption"]["reclaimWithinCohort"] == "Never"
    assert gpu_quota(docs[("ClusterQueue", "team-b")], P4) == {"nominalQuota": 0}  # listed so it can borrow
    prod = docs[("ClusterQueue", "prod-serving")]
    assert gpu_quota(prod, P4) == {"nominalQuota": 8, "borrowingLimit": 0, "lendingLimit": 0}
    # Pool 10 x T and 4 x p4d; shares hold 9 x T and 3 x p4d.
    (group,) = docs[("Cohort", "kueue-style")]["spec"]["resourceGroups"]
    assert group["flavors"] == [
        {"name": T, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 1}]},
        {"name": P4, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]},
    ]
    assert docs[("ResourceFlavor", P4)]["metadata"]["annotations"]["planner/gpus-per-instance"] == "8"


def test_notes_say_what_kueue_lacks():
    text = to_kueue_yaml(KUEUE_STYLE)
    comments = " ".join(line[1:].strip(" -") for line in text.splitlines() if line.startswith("#"))
    assert (
        "Unassigned capacity (1 x ml.g5.xlarge, 1 x ml.p4d.24xlarge) is the root Cohort's own nominalQuota"
        in comments
    )
    assert "startup_seconds 300 has no Kueue setting" in comments
    assert "Share names Prod Serving are not Kubernetes names" in comments


def test_a_lending_limit_above_the_quota_is_capped_and_said():
    policy = {
        "name": "p",
        "capacity": {"gpu": 4},
        "shares": [{"name": "a", "capacity": {"gpu": 2}, "strategy": "LEND", "lending_limit": 3}],
    }
    text = to_kueue_yaml(policy)
    assert gpu_quota(objects(text)[("ClusterQueue", "a")], "gpu") == {
        "nominalQuota": 2,
        "borrowingLimit": 0,
        "lendingLimit": 2,
    }
    assert "lending_limit 3 of share a for gpu is above its quota 2" in text.replace("\n#  ", "")


def test_priority_classes_are_the_priorities_asked_for():
    docs = objects(to_kueue_yaml(AWS_POLICY, priorities=[5, 0, 5, 9999]))
    classes = sorted(d["value"] for (kind, _), d in docs.items() if kind == "WorkloadPriorityClass")
    assert classes == [0, 5, 9999]
    with pytest.raises(InputError) as error:
        to_kueue_yaml(AWS_POLICY, priorities=[10000])
    assert error.value.field == "priorities"


HAND_WRITTEN = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {cloud.example.com/gpu: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec:
  cohort: lab
  namespaceSelector: {}
  preemption: {reclaimWithinCohort: Any, withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
    - name: a100
      resources:
      - {name: cpu, nominalQuota: 96}
      - {name: memory, nominalQuota: 768Gi}
      - {name: nvidia.com/gpu, nominalQuota: "16", borrowingLimit: "8"}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: prod}
spec:
  cohort: lab
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - name: a100
      resources: [{name: nvidia.com/gpu, nominalQuota: 8, lendingLimit: 4, borrowingLimit: 0}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: research, namespace: team-research}
spec: {clusterQueue: research}
"""


def test_a_hand_written_config_is_counted_in_gpus_with_kueues_defaults():
    data = from_kueue_yaml(HAND_WRITTEN)
    policy = Policy.from_dict(data)
    assert policy.name == "lab"
    assert dict(policy.capacity) == {"a100": 24}
    assert policy.instance_types["a100"].gpus == 1  # no planner/gpus-per-instance: counted in GPUs
    research, prod = policy.shares
    assert (research.strategy.value, dict(research.borrowing_limit)) == ("LEND_AND_BORROW", {"a100": 8})
    assert (research.reclaim.value, research.in_share_preemption.value) == ("any", "lower_priority")
    assert (prod.strategy.value, dict(prod.lending_limit)) == ("LEND", {"a100": 4})
    assert (prod.reclaim.value, prod.in_share_preemption.value) == ("never", "never")  # Kueue's defaults
    assert "ClusterQueue/research: quotas of cpu, memory are not used" in data["description"]
    assert "not used: LocalQueue/research" in data["description"]
    assert "ResourceFlavor/a100 has no planner/gpus-per-instance: counted in GPUs" in data["description"]


def test_a_kubectl_list_and_a_queue_without_cohort():
    text = """
apiVersion: v1
kind: List
items:
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: ResourceFlavor
  metadata: {name: h100, annotations: {planner/gpus-per-instance: "8"}}
- apiVersion: kueue.x-k8s.io/v1beta1
  kind: ClusterQueue
  metadata: {name: solo}
  spec:
    resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 32}]}]
"""
    data = from_kueue_yaml(text)
    assert data["capacity"] == {"h100": 4}
    assert data["shares"][0]["strategy"] == "RESERVE"
    assert "ClusterQueue/solo is in no cohort: imported as RESERVE" in data["description"]


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (8, 8),
        ("16", 16),
        ("500m", Fraction(1, 2)),
        ("1k", 1000),
        ("2Ki", 2048),
        ("1e2", 100),
        (2.5, Fraction(5, 2)),
    ],
)
def test_quantities(value, expected):
    assert parse_quantity(value, "x") == expected


# ---------------------------------------------------------------------------------------
# Imports that fail, naming the object and the field.


def failing(text: str) -> InputError:
    with pytest.raises(InputError) as error:
        from_kueue_yaml(text)
    return error.value


def edited(edit) -> str:
    docs = list(yaml.safe_load_all(to_kueue_yaml(KUEUE_STYLE)))
    edit({(d["kind"], d["metadata"]["name"]): d for d in docs})
    return yaml.safe_dump_all(docs)


def test_import_refuses_another_api_version():
    error = failing(
        edited(lambda d: d[("ClusterQueue", "team-b")].update(apiVersion="kueue.x-k8s.io/v1beta2"))
    )
    assert error.field == "ClusterQueue/team-b.apiVersion"


def test_import_refuses_a_quota_that_is_not_whole_instances():
    def edit(docs):
        docs[("ClusterQueue", "team-a")]["spec"]["resourceGroups"][0]["flavors"][1]["resources"][0][
            "nominalQuota"
        ] = 12

    error = failing(edited(edit))
    assert error.field == "ClusterQueue/team-a.spec.resourceGroups[0].flavors[1].resources[0].nominalQuota"
    assert "12 GPUs is not a whole number of instances of 8 GPUs" in error.reason


def test_import_refuses_a_flavor_without_its_resource_flavor():
    def edit(docs):
        docs[("ClusterQueue", "team-b")]["spec"]["resourceGroups"][0]["flavors"][0]["name"] = "missing"

    assert failing(edited(edit)).field == "ClusterQueue/team-b.spec.resourceGroups[0].flavors[0].name"


def test_import_refuses_mixed_queueing():
    mixed = edited(lambda d: d[("ClusterQueue", "team-b")]["spec"].update(queueingStrategy="BestEffortFIFO"))
    assert "mix StrictFIFO and BestEffortFIFO" in failing(mixed).reason


def test_queues_in_several_cohorts_become_trees_kept_apart():
    split = from_kueue_yaml(edited(lambda d: d[("ClusterQueue", "team-b")]["spec"].update(cohort="other")))
    assert "Imported from 2 Kueue cohort trees (kueue-style, other)" in split["description"]
    policy = Policy.from_dict(split)
    fence = {T: 0, P4: 0}
    cohorts = [(c.name, dict(c.capacity), dict(c.borrowing_limit), dict(c.lending_limit))
               for c in policy.cohorts]  # fmt: skip
    assert cohorts == [("kueue-style", {T: 1, P4: 1}, fence, fence), ("other", {}, fence, fence)]
    # The planner's settings stay with the root the export wrote.
    assert (policy.name, policy.startup_seconds) == ("kueue-style", 300)
    assert {s.name: s.cohort for s in policy.shares} == {
        "team-a": "kueue-style", "team-b": "other", "Prod Serving": "kueue-style", "lender": "kueue-style"
    }  # fmt: skip


def test_import_refuses_unknown_preemption_and_quantities():
    bad = edited(
        lambda d: d[("ClusterQueue", "lender")]["spec"]["preemption"].update(reclaimWithinCohort="Some")
    )
    assert failing(bad).field == "ClusterQueue/lender.spec.preemption.reclaimWithinCohort"

    def edit(docs):
        docs[("Cohort", "kueue-style")]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0][
            "nominalQuota"
        ] = "2x"

    error = failing(edited(edit))
    assert error.field == "Cohort/kueue-style.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"


def test_import_refuses_bad_yaml_and_objects_without_names():
    assert "not valid YAML" in failing("kind: [unclosed").reason
    assert failing("apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {}\n").field == (
        "document 1 (ClusterQueue).metadata.name"
    )
    assert "no ClusterQueue" in failing("apiVersion: v1\nkind: Namespace\nmetadata: {name: x}\n").reason


def test_import_refuses_negative_limits():
    def edit(docs):
        docs[("ClusterQueue", "lender")]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0].update(
            lendingLimit=-1
        )

    error = failing(edited(edit))
    assert error.field == "ClusterQueue/lender.spec.resourceGroups[0].flavors[0].resources[0].lendingLimit"
    assert "negative" in error.reason
