"""Hostile names through both exports: the AWS script runs only its own ``aws`` calls, and the Kueue
YAML parses to exactly the documents the policy has, whatever the policy and share names hold. Names
with control characters are refused by the one validator; the exports stay safe for a Policy built in
code without it (or stored before the rule)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path

import pytest
import yaml

from scheduling.errors import InputError
from scheduling.export import from_kueue_yaml, to_aws_batch, to_kueue_yaml
from scheduling.model import InstanceType, Policy, Share, Strategy

T = "ml.g5.xlarge"

# Each would run ``touch pwned`` (in the script's folder) or add a YAML document if written unescaped.
ALLOWED_HOSTILE = [
    "$(touch pwned)",
    "`touch pwned`",
    "x; touch pwned",
    "x && touch pwned #",
    "'; touch pwned; '",
    '"; touch pwned; "',
    "a | touch pwned",
    "--- apiVersion: v1",
    "kind: Namespace",
    "x: {a: b}",
    "&anchor *alias !!python/object:os.system",
    "# comment",
    "équipe 中文 -rf",
]
# Refused by the validator, still exported safely when a Policy holds them.
CONTROL_HOSTILE = [
    "nl\ntouch pwned\n#",
    "cr\rtouch pwned",
    "nel\x85touch pwned",
    "ls\u2028touch pwned",
    "\n---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: evil",
    "trailing\n",
    "esc\x1b[2Jtouch pwned",
]

STUB_AWS = """#!/bin/sh
# Records each call, one line, arguments separated by |; answers like the AWS CLI where the script reads.
printf '%s|' "$@" >> "$AWS_LOG"; printf '\\n' >> "$AWS_LOG"
case "$2" in
  describe-*) echo VALID ;;
  create-scheduling-policy) echo arn:aws:batch:us-east-1:1:scheduling-policy/p ;;
esac
"""


def hostile_policy(name: str) -> Policy:
    """A Policy built directly (no validator), the name as policy name and as one share's name."""
    return Policy(
        name=name,
        instance_types={T: InstanceType(T, 1, 1.41)},
        capacity={T: 3},
        shares=(
            Share(name=name, capacity={T: 1}, strategy=Strategy.LEND_AND_BORROW),
            Share(name="prod", capacity={T: 2}, strategy=Strategy.RESERVE),
        ),
    )


def run_bundle(policy: Policy, folder: Path) -> tuple[subprocess.CompletedProcess, list[list[str]]]:
    bundle = to_aws_batch(policy)
    for file_name, document in bundle.documents.items():
        (folder / file_name).write_text(json.dumps(document))
    (folder / "run.sh").write_text(bundle.script)
    bin_dir = folder / "bin"
    bin_dir.mkdir()
    (bin_dir / "aws").write_text(STUB_AWS)
    (bin_dir / "aws").chmod(stat.S_IRWXU)
    log = folder / "aws.log"
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "AWS_LOG": str(log), "HOME": str(folder)}
    done = subprocess.run(["sh", "run.sh"], cwd=folder, env=env, capture_output=True, text=True, timeout=30)
    calls = [line.rstrip("|").split("|") for line in log.read_text().splitlines()] if log.exists() else []
    return done, calls


@pytest.mark.parametrize("name", ALLOWED_HOSTILE + CONTROL_HOSTILE)
def test_the_aws_script_runs_only_its_own_aws_calls(name, tmp_path):
    done, calls = run_bundle(hostile_policy(name), tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # no "command not found" from a name taken for a command
    assert not (tmp_path / "pwned").exists()
    assert not os.path.exists("pwned")
    # service environment, its wait, scheduling policy, job queue, its wait, one quota share per share
    assert [call[:2] for call in calls] == [
        ["batch", "create-service-environment"],
        ["batch", "describe-service-environments"],
        ["batch", "create-scheduling-policy"],
        ["batch", "create-job-queue"],
        ["batch", "describe-job-queues"],
        ["batch", "create-quota-share"],
        ["batch", "create-quota-share"],
    ]
    # every file a call names exists: the names reached the script as the words the bundle wrote
    inputs = [call[call.index("--cli-input-json") + 1] for call in calls if "--cli-input-json" in call]
    assert all((tmp_path / path.removeprefix("file://")).is_file() for path in inputs)


@pytest.mark.parametrize("name", ALLOWED_HOSTILE + CONTROL_HOSTILE)
def test_the_kueue_yaml_parses_to_exactly_the_policys_documents(name):
    text = to_kueue_yaml(hostile_policy(name), priorities=[0, 5])
    documents = list(yaml.safe_load_all(text))
    # one Cohort, one ResourceFlavor, two ClusterQueues, two WorkloadPriorityClasses
    assert [d["kind"] for d in documents] == [
        "Cohort",
        "ResourceFlavor",
        "ClusterQueue",
        "ClusterQueue",
        "WorkloadPriorityClass",
        "WorkloadPriorityClass",
    ]
    assert documents[0]["metadata"]["annotations"]["planner/policy-name"] == name
    assert documents[2]["metadata"]["annotations"]["planner/share-name"] == name
    header = text[: text.index("\n---")].splitlines()
    assert all(line.startswith("#") for line in header)


@pytest.mark.parametrize("name", ALLOWED_HOSTILE)
def test_names_without_control_characters_go_through_the_validator_and_back(name):
    data = hostile_policy(name).to_dict()
    assert Policy.from_dict(data).shares[0].name == name
    imported = from_kueue_yaml(to_kueue_yaml(Policy.from_dict(data)))
    assert imported["name"] == name and imported["shares"][0]["name"] == name


@pytest.mark.parametrize(
    "name, character",
    [
        ("nl\ntouch pwned", "character 3 is U+000A (line feed)"),
        ("cr\rx", "character 3 is U+000D (carriage return)"),
        ("tab\tx", "character 4 is U+0009 (tab)"),
        ("nel\x85x", "character 4 is U+0085"),
        ("ls\u2028x", "character 3 is U+2028 (line separator)"),
        ("rtl\u202eexe.txt", "character 4 is U+202E (right-to-left override)"),
        ("nul\x00", "character 4 is U+0000 (nul)"),
    ],
)
def test_the_validator_refuses_control_characters_in_every_name(name, character):
    base = hostile_policy("ok").to_dict()
    for field, data in [
        ("name", {**base, "name": name}),
        ("shares[0].name", {**base, "shares": [{**base["shares"][0], "name": name}, base["shares"][1]]}),
        (f"instance_types.{name}", {**base, "instance_types": {name: {"gpus": 1}}, "capacity": {name: 3},
                                    "shares": [{"name": "a", "capacity": {name: 1}}]}),
    ]:  # fmt: skip
        with pytest.raises(InputError) as error:
            Policy.from_dict(data)
        # a NUL quoted from the input is shown escaped (stored errors: PostgreSQL refuses NUL in text)
        assert error.value.field == field.replace("\x00", "\\x00")
        assert character in error.value.reason


def test_a_kueue_import_whose_policy_name_carries_line_breaks_is_refused():
    text = to_kueue_yaml(hostile_policy("lab"))
    documents = list(yaml.safe_load_all(text))
    documents[0]["metadata"]["annotations"]["planner/policy-name"] = "lab\ntouch /tmp/x\n#"
    with pytest.raises(InputError) as error:
        from_kueue_yaml(yaml.safe_dump_all(documents))
    assert error.value.field == "name"
    assert "U+000A (line feed)" in error.value.reason
