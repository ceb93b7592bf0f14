"""RESULT.json written in chunks through orjson holds exactly what ``to_dict()`` builds: the jobs
and events of a replay with preemptions and unschedulable jobs, across several chunks."""

from __future__ import annotations

import json

from scheduling import result as result_module
from scheduling.engine import replay
from scheduling.model import Policy
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate


def test_the_streamed_result_json_equals_the_dict(tmp_path, monkeypatch):
    trace = generate(3000, seed=3)
    policy = Policy.from_dict(demo_policy_dict(demo_pool_gpus(trace)))
    result = replay(policy, trace, record_events=True)
    monkeypatch.setattr(result_module, "JSON_CHUNK", 1000)  # three chunks of jobs, more of events
    path = tmp_path / "result.json"
    result.write_json(path, include_jobs=True, include_events=True)
    written = json.loads(path.read_text())
    expected = json.loads(json.dumps(result.to_dict()))
    assert written == expected
    assert len(written["jobs"]) == 3000 and sum(1 for e in written["events"] if e["event"] == "preempt") > 0
    assert {job["state"] for job in written["jobs"]} >= {"SUCCEEDED"}
