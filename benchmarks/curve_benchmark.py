"""Capacity curves and worth searches on real Celery workers: wall time and replays per minute.

    .venv/bin/python benchmarks/curve_benchmark.py [--workers 2] [--skip-curve] [--skip-search]

In its own folder (``var/curve-benchmark/``: SQLite, the filesystem broker, media), it loads the ITP
2021 trace (``PLANNER_DATA_DIR``, default ``../shared/data``) with three policies (the static split
of the ten clusters, full pooling, and lend-and-borrow with borrow limit 100% and in-share
preemption) and the synthetic four-team demo (20,000 jobs, its policy and static split), starts
``--workers`` worker processes (one replay at a time each), then measures:

- a capacity curve of 8 sizes x 3 policies on ITP (the default factors, 0.75x to 2x the 1,560 GPUs);
- the worth search "static split against full pooling" on ITP (every share's p95 wait, then the
  mean wait) and "static split against the demo policy" on the synthetic teams (every share's p95
  wait), one size per worker and step.

Wall time runs from the curve's (search's) creation to its last point's end; it includes the workers
loading the trace for each replay and the broker's polling.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def environment(var_dir: Path) -> dict[str, str]:
    return {
        **os.environ,
        "PLANNER_VAR_DIR": str(var_dir),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "PLANNER_CELERY_EAGER": "0",
        "PLANNER_DATA_DIR": os.environ.get("PLANNER_DATA_DIR", str(ROOT.parent / "shared" / "data")),
        "DJANGO_SETTINGS_MODULE": "planner.settings",
    }


def setup(var_dir: Path) -> dict:
    os.environ.update(environment(var_dir))
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from planner.capacity.models import Policy
    from planner.demo.loader import ITP_TRACE, SYNTHETIC_JOBS, DemoLoader, data_dir, full_pooling
    from planner.traces.models import read_upload
    from scheduling.quota_tables import itp_policy_dict
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    loader = DemoLoader(print)
    itp_base = itp_policy_dict(name="itp-2021", hourly_price=2.5)
    itp_family = loader.policy_family(itp_base, "itp-2021")
    lend = full_pooling(itp_base)
    for share in lend["shares"]:
        share["borrow_limit_percent"] = 100
        share["in_share_preemption"] = "lower_priority"
    itp_lend = Policy.objects.filter(name="itp-2021-lend-100").first() or Policy.create_from_dict(
        lend, pool=itp_family[0].pool, name="itp-2021-lend-100"
    )
    path = data_dir() / ITP_TRACE
    itp_trace = loader.trace("itp-2021", lambda: read_upload(path, format="itp-2021"), format="itp-2021")
    columns = generate(SYNTHETIC_JOBS, seed=1)
    teams = demo_policy_dict(demo_pool_gpus(columns))
    teams["name"] = "teams"
    teams_family = loader.policy_family(teams, "teams")
    teams_trace = loader.trace("synthetic-teams", lambda: columns, format="synthetic")
    by_name = {policy.name: policy for policy in [*itp_family, itp_lend, *teams_family]}
    return {
        "itp_trace": itp_trace,
        "itp_policies": [by_name["itp-2021"], by_name["itp-2021-full-pooling"], itp_lend],
        "teams_trace": teams_trace,
        "teams": by_name["teams"],
        "teams_split": by_name["teams-static-split"],
    }


def start_workers(var_dir: Path, count: int) -> list[subprocess.Popen]:
    celery = str(Path(sys.executable).with_name("celery"))
    workers = []
    for i in range(count):
        log = open(var_dir / f"worker-{i}.log", "w")  # noqa: SIM115 - lives as long as the worker
        command = [
            celery,
            "-A",
            "planner",
            "worker",
            "--concurrency",
            "1",
            "-n",
            f"bench{i}@%h",
            "-l",
            "WARNING",
        ]
        workers.append(subprocess.Popen(command, cwd=ROOT, env=environment(var_dir), stdout=log, stderr=log))
    time.sleep(6)  # let them connect before the first message
    return workers


def wait_for(rows, finished, timeout: float = 1800) -> None:
    start = time.monotonic()
    while not finished():
        if time.monotonic() - start > timeout:
            raise TimeoutError("the replays did not finish in time")
        time.sleep(0.5)


def measure_curve(world: dict) -> None:
    from django.db.models import Max, Min

    from planner.curves.launch import CurveLaunch, start_curve
    from planner.curves.models import CapacityCurve

    curve = start_curve(
        CurveLaunch(trace=world["itp_trace"], policies=world["itp_policies"], name="benchmark: ITP curve")
    )
    curve = CapacityCurve.objects.get(pk=curve.pk)
    wait_for(curve, lambda: curve.finished)
    times = curve.points.aggregate(first=Min("started_at"), last=Max("finished_at"))
    wall = (times["last"] - curve.created_at).total_seconds()
    count = curve.points.count()
    failed = curve.points.filter(status="failed").count()
    print(
        f"| ITP curve, {len(curve.sizes)} sizes x {len(curve.lines)} policies | {count} | {failed} | "
        f"{wall:,.1f} s | {count / wall * 60:,.1f} |"
    )


def measure_search(label: str, trace, policy_a, policy_b, parallel: int, metric: str = "share_p95") -> None:
    from django.db.models import Max

    from planner.curves.figures import search_view
    from planner.curves.launch import SearchLaunch, start_search
    from planner.curves.models import WorthSearch

    search = start_search(
        SearchLaunch(trace=trace, policy_a=policy_a, policy_b=policy_b, parallel=parallel, metric=metric)
    )
    wait_for(search, lambda: WorthSearch.objects.get(pk=search.pk).finished)
    search = WorthSearch.objects.get(pk=search.pk)
    last = search.points.aggregate(last=Max("finished_at"))["last"]
    wall = (last - search.created_at).total_seconds()
    count = search.points.count()
    sentence = search_view(search, money=True).sentence or search.error
    print(f"| {label} | {search.steps} | {count} | {wall:,.1f} s | {count / wall * 60:,.1f} | {sentence} |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--skip-curve", action="store_true")
    parser.add_argument("--skip-search", action="store_true")
    args = parser.parse_args()
    var_dir = ROOT / "var" / "curve-benchmark"
    shutil.rmtree(var_dir / "broker", ignore_errors=True)
    var_dir.mkdir(parents=True, exist_ok=True)
    world = setup(var_dir)
    workers = start_workers(var_dir, args.workers)
    try:
        if not args.skip_curve:
            print("\n| case | replays | failed | wall time | replays / minute |\n|---|---:|---:|---:|---:|")
            measure_curve(world)
        if not args.skip_search:
            print(
                "\n| search | steps | replays | wall time | replays / minute | answer |"
                "\n|---|---:|---:|---:|---:|---|"
            )
            measure_search(
                "ITP: static split vs full pooling", world["itp_trace"], world["itp_policies"][0],
                world["itp_policies"][1], args.workers,
            )  # fmt: skip
            measure_search(
                "ITP: static split vs full pooling, mean wait", world["itp_trace"], world["itp_policies"][0],
                world["itp_policies"][1], args.workers, "mean_wait",
            )  # fmt: skip
            measure_search(
                "synthetic teams: static split vs the demo policy", world["teams_trace"],
                world["teams_split"], world["teams"], args.workers,
            )  # fmt: skip
    finally:
        for worker in workers:
            worker.terminate()
        for worker in workers:
            worker.wait(timeout=30)


if __name__ == "__main__":
    main()
