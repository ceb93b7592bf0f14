"""Fair sharing, the calendar and the RUNNABLE limit (SEMANTICS.md sections 8-10) in the AWS Batch and
Kueue exports and imports: written where the target has a setting, said in the notes where it has
none, and read back."""

from __future__ import annotations

import pytest
import yaml
from aws_example import PLANNED, T

from scheduling.errors import InputError
from scheduling.export import from_aws_batch, from_kueue_yaml, to_aws_batch, to_kueue_yaml
from scheduling.export.aws_batch import JOB_QUEUE
from scheduling.model import Policy


def documents_of(text: str) -> dict[str, dict]:
    return {f"{d['kind']}/{d['metadata']['name']}": d for d in yaml.safe_load_all(text)}


def test_kueue_writes_weights_and_says_the_configuration_must_enable_fair_sharing():
    text = to_kueue_yaml(PLANNED)
    docs = documents_of(text)
    assert docs["ClusterQueue/qs1"]["spec"]["fairSharing"] == {"weight": 2}
    assert docs["ClusterQueue/qs2"]["spec"]["fairSharing"] == {"weight": 0.5}
    assert docs["ClusterQueue/qs3"]["spec"]["fairSharing"] == {"weight": 1}  # on: every queue says it
    header = " ".join(line.lstrip("# ") for line in text.splitlines() if line.startswith("#"))
    assert "fairSharing: {enable: true, preemptionStrategies: [LessThanInitialShare]}" in header
    assert "Kueue has no dated capacity or quotas: the calendar's 4 changes" in header
    assert "runnable_timeout_seconds 7200" in header


def test_kueue_round_trip_keeps_sections_8_to_10():
    # the Cohort's planner annotations bring back what Kueue's objects cannot hold (the borrow
    # limit is absolute, as Kueue has it: a percent would come back absolute)
    shares = [dict(share) for share in PLANNED["shares"]]
    del shares[0]["borrow_limit_percent"]
    shares[0]["borrowing_limit"] = {T: 2}
    policy = {**PLANNED, "shares": shares}
    assert Policy.from_dict(from_kueue_yaml(to_kueue_yaml(policy))) == Policy.from_dict(policy)


KUEUE_BY_HAND = """
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: gpu}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohort: lab
  fairSharing: {weight: "1500m"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b}
spec:
  cohort: lab
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: gpu, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
"""
CONFIGURATION = """
---
apiVersion: config.kueue.x-k8s.io/v1beta1
kind: Configuration
metadata: {name: kueue-config}
fairSharing:
  enable: true
  preemptionStrategies: [LessThanOrEqualToFinalShare]
"""


def test_a_kueue_configuration_turns_fair_sharing_on_with_its_strategies():
    data = from_kueue_yaml(KUEUE_BY_HAND + CONFIGURATION)
    policy = Policy.from_dict(data)
    assert [s.value for s in policy.fair_sharing.preemption_strategies] == ["LessThanOrEqualToFinalShare"]
    assert [s.fair_weight for s in policy.shares] == [1.5, 1]  # 1500m is 1.5


def test_weights_without_a_configuration_leave_fair_sharing_off_and_say_so():
    data = from_kueue_yaml(KUEUE_BY_HAND)
    assert Policy.from_dict(data).fair_sharing is None
    assert "no Configuration enabling fairSharing was given: fair sharing is off" in data["description"]


def test_a_configuration_with_a_list_kueue_refuses_is_named():
    bad = CONFIGURATION.replace(
        "[LessThanOrEqualToFinalShare]", "[LessThanInitialShare, LessThanOrEqualToFinalShare]"
    )
    with pytest.raises(InputError) as caught:
        from_kueue_yaml(KUEUE_BY_HAND + bad)
    assert caught.value.field == "fair_sharing.preemption_strategies"


def test_aws_writes_the_runnable_limit_on_the_job_queue_and_says_what_it_lacks():
    bundle = to_aws_batch(PLANNED)
    actions = bundle.documents[JOB_QUEUE]["jobStateTimeLimitActions"]
    # one action per RUNNABLE reason AWS can act on: the planner's limit holds whatever the reason
    assert [a["reason"] for a in actions] == [
        "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY",
        "MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE",
        "MISCONFIGURATION:QUOTA_MANAGEMENT_LIMIT_EXCEEDED",
    ]
    assert {(a["state"], a["action"], a["maxTimeSeconds"]) for a in actions} == {
        ("RUNNABLE", "TERMINATE", 7200)
    }
    notes = " ".join(bundle.notes)
    assert "AWS Batch quota management has no fair sharing between quota shares" in notes
    assert "fair_weight of shares (QS1 2, QS2 0.5)" in notes
    assert "AWS Batch has no dated capacity or quotas: the calendar's 4 changes are not exported" in notes
    assert "at 100 s quota share QS1: 3 x ml.g5.xlarge" in notes


def test_aws_import_reads_the_runnable_limit_back():
    data = from_aws_batch(to_aws_batch(PLANNED).documents)
    assert data["runnable_timeout_seconds"] == 7200


def test_aws_import_of_one_limit_for_one_reason_reads_it_for_every_job_and_says_so():
    documents = to_aws_batch({**PLANNED, "runnable_timeout_seconds": None}).documents
    documents[JOB_QUEUE]["jobStateTimeLimitActions"] = [
        {"reason": "CAPACITY:INSUFFICIENT_INSTANCE_CAPACITY", "state": "RUNNABLE", "maxTimeSeconds": 3600,
         "action": "CANCEL"}
    ]  # fmt: skip
    data = from_aws_batch(documents)
    assert data["runnable_timeout_seconds"] == 3600
    assert "the queue had none for MISCONFIGURATION:SERVICE_ENVIRONMENT_MAX_RESOURCE" in data["description"]


def test_aws_import_of_a_limit_on_another_state_is_named():
    documents = to_aws_batch(PLANNED).documents
    documents[JOB_QUEUE]["jobStateTimeLimitActions"][1]["state"] = "STARTING"
    with pytest.raises(InputError) as caught:
        from_aws_batch(documents)
    assert caught.value.field == f"{JOB_QUEUE}.jobStateTimeLimitActions[1].state"
