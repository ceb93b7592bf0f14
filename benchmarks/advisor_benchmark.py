"""Advisor throughput: variants replayed per minute on one core, as one Celery worker does them.

    .venv/bin/python benchmarks/advisor_benchmark.py               # 10 random variants of the demo
    .venv/bin/python benchmarks/advisor_benchmark.py --variants 30 --jobs 20000 --seed 3

The trace is `scheduling.synthetic.generate(jobs)` on the 4-share demo policy sized for about 85%
load; the variants are `scheduling.advisor.variants(..., mode="random")` of it. Each is replayed in
this process (what `replay_run` does, without the database), then the Pareto front is computed.
Generating the trace is not timed; making the variants, replaying them and the front are.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from scheduling.advisor import pareto_front, point_from_metrics, variants  # noqa: E402
from scheduling.model import Policy  # noqa: E402
from scheduling.replay.engine import replay  # noqa: E402
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", type=int, default=10)
    parser.add_argument("--jobs", type=int, default=20_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()

    trace = generate(args.jobs, seed=1)
    base = demo_policy_dict(demo_pool_gpus(trace))
    started = time.perf_counter()
    made = variants(base, mode="random", size=args.variants, seed=args.seed)
    points = []
    slowest = 0.0
    for number, variant in enumerate(made, start=1):
        one = time.perf_counter()
        result = replay(Policy.from_dict(variant.policy), trace)
        slowest = max(slowest, time.perf_counter() - one)
        points.append(point_from_metrics(number, result.metrics, ["prod-training"]))
    front = pareto_front(points)
    elapsed = time.perf_counter() - started
    print(f"{len(made)} variants of {base['name']} over {args.jobs:,} synthetic jobs on one core")
    print(f"  {elapsed:.1f} s in all, {elapsed / len(made):.2f} s per variant (slowest {slowest:.2f} s)")
    print(f"  {60 * len(made) / elapsed:.1f} variants/minute per worker")
    print(f"  Pareto front: {len(front)} of {len(points)} points (urgent share: prod-training)")


if __name__ == "__main__":
    main()
