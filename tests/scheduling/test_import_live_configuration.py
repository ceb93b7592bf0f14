"""Live scheduler configurations into a policy: AWS Batch describe outputs and Kueue objects as kubectl
prints them (v1beta1 and v1beta2, with a Kueue Configuration), on the committed samples and on small
hand-written objects; refusals name the document and the field; what the replay does not model yet
(jobStateTimeLimitActions, fairSharing) is reported, never dropped."""

import json
from pathlib import Path

import pytest
import yaml

from scheduling.cli import main
from scheduling.errors import InputError
from scheduling.export.configuration import read_configuration_files
from scheduling.model import Policy

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
AWS = SAMPLES / "aws-batch" / "configuration.json"
KUEUE = SAMPLES / "kueue" / "configuration.yaml"
KUEUE_MANAGER = SAMPLES / "kueue" / "kueue-manager-config.yaml"


def aws_documents() -> list[dict]:
    decoder, text, out, at = json.JSONDecoder(), AWS.read_text(), [], 0
    while at < len(text.rstrip()):
        value, at = decoder.raw_decode(text, at)
        out.append(value)
        while at < len(text) and text[at].isspace():
            at += 1
    return out


def aws(*documents) -> dict:
    return read_configuration_files(
        "aws-batch", [(f"doc{i}.json", json.dumps(d)) for i, d in enumerate(documents)]
    )


def test_the_aws_sample_becomes_its_policy():
    data = read_configuration_files("aws-batch", [("configuration.json", AWS.read_bytes())])
    Policy.from_dict(data)
    assert data["capacity"] == {"ml.p4d.24xlarge": 11, "ml.g5.12xlarge": 8}
    # GPUs per instance from the instance type when the environment carries no planner tag
    assert data["instance_types"]["ml.p4d.24xlarge"]["gpus"] == 8
    shares = {share["name"]: share for share in data["shares"]}
    assert shares["nlp"]["strategy"] == "LEND_AND_BORROW" and shares["nlp"]["borrow_limit_percent"] == 100
    assert shares["nlp"]["in_share_preemption"] == "lower_priority"
    assert shares["vision"]["strategy"] == "LEND" and shares["vision"]["in_share_preemption"] == "never"
    assert shares["prod-tuning"]["strategy"] == "RESERVE"
    # a day in RUNNABLE with insufficient capacity cancels the job: section 10's limit, said in words
    assert data["runnable_timeout_seconds"] == 86400
    assert "jobStateTimeLimitActions (CANCEL after 86400 s with reason CAPACITY" in data["description"]


def test_the_describe_outputs_may_come_one_file_each_in_any_order():
    documents = aws_documents()
    assert aws(*reversed(documents))["shares"] == aws(*documents)["shares"]


def test_describe_quota_share_objects_count_as_shares():
    environment, policy, shares, queue = aws_documents()
    singles = [dict(share) for share in shares["quotaShares"]]
    assert len(aws(environment, policy, queue, *singles)["shares"]) == 4


def test_a_job_queue_of_another_type_is_refused():
    environment, policy, shares, queue = aws_documents()
    queue = {"jobQueues": [dict(queue["jobQueues"][0], jobQueueType="ECS")]}
    with pytest.raises(InputError) as caught:
        aws(environment, policy, shares, queue)
    assert caught.value.field == "doc3.json.jobQueues[0].jobQueueType"
    assert "'ECS'" in caught.value.reason


def test_compute_environments_are_refused_by_name():
    with pytest.raises(InputError) as caught:
        aws({"computeEnvironments": []})
    assert caught.value.field == "doc0.json.computeEnvironments"
    assert "describe-compute-environments" in caught.value.reason


def test_a_quota_share_with_an_unknown_strategy_names_it():
    environment, policy, shares, queue = aws_documents()
    broken = json.loads(json.dumps(shares))
    broken["quotaShares"][1]["resourceSharingConfiguration"]["strategy"] = "SHARE"
    with pytest.raises(InputError) as caught:
        aws(environment, policy, broken, queue)
    assert caught.value.field == "doc2.json.quotaShares[1].resourceSharingConfiguration.strategy"


@pytest.mark.parametrize(
    ("key", "field", "value"),
    [
        ("resourceSharingConfiguration", "strategy", {"RESERVE": 1}),
        ("resourceSharingConfiguration", "strategy", ["LEND"]),
        ("preemptionConfiguration", "inSharePreemption", ["ENABLED"]),
        ("preemptionConfiguration", "inSharePreemption", {"ENABLED": True}),
    ],
)
def test_a_list_or_object_where_a_word_belongs_is_refused_by_field(key, field, value):
    # These raised a bare TypeError (a list or dict cannot be looked up in a set of words): a 500 in the
    # service instead of a 400 naming the field.
    environment, policy, shares, queue = aws_documents()
    broken = json.loads(json.dumps(shares))
    broken["quotaShares"][0][key][field] = value
    with pytest.raises(InputError) as caught:
        aws(environment, policy, broken, queue)
    assert caught.value.field == f"doc2.json.quotaShares[0].{key}.{field}"


def test_without_quota_shares_the_import_says_which_output_is_missing():
    environment, policy, _, queue = aws_documents()
    with pytest.raises(InputError) as caught:
        aws(environment, policy, queue)
    assert "list-quota-shares" in caught.value.reason


def test_the_kueue_sample_becomes_its_policy_and_fair_sharing_is_reported():
    data = read_configuration_files(
        "kueue", [(KUEUE.name, KUEUE.read_bytes()), (KUEUE_MANAGER.name, KUEUE_MANAGER.read_bytes())]
    )
    Policy.from_dict(data)
    # the ClusterQueues' 40 A100 and 16 L4 GPUs plus the Cohort's own 8 A100
    assert data["capacity"] == {"a100-80gb": 48, "l4": 16}
    shares = {share["name"]: share for share in data["shares"]}
    assert shares["team-research"]["borrowing_limit"] == {"l4": 6, "a100-80gb": 0}
    assert shares["team-research"]["lending_limit"] == {"l4": 4}
    assert shares["team-research"]["reclaim"] == "lower_priority"
    assert shares["team-prod"]["strategy"] == "RESERVE"
    assert (
        "fair sharing on (preemptionStrategies LessThanOrEqualToFinalShare, LessThanInitialShare)"
        in data["description"]
    )
    # the manager's Configuration turns fair sharing on; ClusterQueue weights become fair_weight
    assert data["fair_sharing"] == {
        "preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert shares["team-nlp"]["fair_weight"] == 2 and shares["team-research"].get("fair_weight", 1) == 1


def test_kueue_v1beta2_objects_read_as_v1beta1():
    listed = yaml.safe_load(KUEUE.read_text())
    for item in listed["items"]:
        item["apiVersion"] = "kueue.x-k8s.io/v1beta2"
        if item["kind"] == "ClusterQueue":
            item["spec"]["cohortName"] = item["spec"].pop("cohort")
    data = read_configuration_files("kueue", [("v1beta2.yaml", yaml.safe_dump(listed))])
    assert data["capacity"] == {"a100-80gb": 48, "l4": 16}
    assert {s["strategy"] for s in data["shares"]} == {"LEND_AND_BORROW", "LEND", "RESERVE"}


def test_a_workload_among_the_configuration_is_refused():
    listed = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [{"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload", "metadata": {"name": "w"}}],
    }
    with pytest.raises(InputError) as caught:
        read_configuration_files("kueue", [("c.yaml", yaml.safe_dump(listed))])
    assert caught.value.field == "c.yaml: items[0].kind" and "kueue-workloads" in caught.value.reason


def test_import_policy_on_the_command_line(tmp_path, capsys):
    out = tmp_path / "policy.json"
    assert (
        main(["import-policy", "--format", "kueue", str(KUEUE), str(KUEUE_MANAGER), "--out", str(out)]) == 0
    )
    assert json.loads(out.read_text())["capacity"] == {"a100-80gb": 48, "l4": 16}
    assert "turns fair sharing on" in capsys.readouterr().err  # the import's notes, for the person running it
    assert main(["import-policy", "--format", "aws-batch", str(KUEUE), "--out", str(out)]) == 2
    assert capsys.readouterr().err.startswith("error: configuration.yaml: record 1 is not valid JSON")


@pytest.mark.parametrize("fmt", ["kueue", "aws-batch"])
def test_a_file_that_is_not_utf8_is_named(fmt):
    # A binary file given as a Kueue configuration raised UnicodeDecodeError (HTTP 500 on the API,
    # found by schemathesis).
    with pytest.raises(InputError) as error:
        read_configuration_files(fmt, [("cluster.webp", b"RIFF\x1a\x00\x00\x00WEBPVP8L\xfd\xff")])
    assert error.value.field == "cluster.webp"


def test_a_utf8_byte_order_mark_is_read():
    text = KUEUE.read_bytes()
    marked = read_configuration_files("kueue", [("c.yaml", b"\xef\xbb\xbf" + text)])
    assert marked == read_configuration_files("kueue", [("c.yaml", text)])
