"""A sha256 per case of what a replay gives (RESULT's figures, every job's outcome, the wait
history): run before and after a change of the engine that must not change outcomes, on both
engines, and compare the lines.

    SCHEDULING_ENGINE=compiled .venv/bin/python benchmarks/outcome_digests.py > before.txt
    .venv/bin/python benchmarks/outcome_digests.py --cases 10k-fair samples > after.txt

Cases: the replay benchmark's (``10k``, ``100k-fair``, ``10k-fairtree``...), ``samples`` (the
example policy and trace in samples/), and ``seed-N-VARIANT`` (a 2,000-job synthetic trace made
with seed N on one of the benchmark's variants, e.g. ``seed-7-fair``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

DEFAULT_CASES = (
    "10k", "10k-fair", "10k-tree", "10k-fairtree", "10k-flavors", "10k-flavors3", "10k-plan",
    "100k", "100k-fair", "100k-tree", "100k-flavors", "samples",
    "seed-2-fair", "seed-3-plan", "seed-4-fairtree", "seed-5-flavors", "seed-6-", "seed-7-tree",
)  # fmt: skip


def load(case: str):
    from benchmarks import replay_benchmark
    from scheduling.model import Policy

    if case == "samples":
        from scheduling.traces import read_trace

        policy = Policy.from_dict(json.loads((ROOT / "samples/policies/aws-example.json").read_text()))
        return policy, read_trace(ROOT / "samples/traces/aws-example.json")
    if case.startswith("seed-"):
        _, seed, variant = case.split("-", 2)
        saved = replay_benchmark.SYNTHETIC["10k"]
        replay_benchmark.SYNTHETIC["10k"] = 2_000
        try:
            from scheduling import synthetic

            generate = synthetic.generate
            synthetic.generate = lambda n, seed=1, _s=int(seed): generate(n, seed=_s)  # type: ignore[assignment]
            try:
                return replay_benchmark.load_case("10k" + (f"-{variant}" if variant else ""))
            finally:
                synthetic.generate = generate
        finally:
            replay_benchmark.SYNTHETIC["10k"] = saved
    return replay_benchmark.load_case(case)


def digest(case: str) -> str:
    from scheduling.replay.engine import replay

    policy, trace = load(case)
    result = replay(policy, trace, record_events=True)
    h = hashlib.sha256()
    h.update(
        json.dumps(
            result.to_dict(include_jobs=True, include_events=True), sort_keys=True, default=str
        ).encode()
    )
    outcomes = result.outcomes
    for name in ("state", "first_start", "end", "queued", "preemptions", "lost", "reason", "instance_type"):
        column = getattr(outcomes, name)
        if column is not None:
            h.update(np.ascontiguousarray(column).tobytes())
    if outcomes.history is not None:
        for name, column in sorted(outcomes.history.to_arrays().items()):
            h.update(name.encode())
            h.update(np.ascontiguousarray(column).tobytes())
    return h.hexdigest()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=list(DEFAULT_CASES))
    args = parser.parse_args()
    from scheduling.replay import engine_kind

    print(f"# engine: {engine_kind()}", flush=True)
    for case in args.cases:
        print(f"{case} {digest(case)}", flush=True)


if __name__ == "__main__":
    main()
