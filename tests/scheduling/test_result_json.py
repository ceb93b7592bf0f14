"""RESULT.json written in chunks holds exactly what ``to_dict()`` builds: the jobs and events of a
replay with preemptions and unschedulable jobs, across several chunks; and the jobs encoded by
columns (``scheduling.jobs_json``) are byte for byte what orjson makes of the dicts."""

from __future__ import annotations

import json

import orjson
from conftest import make_trace

from scheduling import jobs_json
from scheduling import result as result_module
from scheduling.model import Policy
from scheduling.outcomes import REASON_CODE_NAMES, STATE_CODE_NAMES
from scheduling.replay.engine import replay
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


def _encoded_by_dicts(result) -> bytes:
    return b",".join(orjson.dumps(chunk)[1:-1] for chunk in result.job_chunks())


def test_the_jobs_encoded_by_columns_are_the_bytes_the_dicts_give(monkeypatch):
    # Ids JSON must escape (a quote, a backslash: escaped by Arrow; a control character: its
    # chunk goes to the dicts), text beyond ASCII, a share name with a quote, times that orjson
    # writes with exponents, jobs never started (null), preempted and unschedulable ones.
    ids = ["plain", 'q"uote', "back\\slash", "tab\there", "é-ü-😀", "z" * 70, "9", "-", "x{}", "last"]
    policy = Policy.from_dict(
        {
            "name": "p",
            "instance_types": {"gpu": {"gpus": 8, "hourly_price": 10.0}},
            "capacity": {"gpu": 2},
            "shares": [
                {"name": 'te"am', "capacity": {"gpu": 1}, "borrow_limit_percent": 100},
                {
                    "name": "b",
                    "capacity": {"gpu": 1},
                    "strategy": "RESERVE",
                    "in_share_preemption": "lower_priority",
                },
            ],
        }
    )
    jobs = [
        {"job_id": job, "submit_time": 1e-7 * k if k % 3 else 1e16 + k, "share": 'te"am' if k % 2 else "b",
         "duration": 0.1 + k, "priority": k % 4, "instance_count": 3 if k == 5 else 1}
        for k, job in enumerate(ids)
    ]  # fmt: skip
    result = replay(policy, make_trace(jobs))
    assert {job["state"] for job in result.to_dict()["jobs"]} >= {"SUCCEEDED", "UNSCHEDULABLE"}
    for chunk in (3, 4, 65_536):  # the chunk with the tab goes to the dicts, the others do not
        monkeypatch.setattr(jobs_json, "CHUNK", chunk)
        encoded = b",".join(
            bytes(part)
            for part in jobs_json.encoded_jobs(
                result.trace,
                result.outcomes,
                STATE_CODE_NAMES.tolist(),
                REASON_CODE_NAMES.tolist(),
                result._encoded_job_dicts,
                type_names=result._type_names().tolist(),
                run_types=result._run_types(),
            )  # fmt: skip
        )
        assert encoded == _encoded_by_dicts(result)


def test_the_written_jobs_are_the_bytes_the_dicts_give(tmp_path):
    trace = generate(3000, seed=5)
    policy = Policy.from_dict(demo_policy_dict(demo_pool_gpus(trace) // 2))
    result = replay(policy, trace)
    path = tmp_path / "result.json"
    result.write_json(path, include_jobs=True, include_events=False)
    written = path.read_bytes()
    assert written[written.index(b'"jobs":[') + 8 : -2] == _encoded_by_dicts(result)
