"""The README's command-line example replays the AWS example of SEMANTICS.md section 4.

Expected by hand: QS1's p3 runs on its quota, p2 borrows QS2's idle instance, p1 waits (QS3 lends
nothing); QS2's job at 600 s reclaims its instance from p2 (cross-share); p1 raised to 4 at 1200 s
preempts p3 (in-share). The README shows this command, so it must keep working on the samples.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_readme_replay_of_the_aws_example(tmp_path):
    out = tmp_path / "result.json"
    subprocess.run(
        [sys.executable, "-m", "scheduling", "replay",
         "--policy", "samples/policies/aws-example.json",
         "--trace", "samples/traces/aws-example.json", "--out", str(out), "--events"],
        cwd=ROOT, check=True,
    )  # fmt: skip
    result = json.loads(out.read_text())
    events = result["events"]
    preempts = [(e["time"], e["job_id"], e["cause"], e["by"]) for e in events if e["event"] == "preempt"]
    assert preempts == [(600.0, "qs1-p2", "cross_share", "qs2-a"), (1200.0, "qs1-p3", "in_share", "qs1-p1")]
    starts = {e["job_id"]: e["time"] for e in result["events"] if e["event"] == "start"}
    # last start of each job: p3 again when QS2's job ends, p2 when p1 ends
    assert starts == {"qs1-p3": 4200.0, "qs1-p2": 4800.0, "qs2-a": 600.0, "qs1-p1": 1200.0}
    assert result["summary"]["succeeded"] == 4
