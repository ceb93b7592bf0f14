"""``python -m scheduling forecast`` (SEMANTICS.md section 11): FORECAST.json from the files, and bad
input refused with a non-zero exit, one line on stderr and no output file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLES = REPO / "samples" / "forecast"
SAMPLE = ("--policy", str(SAMPLES / "policy.json"), "--snapshot", str(SAMPLES / "snapshot.json"))
HISTORY = "job_id,submit_time,share,duration\n" + "".join(
    f"h{i},{i * 3_600},A,{600 + 60 * (i % 7)}\n" for i in range(40)
)


def run(tmp_path: Path, *options: str) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / "FORECAST.json"
    done = subprocess.run(
        [sys.executable, "-m", "scheduling", "forecast", *options, "--out", str(out)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done, out


def test_forecast_of_the_sample(tmp_path):
    done, out = run(tmp_path, *SAMPLE, "--samples", "4")
    assert done.returncode == 0, done.stderr
    result = json.loads(out.read_text())
    assert result["samples"] == 4 and result["arrivals"] == "none" and result["time"] == 1000
    jobs = {j["job_id"]: j for j in result["jobs"]}
    assert jobs["p3"]["start"] == {"p10": 1100, "p50": 1100, "p90": 1100}  # see test_forecast_deterministic
    assert jobs["p2"]["position"] == 2


def test_history_seed_and_arrivals(tmp_path):
    history = tmp_path / "history.csv"
    history.write_text(HISTORY)
    snapshot = tmp_path / "snapshot.json"
    snapshot.write_text(
        json.dumps(
            {
                "time": 40 * 3_600,
                "running": [{"job_id": "r", "share": "A", "started_at": 40 * 3_600 - 100}],
                "pending": [
                    {"job_id": "p", "share": "A", "submit_time": 40 * 3_600 - 50, "instance_count": 2}
                ],
            }
        )
    )
    options = ["--policy", str(SAMPLES / "policy.json"), "--snapshot", str(snapshot), "--history",
               str(history), "--samples", "6", "--seed", "3", "--horizon-days", "2"]  # fmt: skip
    first, out = run(tmp_path, *options)
    assert first.returncode == 0, first.stderr
    once = json.loads(out.read_text())
    again, out = run(tmp_path, *options)
    assert json.loads(out.read_text()) == once  # the same inputs, the same forecast
    assert once["arrivals"] == "history" and once["seed"] == 3
    p = next(j for j in once["jobs"] if j["job_id"] == "p")
    # p needs both instances: it starts when r ends, r's remaining drawn from durations > 100 s
    assert 40 * 3_600 + 500 <= p["start"]["p10"] <= p["start"]["p90"] <= 40 * 3_600 + 900


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--samples", "0"], "samples: 0 is outside 1..2000"),
        (["--horizon-days", "400"], "horizon_days: 400.0 is outside (0, 90] days"),
        (["--arrivals", "history"], "arrivals: history arrivals need a history trace"),
        (
            ["--snapshot-format", "aws-batch"],
            "pending: is not a key of an AWS Batch snapshot "
            "(list_service_jobs, describe_service_job, job_queue_snapshot, time)",
        ),
    ],
)
def test_bad_options_exit_with_one_line(tmp_path, options, message):
    done, out = run(tmp_path, *SAMPLE, *options)
    assert done.returncode == 2
    assert done.stderr.strip() == f"error: {message}"
    assert not out.exists()


def test_bad_snapshot_names_the_record(tmp_path):
    snapshot = tmp_path / "snapshot.json"
    pending = [{"job_id": "x", "share": "nobody", "submit_time": 1}]
    snapshot.write_text(json.dumps({"time": 10, "pending": pending}))
    done, out = run(tmp_path, "--policy", str(SAMPLES / "policy.json"), "--snapshot", str(snapshot))
    assert done.returncode == 2
    line = "error: pending[0] (job 'x').share: unknown share 'nobody': not in the policy"
    assert done.stderr.strip() == line
    assert len(done.stderr.strip().splitlines()) == 1
    assert not out.exists()
