"""SEMANTICS.md section 7: ``python -m scheduling replay`` writes RESULT.json, and rejects bad input
with a non-zero exit, one line on stderr and no output file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from aws_example import aws_policy

REPO = Path(__file__).resolve().parents[2]
# The example with two defaults written out: the CLI reads them as any policy file may have them.
AWS_POLICY = aws_policy(queueing="best_effort_fifo", startup_seconds=0)
AWS_CSV = """job_id,submit_time,share,duration,priority
p3,0,QS1,1000,3
p2,0,QS1,1000,2
p1,0,QS1,300,1
q2,100,QS2,500,0
"""


def replay_cli(
    tmp_path: Path, policy_text: str, trace_text: str, trace_name: str = "trace.csv", events: bool = False
) -> tuple[subprocess.CompletedProcess, Path]:
    policy, trace, out = tmp_path / "policy.json", tmp_path / trace_name, tmp_path / "result.json"
    policy.write_text(policy_text)
    trace.write_text(trace_text)
    command = [
        sys.executable,
        "-m",
        "scheduling",
        "replay",
        "--policy",
        str(policy),
        "--trace",
        str(trace),
        "--out",
        str(out),
    ]
    if events:
        command.append("--events")
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=120)
    return done, out


def test_replay_writes_result_json(tmp_path):
    done, out = replay_cli(tmp_path, json.dumps(AWS_POLICY), AWS_CSV)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["summary"]["jobs"] == 4
    assert result["summary"]["succeeded"] == 4
    assert result["summary"]["preemptions"] == {  # no priority update in CSV
        "cross_share": 1,
        "in_share": 0,
        "fair_sharing": 0,
        "capacity": 0,
    }
    assert [s["name"] for s in result["shares"]] == ["QS1", "QS2", "QS3"]
    assert {j["job_id"]: j["end"] for j in result["jobs"]} == {"p3": 1000, "p2": 1600, "p1": 1300, "q2": 600}
    assert not result.get("events")  # only with --events


def test_replay_with_events_and_priority_updates_from_json_trace(tmp_path):
    trace = {
        "jobs": [
            {"job_id": "p3", "submit_time": 0, "share": "QS1", "duration": 1000, "priority": 3},
            {"job_id": "p2", "submit_time": 0, "share": "QS1", "duration": 1000, "priority": 2},
            {"job_id": "p1", "submit_time": 0, "share": "QS1", "duration": 300, "priority": 1},
            {"job_id": "q2", "submit_time": 100, "share": "QS2", "duration": 500},
        ],
        "priority_updates": [{"time": 200, "job_id": "p1", "priority": 4}],
    }
    done, out = replay_cli(tmp_path, json.dumps(AWS_POLICY), json.dumps(trace), "trace.json", events=True)
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    events = [(e["time"], e["job_id"], e["event"], e["cause"], e["by"]) for e in result["events"]]
    # the AWS example of SEMANTICS.md section 4 (see test_rules_aws_example.py)
    assert events == [
        (0, "p3", "start", None, None),
        (0, "p2", "start", None, None),
        (100, "p2", "preempt", "cross_share", "q2"),
        (100, "q2", "start", None, None),
        (200, "p3", "preempt", "in_share", "p1"),
        (200, "p1", "start", None, None),
        (500, "p1", "finish", None, None),
        (500, "p3", "start", None, None),
        (600, "q2", "finish", None, None),
        (600, "p2", "start", None, None),
        (1500, "p3", "finish", None, None),
        (1600, "p2", "finish", None, None),
    ]


BAD_INPUTS = {
    "bad policy JSON": ('{"name": "x", "capacity": {', AWS_CSV, ()),
    "unknown share": (json.dumps(AWS_POLICY), AWS_CSV.replace("q2,100,QS2", "q2,100,QS9"), ("row 4", "QS9")),
    "negative duration": (
        json.dumps(AWS_POLICY),
        AWS_CSV.replace("p1,0,QS1,300", "p1,0,QS1,-300"),
        ("row 3", "duration"),
    ),
    "duplicate job_id": (
        json.dumps(AWS_POLICY),
        AWS_CSV.replace("p1,0,QS1", "p3,0,QS1"),
        ("row 3", "job_id"),
    ),
    "missing column": (json.dumps(AWS_POLICY), "job_id,submit_time,share\np3,0,QS1\n", ("duration",)),
}


@pytest.mark.parametrize("case", sorted(BAD_INPUTS))
def test_bad_input_exits_non_zero_with_one_line_and_no_result(tmp_path, case):
    policy_text, trace_text, mentions = BAD_INPUTS[case]
    done, out = replay_cli(tmp_path, policy_text, trace_text)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    for word in mentions:
        assert word in lines[0]
    assert not out.exists()
