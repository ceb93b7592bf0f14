"""Load test: a million-job study stored, a real server on 127.0.0.1, 50 concurrent users.

    .venv/bin/python benchmarks/load_test.py                          # 1M jobs, 2 policies, 50 users, 60 s
    .venv/bin/python benchmarks/load_test.py --jobs 20000 --seconds 10 --users 10   # a quick look

Builds (once, in its own folder ``var/load-test-<jobs>/``: SQLite database and media) the synthetic
trace ``scheduling.synthetic.generate(jobs)`` and a study of it under the demo policy and its variants
(full pooling, static split, no preemption: ``--policies`` of them), replayed in this process. Then it
serves the planner with gunicorn (production settings: DEBUG off, a secret key from the environment)
on 127.0.0.1 only, and runs ``--users`` threads for ``--seconds``: each signed in (the finance role)
and cycling through the study comparison page, the finance page, the metrics API of a run and the
job finder (its per-share lists, and a search by user). Prints
p50/p95/p99 latency per endpoint as measured by the server (gunicorn's access log, microseconds) and
by the clients, and the error rate. The target is p95 < 300 ms server time and no errors.
"""

from __future__ import annotations

import argparse
import http.cookiejar
import json
import os
import re
import secrets
import socket
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PASSWORD = "load-test-" + "finance"
HOST = "127.0.0.1"


def environment(var_dir: Path) -> dict[str, str]:
    """Production settings on plain HTTP at 127.0.0.1 (no TLS here: secure cookies and the
    redirect off), SQLite and media in the load test's own folder."""
    key_file = var_dir / "load-secret-key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(60))
    return {
        **os.environ,
        "PLANNER_VAR_DIR": str(var_dir),
        "DATABASE_URL": "",
        "REDIS_URL": "",
        "DEBUG": "0",
        "SECRET_KEY": key_file.read_text(),
        "ALLOWED_HOSTS": HOST,
        "PLANNER_SECURE_COOKIES": "0",
        "PLANNER_SSL_REDIRECT": "0",
        "PLANNER_CELERY_EAGER": "1",
        "LOG_LEVEL": "WARNING",
    }


def build(var_dir: Path, jobs: int, policies: int) -> dict:
    """The study (made once): returns its id, its runs' ids and how long each replay took."""
    os.environ.update(environment(var_dir))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("setup_roles", verbosity=0)
    from planner.capacity.models import InstanceType, Policy, Pool
    from planner.demo.loader import full_pooling, no_preemption, static_split
    from planner.studies.launch import StudyLaunch, launch_study
    from planner.studies.models import Study
    from planner.studies.tasks import replay_run
    from planner.traces.models import Trace
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    user, _ = User.objects.get_or_create(username="load-finance")
    user.set_password(PASSWORD)
    user.save()
    user.groups.add(Group.objects.get(name="finance"))
    name = f"load test: {jobs:,} jobs under {policies} policies"
    study = Study.objects.filter(name=name).first()
    timings: dict[str, float] = {}
    if study is None:
        started = time.perf_counter()
        columns = generate(jobs, seed=1)
        base = demo_policy_dict(demo_pool_gpus(columns))
        base["name"] = f"load-{jobs}"
        for type_name, spec in base["instance_types"].items():
            InstanceType.objects.get_or_create(
                name=type_name,
                defaults={"gpus": spec.get("gpus", 1), "hourly_price": spec.get("hourly_price", 0)},
            )
        pool = Pool.objects.create(name=f"load-{jobs}")
        pool.set_capacity(base["capacity"])
        family = [Policy.create_from_dict(base, pool=pool)]
        for suffix, transform in (
            ("pooled", full_pooling),
            ("static", static_split),
            ("no-preemption", no_preemption),
        ):
            if len(family) < policies:
                family.append(
                    Policy.create_from_dict(transform(base), pool=pool, name=f"{base['name']}-{suffix}")
                )
        trace = Trace.store(columns, name=f"load-{jobs}", format="synthetic")
        print(
            f"trace of {jobs:,} jobs generated and stored in {time.perf_counter() - started:.1f} s",
            flush=True,
        )
        study = launch_study(StudyLaunch(name=name, trace=trace, policies=family), enqueue=False)
    for run in study.runs.exclude(status="succeeded").order_by("id"):
        started = time.perf_counter()
        replay_run.apply(args=[run.pk])
        run.refresh_from_db()
        timings[run.policy_name] = time.perf_counter() - started
        print(f"replayed {run.policy_name}: {run.status} in {timings[run.policy_name]:.1f} s", flush=True)
        if run.status != "succeeded":
            raise SystemExit(f"the replay failed: {run.error}")
    runs = list(study.runs.order_by("id").values_list("id", flat=True))
    return {"study": study.pk, "runs": runs, "replay_seconds": timings}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def serve(var_dir: Path, port: int, workers: int, threads: int, access_log: Path) -> subprocess.Popen:
    command = [
        str(ROOT / ".venv" / "bin" / "gunicorn"),
        "planner.wsgi",
        "-b",
        f"{HOST}:{port}",
        "-w",
        str(workers),
        "--threads",
        str(threads),
        "-k",
        "gthread",
        "--timeout",
        "120",
        "--access-logfile",
        str(access_log),
        "--access-logformat",
        "%(m)s %(U)s?%(q)s %(s)s %(D)s",
        "--log-level",
        "warning",
    ]
    server = subprocess.Popen(command, cwd=ROOT, env=environment(var_dir))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            with socket.create_connection((HOST, port), timeout=0.5):
                return server
        except OSError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("gunicorn did not start")


class User:
    """One signed-in browser: a cookie jar, and the login form filled with its CSRF token."""

    def __init__(self, base: str):
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        page = self.opener.open(f"{base}/login/", timeout=30).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urllib.parse.urlencode(
            {"username": "load-finance", "password": PASSWORD, "csrfmiddlewaretoken": token}
        ).encode()
        request = urllib.request.Request(f"{base}/login/", data=form, headers={"Referer": f"{base}/login/"})
        answer = self.opener.open(request, timeout=30)
        if "/login/" in answer.geturl():
            raise SystemExit("the load test user could not sign in")

    def get(self, path: str) -> tuple[int, float]:
        started = time.perf_counter()
        try:
            with self.opener.open(self.base + path, timeout=60) as answer:
                answer.read()
                status = answer.status
        except urllib.error.HTTPError as error:
            status = error.code
        except OSError:
            status = 0
        return status, time.perf_counter() - started


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low = int(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def run_users(
    base: str, paths: dict[str, str], users: int, seconds: float
) -> dict[str, list[tuple[int, float]]]:
    signed_in = [User(base) for _ in range(users)]
    results: dict[str, list[tuple[int, float]]] = {label: [] for label in paths}
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def browse(user: User, offset: int) -> None:
        labels = list(paths)
        step = offset
        while time.monotonic() < stop_at:
            label = labels[step % len(labels)]
            outcome = user.get(paths[label])
            with lock:
                results[label].append(outcome)
            step += 1

    threads = [threading.Thread(target=browse, args=(user, i)) for i, user in enumerate(signed_in)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def server_times(access_log: Path, paths: dict[str, str]) -> dict[str, list[float]]:
    """Milliseconds per request from gunicorn's access log (%(D)s: microseconds), by endpoint."""
    def key(path: str) -> str:  # path and query: two endpoints may share a path (the job finder)
        split = urllib.parse.urlsplit(path)
        return f"{split.path}?{urllib.parse.unquote_plus(split.query)}"

    by_path = {key(path): label for label, path in paths.items()}
    times: dict[str, list[float]] = {label: [] for label in paths}
    for line in access_log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and key(parts[1]) in by_path:
            times[by_path[key(parts[1])]].append(int(parts[3]) / 1000)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--policies", type=int, default=2, choices=[1, 2, 3, 4])
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, default=3, help="gunicorn worker processes")
    parser.add_argument("--threads", type=int, default=1, help="threads per gunicorn worker")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()

    var_dir = ROOT / "var" / f"load-test-{args.jobs}"
    var_dir.mkdir(parents=True, exist_ok=True)
    built = build(var_dir, args.jobs, args.policies)
    study, runs = built["study"], built["runs"]
    paths = {
        "comparison page": f"/studies/{study}/",
        "finance page": f"/finance/?study={study}&run={runs[0]}",
        "metrics API": f"/api/runs/{runs[-1]}/metrics/",
        "job finder": f"/studies/{study}/jobs/?run={runs[0]}",
        "job finder search": f"/studies/{study}/jobs/?run={runs[0]}&q=research-0&share=research",
    }
    port = free_port()
    access_log = var_dir / f"access-{port}.log"
    server = serve(var_dir, port, args.workers, args.threads, access_log)
    base = f"http://{HOST}:{port}"
    try:
        warm = User(base)
        for path in paths.values():  # each worker process reads the study once before the clock starts
            for _ in range(args.workers * 2):
                warm.get(path)
        access_log.write_text("")
        started = time.perf_counter()
        results = run_users(base, paths, args.users, args.seconds)
        elapsed = time.perf_counter() - started
    finally:
        server.terminate()
        server.wait(timeout=30)
    served = server_times(access_log, paths)

    print()
    print(
        f"{args.jobs:,} jobs, {len(runs)} runs; {args.users} users for {elapsed:.0f} s against gunicorn "
        f"({args.workers} workers x {args.threads} threads) on {HOST}"
    )
    header = f"{'endpoint':<16} {'requests':>8} {'errors':>7} {'server p50':>10} {'p95':>7} {'p99':>7}"
    print(header + f" {'client p50':>10} {'p95':>7} {'p99':>7}   (ms)")
    figures = {
        "jobs": args.jobs,
        "runs": len(runs),
        "users": args.users,
        "seconds": round(elapsed, 1),
        "replay_seconds": built["replay_seconds"],
        "endpoints": {},
    }
    total = errors = 0
    for label in paths:
        outcomes = results[label]
        failed = sum(1 for status, _ in outcomes if status != 200)
        client = [seconds * 1000 for _, seconds in outcomes]
        server_ms = served[label]
        total += len(outcomes)
        errors += failed
        row = {
            "requests": len(outcomes),
            "errors": failed,
            "server_ms": [round(percentile(server_ms, q), 1) for q in (0.5, 0.95, 0.99)],
            "client_ms": [round(percentile(client, q), 1) for q in (0.5, 0.95, 0.99)],
        }
        figures["endpoints"][label] = row
        print(
            f"{label:<16} {len(outcomes):>8} {failed:>7} "
            + " ".join(f"{v:>7.0f}" for v in row["server_ms"])
            + "    "
            + " ".join(f"{v:>7.0f}" for v in row["client_ms"])
        )
    everything = [t for times in served.values() for t in times]
    figures["all"] = {
        "requests": total,
        "error_rate": errors / total if total else float("nan"),
        "requests_per_second": round(total / elapsed, 1),
        "server_ms": [round(percentile(everything, q), 1) for q in (0.5, 0.95, 0.99)],
        "server_mean_ms": round(statistics.fmean(everything), 1) if everything else None,
    }
    print(
        f"all: {total} requests ({total / elapsed:.1f}/s), error rate {figures['all']['error_rate']:.2%}, "
        f"server p50/p95/p99 {'/'.join(f'{v:.0f}' for v in figures['all']['server_ms'])} ms"
    )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
