"""AWS Batch export and import: the SEMANTICS.md section 4 example against checked-in CLI inputs, round trips
of policies that use only what AWS Batch has, notes for every knob it lacks, and imports that fail by name."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from aws_example import AWS_POLICY, P4, T

from scheduling.errors import InputError
from scheduling.export import from_aws_batch, to_aws_batch
from scheduling.model import Policy

GOLDEN = Path(__file__).parent / "data" / "export" / "aws-example"
# Two instance types, unassigned capacity, unlimited borrowing both ways of saying it, a start-up time.
TWO_TYPES = {
    "name": "research_pool",
    "instance_types": {T: {"gpus": 1, "hourly_price": 1.41}, P4: {"gpus": 8, "hourly_price": 37.69}},
    "capacity": {T: 10, P4: 4},
    "startup_seconds": 240,
    "shares": [
        {"name": "vision", "capacity": {T: 4, P4: 2}, "strategy": "LEND_AND_BORROW",
         "borrow_limit_percent": 50},
        {"name": "nlp", "capacity": {P4: 1}, "strategy": "LEND_AND_BORROW", "borrow_limit_percent": -1,
         "in_share_preemption": "lower_priority"},
        {"name": "infra", "capacity": {T: 3}, "strategy": "LEND_AND_BORROW"},
        {"name": "prod", "capacity": {T: 2, P4: 1}, "strategy": "RESERVE"},
    ],
}  # fmt: skip

# Share names AWS does not take come back through the planner:share tag.
RENAMED = {
    "name": "team pool #1",
    "capacity": {"gpu": 8},
    "shares": [
        {"name": "team a", "capacity": {"gpu": 5}, "strategy": "LEND"},
        {"name": "team/b", "capacity": {"gpu": 3}, "strategy": "LEND_AND_BORROW", "borrow_limit_percent": 0},
    ],
}


def test_aws_example_matches_the_checked_in_cli_inputs():
    bundle = to_aws_batch(AWS_POLICY)
    expected = {path.name: json.loads(path.read_text()) for path in sorted(GOLDEN.glob("*.json"))}
    assert bundle.documents == expected
    assert bundle.script == (GOLDEN / "create-quota-management.sh").read_text()


def test_aws_example_quota_shares_say_what_section_4_says():
    docs = to_aws_batch(AWS_POLICY).documents
    qs1, qs2, qs3 = (docs[f"create-quota-share-QS{i}.json"] for i in (1, 2, 3))
    assert docs["create-service-environment.json"]["capacityLimits"] == [
        {"maxCapacity": 3, "capacityUnit": T}
    ]
    # QS1: 1 instance, lends and borrows up to 200%, in-share preemption on.
    assert qs1["capacityLimits"] == [{"maxCapacity": 1, "capacityUnit": T}]
    assert qs1["resourceSharingConfiguration"] == {"strategy": "LEND_AND_BORROW", "borrowLimit": 200}
    assert qs1["preemptionConfiguration"] == {"inSharePreemption": "ENABLED"}
    # QS2 lends, QS3 reserves; neither preempts inside the share; no borrowLimit where AWS allows none.
    assert qs2["resourceSharingConfiguration"] == {"strategy": "LEND"}
    assert qs3["resourceSharingConfiguration"] == {"strategy": "RESERVE"}
    assert (
        qs2["preemptionConfiguration"] == qs3["preemptionConfiguration"] == {"inSharePreemption": "DISABLED"}
    )
    assert {doc["jobQueue"] for doc in (qs1, qs2, qs3)} == {"seed-demo"}


def test_the_script_creates_everything_in_order_and_passes_the_policy_arn():
    script = to_aws_batch(AWS_POLICY).script.splitlines()
    calls = [line.split()[2] for line in script if line.startswith(("aws batch", "POLICY_ARN=$(aws batch"))]
    calls = [
        call if not call.startswith("create-scheduling") else "create-scheduling-policy" for call in calls
    ]
    assert (
        calls
        == ["create-service-environment", "create-scheduling-policy", "create-job-queue"]
        + ["create-quota-share"] * 3
    )
    assert any('--scheduling-policy-arn "$POLICY_ARN"' in line for line in script)
    assert script[0] == "#!/bin/sh" and "set -eu" in script


def test_the_only_note_of_the_aws_example_is_the_price_it_keeps_as_a_tag():
    notes = to_aws_batch(AWS_POLICY).notes
    assert len(notes) == 1 and "hourly_price of ml.g5.xlarge" in notes[0] and "tag" in notes[0]


@pytest.mark.parametrize(
    "policy", [AWS_POLICY, TWO_TYPES, RENAMED], ids=["aws-example", "two-types", "renamed"]
)
def test_round_trip_gives_the_same_policy(policy):
    bundle = to_aws_batch(policy)
    back = from_aws_batch(json.loads(json.dumps(bundle.to_dict())))  # as the API would send it
    assert Policy.from_dict(back) == Policy.from_dict(policy)


def test_round_trip_reads_a_list_of_documents_too():
    documents = list(to_aws_batch(TWO_TYPES).documents.values())
    assert Policy.from_dict(from_aws_batch(documents)) == Policy.from_dict(TWO_TYPES)


def test_two_types_documents_count_instances_per_type():
    docs = to_aws_batch(TWO_TYPES).documents
    assert docs["create-service-environment.json"]["capacityLimits"] == [
        {"maxCapacity": 10, "capacityUnit": T},
        {"maxCapacity": 4, "capacityUnit": P4},
    ]
    vision = docs["create-quota-share-vision.json"]
    assert vision["capacityLimits"] == [
        {"maxCapacity": 4, "capacityUnit": T},
        {"maxCapacity": 2, "capacityUnit": P4},
    ]
    assert vision["resourceSharingConfiguration"]["borrowLimit"] == 50
    # -1 written when the policy says -1; left to AWS's default (-1) when the policy says nothing.
    assert docs["create-quota-share-nlp.json"]["resourceSharingConfiguration"]["borrowLimit"] == -1
    assert "borrowLimit" not in docs["create-quota-share-infra.json"]["resourceSharingConfiguration"]
    assert docs["create-service-environment.json"]["tags"]["planner:gpus:ml.p4d.24xlarge"] == "8"


def test_renamed_names_are_said_and_tagged():
    bundle = to_aws_batch(RENAMED)
    assert "create-quota-share-team-a.json" in bundle.documents
    assert bundle.documents["create-quota-share-team-b.json"]["tags"] == {"planner:share": "team/b"}
    assert bundle.documents["create-scheduling-policy.json"]["name"] == "team-pool-1"
    assert any("'team a' is written 'team-a'" in note for note in bundle.notes)
    assert any("instance type 'gpu' is not a SageMaker instance type" in note for note in bundle.notes)


LOSSY = {
    "name": "kueue-style",
    "instance_types": {T: {"gpus": 1}},
    "capacity": {T: 8},
    "queueing": "strict_fifo",
    "shares": [
        {"name": "a", "capacity": {T: 4}, "strategy": "LEND_AND_BORROW", "borrowing_limit": {T: 2},
         "lending_limit": {T: 1}, "in_share_preemption": "lower_or_newer_equal_priority", "reclaim": "never"},
        {"name": "b", "capacity": {T: 4}, "strategy": "LEND", "reclaim": "lower_priority"},
    ],
}  # fmt: skip


def test_knobs_aws_lacks_are_named_in_the_notes():
    notes = "\n".join(to_aws_batch(LOSSY).notes)
    assert "queueing strict_fifo has no AWS Batch setting" in notes
    assert "lending_limit of share a has no AWS Batch equivalent: AWS lends all idle quota" in notes
    assert "reclaim never of share a has no AWS Batch equivalent" in notes
    assert "reclaim lower_priority of share b has no AWS Batch equivalent" in notes
    assert "in_share_preemption lower_or_newer_equal_priority of share a has no AWS Batch equivalent" in notes
    # 2 of a quota of 4 is exactly 50%.
    assert "borrowing_limit of share a (2 x ml.g5.xlarge) has no AWS Batch equivalent: written as " in notes
    assert "borrowLimit 50% of its quota, which allows the same" in notes


def test_the_import_of_a_lossy_export_is_what_aws_would_do():
    back = Policy.from_dict(from_aws_batch(to_aws_batch(LOSSY).documents))
    expected = copy.deepcopy(LOSSY)
    expected["queueing"] = "best_effort_fifo"
    a, b = expected["shares"]
    del a["borrowing_limit"], a["lending_limit"]
    a.update(borrow_limit_percent=50, in_share_preemption="lower_priority", reclaim="any")
    b["reclaim"] = "any"
    assert back == Policy.from_dict(expected)


def test_a_borrowing_limit_no_percent_gives_is_written_as_the_largest_percent_within_it():
    policy = {
        "name": "p",
        "capacity": {"gpu": 4},
        "shares": [
            {"name": "a", "capacity": {"gpu": 3}, "strategy": "LEND_AND_BORROW", "borrowing_limit": 1}
        ],
    }
    bundle = to_aws_batch(policy)
    # floor(3 x p / 100) = 1 for p from 34 to 66: the smallest of them is exact.
    sharing = bundle.documents["create-quota-share-a.json"]["resourceSharingConfiguration"]
    assert sharing == {"strategy": "LEND_AND_BORROW", "borrowLimit": 34}
    two_types = {
        "name": "p",
        "instance_types": {"x": {}, "y": {}},
        "capacity": {"x": 1, "y": 3},
        "shares": [{"name": "a", "capacity": {"x": 1, "y": 3}, "strategy": "LEND_AND_BORROW",
                    "borrowing_limit": {"x": 1, "y": 1}}],
    }  # fmt: skip
    bundle = to_aws_batch(two_types)
    # x needs p >= 100 to allow 1, y allows 1 only up to p = 66: no exact percent; 66 keeps both within.
    sharing = bundle.documents["create-quota-share-a.json"]["resourceSharingConfiguration"]
    assert sharing["borrowLimit"] == 66
    assert any("no percent gives it exactly: written as borrowLimit 66%, which allows 0 x x, 1 x y" in n
               for n in bundle.notes)  # fmt: skip


def test_a_share_without_quota_is_flagged():
    policy = {
        "name": "p",
        "capacity": {T: 2},
        "instance_types": {T: {}},
        "shares": [
            {"name": "owner", "capacity": {T: 2}, "strategy": "LEND"},
            {"name": "borrower", "capacity": {}, "strategy": "LEND_AND_BORROW"},
        ],
    }
    notes = to_aws_batch(policy).notes
    assert any("share borrower has no quota" in note for note in notes)


# ---------------------------------------------------------------------------------------
# Imports that fail, naming the document and the field.


def documents() -> dict:
    return copy.deepcopy(to_aws_batch(AWS_POLICY).documents)


def failing(docs) -> InputError:
    with pytest.raises(InputError) as error:
        from_aws_batch(docs)
    return error.value


def test_import_needs_one_service_environment():
    docs = documents()
    del docs["create-service-environment.json"]
    assert failing(docs).field == "create-service-environment.json"


def test_import_refuses_num_instances():
    docs = documents()
    docs["create-service-environment.json"]["capacityLimits"][0]["capacityUnit"] = "NUM_INSTANCES"
    error = failing(docs)
    assert error.field == "create-service-environment.json.capacityLimits[0].capacityUnit"
    assert "one capacity limit per instance type" in error.reason


def test_import_refuses_an_unknown_strategy():
    docs = documents()
    docs["create-quota-share-QS2.json"]["resourceSharingConfiguration"]["strategy"] = "SHARE"
    error = failing(docs)
    assert error.field == "create-quota-share-QS2.json.resourceSharingConfiguration.strategy"
    assert error.describe().startswith(
        "create-quota-share-QS2.json.resourceSharingConfiguration.strategy: 'SHARE'"
    )


def test_import_refuses_a_borrow_limit_on_a_lender():
    docs = documents()
    docs["create-quota-share-QS2.json"]["resourceSharingConfiguration"]["borrowLimit"] = 100
    assert failing(docs).field == "create-quota-share-QS2.json.resourceSharingConfiguration.borrowLimit"


def test_import_refuses_a_quota_of_a_type_the_pool_lacks():
    docs = documents()
    docs["create-quota-share-QS3.json"]["capacityLimits"][0]["capacityUnit"] = P4
    assert failing(docs).field == "create-quota-share-QS3.json.capacityLimits[0].capacityUnit"


def test_import_refuses_quotas_above_the_pool():
    docs = documents()
    docs["create-quota-share-QS3.json"]["capacityLimits"][0]["maxCapacity"] = 2
    error = failing(docs)
    assert "add up to 4, more than the pool's 3" in error.reason


def test_import_refuses_bad_in_share_preemption_and_fair_share_policies():
    docs = documents()
    docs["create-quota-share-QS1.json"]["preemptionConfiguration"] = {"inSharePreemption": "YES"}
    assert failing(docs).field == "create-quota-share-QS1.json.preemptionConfiguration.inSharePreemption"
    docs = documents()
    docs["create-scheduling-policy.json"] = {"name": "fs", "fairsharePolicy": {"shareDecaySeconds": 60}}
    assert failing(docs).field == "create-scheduling-policy.json.fairsharePolicy"


def test_import_refuses_documents_it_does_not_know():
    docs = documents()
    docs["notes.json"] = {"hello": "world"}
    assert failing(docs).field == "notes.json"
    assert failing([{"serviceEnvironmentName": "x", "capacityLimits": []}, 3]).field == "document 2"


def test_import_refuses_a_share_of_another_job_queue():
    docs = documents()
    docs["create-quota-share-QS1.json"]["jobQueue"] = "elsewhere"
    assert failing(docs).field == "create-quota-share-QS1.json.jobQueue"


def test_an_import_without_planner_tags_says_which_gpu_counts_it_assumed():
    docs = documents()
    del docs["create-service-environment.json"]["tags"]
    data = from_aws_batch(docs)
    assert data["instance_types"] == {T: {"gpus": 1, "hourly_price": 0}}
    assert "no planner:gpus:ml.g5.xlarge tag, taken as 1 GPU per instance" in data["description"]
