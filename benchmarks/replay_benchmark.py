"""Replay engine benchmark: jobs/second and peak memory, one case per subprocess.

    .venv/bin/python benchmarks/replay_benchmark.py                 # 10k, 100k, 1M synthetic + real traces
    .venv/bin/python benchmarks/replay_benchmark.py --cases 10k itp   # a selection
    .venv/bin/python benchmarks/replay_benchmark.py --repeat 3        # the fastest of 3 runs a case
    .venv/bin/python benchmarks/replay_benchmark.py --cli --repeat 5  # the command line by phase,
                                                                      # then 5 pairs of it and the bare loop
    .venv/bin/python benchmarks/replay_benchmark.py --upload tiled 5m # upload to study finished (API)
    .venv/bin/python benchmarks/replay_benchmark.py --cli --tiles 150 # ten million jobs (ITP x150), by phase

Synthetic cases replay `scheduling.synthetic.generate(N)` on the 4-share demo policy (two shares lend
and borrow with in-share preemption, one lends, one reserves; cross-share reclaim on) sized for about
85% load. Real cases replay the ITP 2021 trace (ten clusters as ten shares, lending and borrowing) and
the Alibaba openb pods. Each case runs in its own process, so peak RSS is that case's alone; the
replay time excludes generating or reading the trace.

The engine is the compiled one when its build is fresh (``python -m scheduling.build``; the first
line says which). Machines differ: the ``reference loop`` line times a fixed pure-Python loop on
this machine, so figures from two machines can be compared. On a shared machine whose speed
varies, ``--repeat N`` runs each case N times (each in a fresh process) and keeps the fastest.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SYNTHETIC = {"10k": 10_000, "100k": 100_000, "1m": 1_000_000}
# The same synthetic traces with sections 8 and 9 on: fair sharing (both strategies), or a
# training-plan calendar (see _with_training_plan).
# And section 12: the pool split into two types that every job accepts ("flavors"), or three
# ("flavors3"), beside the same trace on the one-type pool ("flat"): what the fallback scan costs.
# And section 13: the same shares in a three-level tree of cohorts ("tree", see
# _with_three_level_tree), and that tree with fair sharing ("fairtree": section 8 over 13, beside
# "fair" on one level).
VARIANTS = (
    "100k-fair", "1m-fair", "100k-plan", "1m-plan", "100k-flavors", "1m-flavors", "100k-flavors3",
    "1m-flavors3", "100k-tree", "1m-tree", "100k-fairtree", "1m-fairtree",
)  # fmt: skip
REAL = ("itp", "openb")


def data_dir() -> Path:
    """The shared real traces: ``shared/data`` beside the checkout (or beside its parent, for a git
    worktree one level further down)."""
    for candidate in (ROOT.parent / "shared" / "data", ROOT.parent.parent / "shared" / "data"):
        if candidate.is_dir():
            return candidate
    raise SystemExit("no shared data directory (shared/data beside the checkout)")


def load_case(case: str):
    from scheduling.model import Policy

    size, _, variant = case.partition("-")
    if size in SYNTHETIC and variant in ("", "fair", "plan", "flavors", "flavors3", "tree", "fairtree"):
        from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

        trace = generate(SYNTHETIC[size], seed=1)
        policy = demo_policy_dict(demo_pool_gpus(trace))
        if variant in ("fair", "fairtree"):
            policy["fair_sharing"] = {}
        elif variant == "plan":
            _with_training_plan(policy, trace)
        elif variant == "flavors":
            _with_flavors(policy, trace, ["gpu-a", "gpu-b"])
        elif variant == "flavors3":
            _with_flavors(policy, trace, ["gpu-a", "gpu-b", "gpu-c"])
        if variant in ("tree", "fairtree"):
            _with_three_level_tree(policy)
        return Policy.from_dict(policy), trace
    from scheduling.traces import read_trace

    if case == "itp":
        from scheduling.model import Strategy
        from scheduling.quota_tables import itp_policy_dict

        trace = read_trace(data_dir() / "itp-2021" / "itp_all_clusters.csv", format="itp-2021")
        return Policy.from_dict(itp_policy_dict(Strategy.LEND_AND_BORROW)), trace
    if case == "openb":
        trace = read_trace(
            data_dir() / "alibaba-openb-2023" / "openb_pod_list_default.csv", format="alibaba-openb-2023"
        )
        return Policy.from_dict(openb_pooled_policy(trace)), trace
    raise SystemExit(f"unknown case {case!r}: choose from {', '.join([*SYNTHETIC, *VARIANTS, *REAL])}")


def _with_training_plan(policy: dict, trace) -> None:
    """A SageMaker training plan for the first share: 20% more of the pool for the middle third of
    the trace (pool and quota up at its start, both down at its end), and the last share's quota
    halved from two thirds on (a renegotiation: its borrowing jobs above it become preemptible)."""
    start, end = float(trace.submit_time.min()), float(trace.submit_time.max())
    first, last = policy["shares"][0], policy["shares"][-1]
    changes = []
    for type_name, capacity in policy["capacity"].items():
        extra = max(1, capacity // 5)
        plan_from, plan_to = start + (end - start) / 3, start + 2 * (end - start) / 3
        quota = first["capacity"].get(type_name, 0)
        halved = last["capacity"].get(type_name, 0) // 2
        changes += [
            {"time": plan_from, "capacity": {type_name: capacity + extra}},
            {"time": plan_from, "share": first["name"], "capacity": {type_name: quota + extra}},
            {"time": plan_to, "capacity": {type_name: capacity}},
            {"time": plan_to, "share": first["name"], "capacity": {type_name: quota}},
            {"time": plan_to, "share": last["name"], "capacity": {type_name: halved}},
        ]
    policy["changes"] = changes


def _with_flavors(policy: dict, trace, types: list[str]) -> None:
    """Section 12: the one-type pool split evenly into ``types`` (each share's quota too, the
    remainder to the first type), every job accepting them all; share i tries them starting from
    type i modulo their number, so that every type is some share's first choice."""
    ((name, capacity),) = policy["capacity"].items()
    spec = policy["instance_types"].pop(name)
    policy["instance_types"] = {t: dict(spec) for t in types}
    policy["capacity"] = _split(capacity, types)
    for i, share in enumerate(policy["shares"]):
        share["capacity"] = _split(share["capacity"].get(name, 0), types)
        first = i % len(types)
        if first:
            share["flavor_order"] = types[first:] + types[:first]
    trace.type_names = ["|".join(types)]
    trace.instance_type[:] = 0


def _split(count: int, types: list[str]) -> dict[str, int]:
    """``count`` in len(types) near-equal parts, the larger ones first."""
    part, extra = divmod(count, len(types))
    return {t: part + (1 if i < extra else 0) for i, t in enumerate(types)}


def _with_three_level_tree(policy: dict) -> None:
    """Section 13: the demo's shares in a tree of three levels: the two lending-and-borrowing teams in
    cohort ``training``, which is in ``org`` with the lender; the reserving share at the root. The
    cohorts hold a tenth of the pool as their own quota (taken from the unassigned part when there is
    one, else from the teams' quotas), so that borrowing levels 1, 2 and 3 all occur."""
    ((name, capacity),) = policy["capacity"].items()
    shares = {s["name"]: s for s in policy["shares"]}
    unassigned = capacity - sum(s["capacity"].get(name, 0) for s in policy["shares"])
    own = max(1, capacity // 20)
    for team in ("research", "prod-training"):
        if unassigned < 2 * own:
            shares[team]["capacity"][name] -= own
        else:
            unassigned -= own
    policy["cohorts"] = [
        {"name": "org", "capacity": {name: own}},
        {"name": "training", "parent": "org", "capacity": {name: own}},
    ]
    shares["research"]["cohort"] = shares["prod-training"]["cohort"] = "training"
    shares["nlp"]["cohort"] = "org"


def openb_pooled_policy(trace, data: Path | None = None) -> dict:
    """The openb cluster's GPUs (from its node list under ``data``) shared by its QoS classes in
    proportion to demand, lending and borrowing, in-share preemption by priority. The forecast
    benchmark cuts openb with this policy too, so both benchmarks replay the same pool."""
    import csv

    with open((data or data_dir()) / "alibaba-openb-2023" / "openb_node_list_gpu_node.csv", newline="") as f:
        total = sum(int(row["gpu"]) for row in csv.DictReader(f))
    demand = {}
    for code, name in enumerate(trace.share_names):
        mask = trace.share == code
        demand[name] = float((trace.duration[mask] * trace.instance_count[mask]).sum())
    whole = sum(demand.values()) or 1.0
    shares = [
        {"name": name, "capacity": {"gpu": int(total * d / whole)}, "strategy": "LEND_AND_BORROW",
         "in_share_preemption": "lower_priority"}
        for name, d in demand.items()
    ]  # fmt: skip
    return {"name": "openb-pooled", "capacity": {"gpu": total}, "shares": shares}


def reference_loop_seconds() -> float:
    """CPU seconds of a fixed pure-Python loop: this machine's speed, for comparing figures
    (this thread's time only: numpy's BLAS threads may still be busy from its import)."""
    start = time.thread_time()
    total = 0
    for i in range(10_000_000):
        total += i * i
    return round(time.thread_time() - start, 2)


def run_case(case: str) -> dict:
    """Replay one case in this process and return its figures."""
    from scheduling.replay.engine import replay

    policy, trace = load_case(case)
    wall, cpu = time.perf_counter(), time.process_time()
    result = replay(policy, trace)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    summary = result.summary
    return {
        "case": case,
        "jobs": len(trace),
        "shares": len(policy.shares),
        "replay_seconds": round(wall, 2),
        "cpu_seconds": round(cpu, 2),
        "jobs_per_second": round(len(trace) / wall),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
        "utilization": round(summary["utilization"], 3),
        "preemptions": sum(summary["preemptions"].values()),
        "p95_wait_hours": round((summary["wait_seconds"]["p95"] or 0) / 3600, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=[*SYNTHETIC, *VARIANTS, *REAL])
    parser.add_argument("--repeat", type=int, default=1, help="runs per case; the fastest is shown")
    parser.add_argument("--one", help=argparse.SUPPRESS)  # internal: run one case here
    parser.add_argument("--cli", action="store_true", help="time python -m scheduling replay by phase")
    parser.add_argument("--upload", nargs="*", choices=["tiled", "5m"], help="upload to study finished")
    parser.add_argument("--tiles", type=int, default=None, help="--cli: the ITP trace tiled this often (15)")
    parser.add_argument("--cli-phases", nargs=3, help=argparse.SUPPRESS)  # internal
    parser.add_argument("--bare-loop", help=argparse.SUPPRESS)  # internal
    args = parser.parse_args()
    if args.one:
        print(json.dumps(run_case(args.one)))
        return
    sys.path.insert(0, str(ROOT))
    from benchmarks import ingest

    if args.cli_phases:
        print(json.dumps(ingest.cli_phases(*args.cli_phases)))
        return
    if args.bare_loop:
        print(ingest.bare_loop(args.bare_loop))
        return
    if args.tiles:
        ingest.TILES = args.tiles
    if args.cli or args.upload is not None:
        env = {"PYTHONPATH": str(ROOT), "PATH": os.environ.get("PATH", "/usr/bin:/bin"), **_engine_choice()}
        print(f"reference loop: {reference_loop_seconds()} s")
        if args.cli:
            ingest.run_cli(env, args.repeat)
        for case in args.upload or []:
            ingest.run_upload(env, None if case == "tiled" else 5_000_000)
        return
    from scheduling.compiled import stale_reason
    from scheduling.replay import engine_kind

    kind = engine_kind()
    print(f"engine: {kind}" + (f" ({stale_reason()})" if kind == "python" and stale_reason() else ""))
    print(f"reference loop: {reference_loop_seconds()} s of CPU for 10M iterations of `total += i * i`")
    columns = ("case", "jobs", "shares", "replay_seconds", "cpu_seconds", "jobs_per_second", "peak_rss_mb",
               "utilization", "preemptions", "p95_wait_hours")  # fmt: skip
    print(" | ".join(columns))
    for case in args.cases:
        runs = [_run_in_subprocess(case) for _ in range(max(1, args.repeat))]
        if isinstance(runs[0], str):
            print(f"{case}: failed: {runs[0]}")
            continue
        figures = min(runs, key=lambda figures: figures["replay_seconds"])
        print(
            " | ".join(f"{figures[c]:,}" if isinstance(figures[c], int) else str(figures[c]) for c in columns)
        )


def _run_in_subprocess(case: str) -> dict | str:
    """One case's figures from a fresh process, or why it failed."""
    out = subprocess.run(
        [sys.executable, __file__, "--one", case], capture_output=True, text=True, cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", **_engine_choice()},
    )  # fmt: skip
    if out.returncode:
        return out.stderr.strip().splitlines()[-1] if out.stderr else f"exit code {out.returncode}"
    return json.loads(out.stdout)


def _engine_choice() -> dict:
    return {"SCHEDULING_ENGINE": os.environ["SCHEDULING_ENGINE"]} if "SCHEDULING_ENGINE" in os.environ else {}


if __name__ == "__main__":
    main()
