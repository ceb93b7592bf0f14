"""The Kueue org sample (samples/kueue/org/): its live configuration imports on the command line into a
policy with its cohort tree, and its workload history replays under that policy."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import yaml

from scheduling.model import Policy
from scheduling.traces import read_trace

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "kueue" / "org"


def imported(tmp_path: Path) -> dict:
    out = tmp_path / "org-policy.json"
    subprocess.run(
        [sys.executable, "-m", "scheduling", "import-policy", "--format", "kueue",
         str(SAMPLE / "configuration.yaml"), str(SAMPLE / "kueue-manager-config.yaml"), "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    return json.loads(out.read_text())


def test_the_org_configuration_imports_with_its_tree(tmp_path):
    data = imported(tmp_path)
    policy = Policy.from_dict(data)
    assert policy.name == "acme-ml"  # the root Cohort: its spot quota is the unassigned capacity
    assert dict(policy.capacity) == {"reserved": 168, "on-demand": 24, "spot": 32}
    tree = {c.name: (c.parent, dict(c.capacity), c.borrowing_limit, c.lending_limit, c.fair_weight)
            for c in policy.cohorts}  # fmt: skip
    assert tree == {
        "research": (None, {"on-demand": 16}, {"reserved": 32}, None, 2),
        "nlp": ("research", {}, None, {"reserved": 16}, 1),
        "product": (None, {}, None, {"reserved": 16}, 1),
    }
    assert {s.name: s.cohort for s in policy.shares} == {
        "llm-pretrain": "nlp", "llm-finetune": "nlp", "vision": "research",
        "search-ranking": "product", "ads-models": "product", "eval-gate": "product",
    }  # fmt: skip
    assert policy.share("eval-gate").strategy.value == "RESERVE"
    assert policy.share("ads-models").flavor_order == ("reserved", "spot", "on-demand")
    assert policy.share("llm-pretrain").flavor_fungibility.when_can_borrow.value == "TryNextFlavor"
    assert policy.fair_sharing is not None


def test_the_org_history_replays_under_the_imported_policy(tmp_path):
    policy_path = tmp_path / "org-policy.json"
    policy_path.write_text(json.dumps(imported(tmp_path)))
    trace = read_trace(SAMPLE / "workloads.json", format="kueue-workloads")
    assert len(trace.job_id) > 300
    # Section 12: a workload accepts every flavor its ClusterQueue lists, in the ClusterQueue's order.
    assert set(trace.type_names) == {"reserved|on-demand|spot", "reserved|spot", "reserved"}
    out = tmp_path / "result.json"
    subprocess.run(
        [sys.executable, "-m", "scheduling", "replay", "--policy", str(policy_path),
         "--trace", str(SAMPLE / "workloads.json"), "--format", "kueue-workloads", "--out", str(out)],
        cwd=ROOT, check=True, capture_output=True,
    )  # fmt: skip
    summary = json.loads(out.read_text())["summary"]
    assert summary["jobs"] == len(trace.job_id) and summary["unschedulable"] == 0


def test_the_committed_configuration_is_what_the_generator_writes():
    spec = importlib.util.spec_from_file_location("org_sample", SAMPLE / "generate.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert yaml.safe_load((SAMPLE / "configuration.yaml").read_text()) == module.configuration()
    manager = yaml.safe_load((SAMPLE / "kueue-manager-config.yaml").read_text())
    assert manager == module.manager_configuration()


def test_the_readme_table_is_what_the_tree_and_its_flattened_version_give(tmp_path):
    # The README's worked example ("Flavors and cohorts"): p95 waits in whole minutes per queue, the
    # whole org's p95 and preemptions, and the jobs that fell back to spot. A changed engine or sample
    # that changes them must change the README too.
    from scheduling.replay.engine import replay

    tree = Policy.from_dict(imported(tmp_path))
    flat_dict = imported(tmp_path)
    flat_dict.pop("cohorts")
    for share in flat_dict["shares"]:
        share.pop("cohort", None)
    flat = Policy.from_dict(flat_dict)
    trace = read_trace(SAMPLE / "workloads.json", format="kueue-workloads")

    def figures(policy: Policy) -> dict:
        result = replay(policy, trace).to_dict()
        p95 = {s["name"]: round(s["wait_seconds"]["p95"] / 60) for s in result["shares"]}
        summary = result["summary"]
        return {
            "p95": {q: p95[q] for q in ("llm-pretrain", "vision", "eval-gate")},
            "all": (round(summary["wait_seconds"]["p95"] / 60), sum(summary["preemptions"].values())),
            "spot": sum(job["instance_type"] == "spot" for job in result["jobs"]),
        }

    assert figures(tree) == {"p95": {"llm-pretrain": 206, "vision": 1719, "eval-gate": 59}, "all": (163, 186),
                             "spot": 41}  # fmt: skip
    assert figures(flat) == {"p95": {"llm-pretrain": 299, "vision": 1323, "eval-gate": 59}, "all": (80, 118),
                             "spot": 32}  # fmt: skip
