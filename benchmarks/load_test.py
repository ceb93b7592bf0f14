"""Load test: a real server on 127.0.0.1 and concurrent signed-in users.

    .venv/bin/python benchmarks/load_test.py                          # 1M jobs, 2 policies, 50 users, 60 s
    .venv/bin/python benchmarks/load_test.py --jobs 20000 --seconds 10 --users 10   # a quick look
    .venv/bin/python benchmarks/load_test.py --demo --users 20 50 \
        --database-url postgres://postgres@127.0.0.1:5432/planner_NAME --redis-url redis://127.0.0.1:6379/N

``--demo`` is the planner as production serves it: the database and Redis given (``manage.py
load_demo`` run in them, idempotent), a Celery worker, and gunicorn with ``planner/gunicorn_conf.py``
(its slow-client workers, processes and threads); the pages are the ITP 2021 demo study's, and a
forecast of "the demo pool now" (made once by the worker) adds the forecast page and its jobs API.
Without ``--demo``:

Builds (once, in its own folder ``var/load-test-<jobs>/``: SQLite database and media) the synthetic
trace ``scheduling.synthetic.generate(jobs)`` and a study of it under the demo policy and its variants
(full pooling, static split, no preemption: ``--policies`` of them), replayed in this process. Then it
serves the planner with gunicorn (production settings: DEBUG off, a secret key from the environment)
on 127.0.0.1 only, and runs ``--users`` threads for ``--seconds``: each signed in (the finance role)
and cycling through the study comparison page, the finance page, the metrics API of a run and the
job finder (its per-share lists, and a search by user). Prints
p50/p95/p99 latency per endpoint as measured by the server (gunicorn's access log, microseconds) and
by the clients, and the error rate, for each ``--users`` count in turn. The target is p95 < 300 ms
server time and no errors (issue 25: under 1 s at 20 users, with the forecasts).
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


def environment(var_dir: Path, database_url: str = "", redis_url: str = "") -> dict[str, str]:
    """Production settings on plain HTTP at 127.0.0.1 (no TLS here: secure cookies and the
    redirect off), media in the load test's own folder; SQLite and eager tasks unless a database
    and Redis are given (then a worker computes)."""
    key_file = var_dir / "load-secret-key"
    if not key_file.exists():
        key_file.write_text(secrets.token_urlsafe(60))
    return {
        **os.environ,
        "PLANNER_VAR_DIR": str(var_dir),
        "DATABASE_URL": database_url,
        "REDIS_URL": redis_url,
        "DEBUG": "0",
        "SECRET_KEY": key_file.read_text(),
        "ALLOWED_HOSTS": HOST,
        "PLANNER_SECURE_COOKIES": "0",
        "PLANNER_SSL_REDIRECT": "0",
        "PLANNER_CELERY_EAGER": "0" if redis_url else "1",
        "LOG_LEVEL": "WARNING",
    }


def setup_django(env: dict[str, str]) -> None:
    os.environ.update(env)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def finance_user() -> None:
    from django.contrib.auth.models import Group, User

    user, _ = User.objects.get_or_create(username="load-finance")
    user.set_password(PASSWORD)
    user.save()
    user.groups.add(Group.objects.get(name="finance"))


def build(var_dir: Path, jobs: int, policies: int) -> dict:
    """The study (made once): returns its id, its runs' ids and how long each replay took."""
    setup_django(environment(var_dir))
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

    finance_user()
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


DEMO_STUDY = "ITP 2021: ten clusters, split or pooled?"


def build_demo(env: dict[str, str], samples: int) -> dict:
    """The demo (``load_demo``, idempotent) and a finished forecast of the demo pool, computed by
    the worker: returns the ITP study's id, its runs' ids and the forecast's id."""
    setup_django(env)
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    call_command("setup_roles", verbosity=0)
    call_command("load_demo", verbosity=0)
    finance_user()
    from planner.forecasts.demo import demo_pool
    from planner.forecasts.launch import ForecastLaunch, start_forecast
    from planner.forecasts.models import Forecast, Source
    from planner.studies.models import Study

    study = Study.objects.get(name=DEMO_STUDY)
    forecast = Forecast.objects.filter(source=Source.DEMO, status="succeeded").order_by("-pk").first()
    if forecast is None:
        pool = demo_pool()
        forecast = start_forecast(
            ForecastLaunch(
                snapshot=pool.snapshot, snapshot_format="planner", policy=pool.policy,
                history=pool.history, samples=samples, seed=1, name="load test: the demo pool now",
                source=Source.DEMO,
            )
        )  # fmt: skip
        print(f"forecast {forecast.pk} of {forecast.jobs:,} jobs sent to the worker", flush=True)
    deadline = time.monotonic() + 900
    while forecast.status not in ("succeeded", "failed") and time.monotonic() < deadline:
        time.sleep(2)
        forecast.refresh_from_db()
    if forecast.status != "succeeded":
        raise SystemExit(f"the demo forecast did not succeed: {forecast.status} {forecast.error}")
    runs = list(study.runs.order_by("id").values_list("id", flat=True))
    return {"study": study.pk, "runs": runs, "forecast": forecast.pk, "replay_seconds": {}}


def start_worker(env: dict[str, str], log: Path) -> subprocess.Popen:
    command = [
        str(ROOT / ".venv" / "bin" / "celery"), "-A", "planner", "worker", "-c", "1", "-l", "WARNING",
        "--without-gossip", "--without-mingle", "-n", f"load-test-{os.getpid()}@%h",
    ]  # fmt: skip
    with open(log, "ab") as out:
        return subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def serve(
    env: dict[str, str], port: int, workers: int | None, threads: int | None, access_log: Path, conf: bool
) -> subprocess.Popen:
    """gunicorn: with ``conf``, planner/gunicorn_conf.py (its worker class, processes and threads
    unless given); else plain gthread workers."""
    command = [str(ROOT / ".venv" / "bin" / "gunicorn"), "planner.wsgi", "-b", f"{HOST}:{port}"]
    if conf:
        command += ["-c", str(ROOT / "planner" / "gunicorn_conf.py")]
        command += (["-w", str(workers)] if workers else []) + (
            ["--threads", str(threads)] if threads else []
        )
    else:
        command += [
            "-k",
            "gthread",
            "--timeout",
            "120",
            "-w",
            str(workers or 3),
            "--threads",
            str(threads or 1),
        ]
    command += [
        "--access-logfile", str(access_log), "--access-logformat", "%(m)s %(U)s?%(q)s %(s)s %(D)s",
        "--log-level", "warning",
    ]  # fmt: skip
    server = subprocess.Popen(command, cwd=ROOT, env=env)
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
    signed_in: list[User], paths: dict[str, str], seconds: float
) -> dict[str, list[tuple[int, float]]]:
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


def report(label_paths: dict[str, str], results, served, users: int, elapsed: float) -> dict:
    """Print the table of one run of ``users`` clients and return its figures."""
    print(f"\n{users} users for {elapsed:.0f} s")
    header = f"{'endpoint':<22} {'requests':>8} {'errors':>7} {'server p50':>10} {'p95':>7} {'p99':>7}"
    print(header + f" {'client p50':>10} {'p95':>7} {'p99':>7}   (ms)")
    figures: dict = {"users": users, "seconds": round(elapsed, 1), "endpoints": {}}
    total = errors = 0
    for label in label_paths:
        outcomes = results[label]
        failed = sum(1 for status, _ in outcomes if status != 200)
        client = [seconds * 1000 for _, seconds in outcomes]
        total += len(outcomes)
        errors += failed
        row = {
            "requests": len(outcomes),
            "errors": failed,
            "statuses": sorted({status for status, _ in outcomes if status != 200}),
            "server_ms": [round(percentile(served[label], q), 1) for q in (0.5, 0.95, 0.99)],
            "client_ms": [round(percentile(client, q), 1) for q in (0.5, 0.95, 0.99)],
        }
        figures["endpoints"][label] = row
        print(
            f"{label:<22} {len(outcomes):>8} {failed:>7} "
            + " ".join(f"{v:>7.0f}" for v in row["server_ms"])
            + "    "
            + " ".join(f"{v:>7.0f}" for v in row["client_ms"])
            + (f"   statuses {row['statuses']}" if failed else "")
        )
    everything = [t for times in served.values() for t in times]
    figures["all"] = {
        "requests": total,
        "errors": errors,
        "error_rate": errors / total if total else float("nan"),
        "requests_per_second": round(total / elapsed, 1),
        "server_ms": [round(percentile(everything, q), 1) for q in (0.5, 0.95, 0.99)],
        "server_mean_ms": round(statistics.fmean(everything), 1) if everything else None,
    }
    print(
        f"all: {total} requests ({total / elapsed:.1f}/s), error rate {figures['all']['error_rate']:.2%}, "
        f"server p50/p95/p99 {'/'.join(f'{v:.0f}' for v in figures['all']['server_ms'])} ms"
    )
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--demo", action="store_true", help="the demo, PostgreSQL, Redis, a worker")
    parser.add_argument("--database-url", default="", help="with --demo: the database to load and serve")
    parser.add_argument("--redis-url", default="", help="with --demo: the broker and the shared cache")
    parser.add_argument("--forecast-samples", type=int, default=100, help="with --demo: the forecast's")
    parser.add_argument("--jobs", type=int, default=1_000_000)
    parser.add_argument("--policies", type=int, default=2, choices=[1, 2, 3, 4])
    parser.add_argument("--users", type=int, nargs="+", default=[50], help="one run per count, in turn")
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--workers", type=int, help="gunicorn worker processes (3; --demo: the conf's)")
    parser.add_argument("--threads", type=int, help="threads per gunicorn worker (1; --demo: the conf's)")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    if args.demo and not (args.database_url and args.redis_url):
        parser.error("--demo needs --database-url and --redis-url (production's PostgreSQL and Redis)")

    var_dir = ROOT / "var" / ("load-test-demo" if args.demo else f"load-test-{args.jobs}")
    var_dir.mkdir(parents=True, exist_ok=True)
    env = environment(var_dir, args.database_url, args.redis_url) if args.demo else environment(var_dir)
    worker = start_worker(env, var_dir / "worker.log") if args.demo else None
    try:
        built = (
            build_demo(env, args.forecast_samples) if args.demo else build(var_dir, args.jobs, args.policies)
        )
        figures = measure(args, env, var_dir, built)
    finally:
        if worker is not None:
            worker.terminate()
            worker.wait(timeout=60)
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


def measure(args, env: dict[str, str], var_dir: Path, built: dict) -> dict:
    study, runs = built["study"], built["runs"]
    paths = {
        "comparison page": f"/studies/{study}/",
        "finance page": f"/finance/?study={study}&run={runs[0]}",
        "metrics API": f"/api/runs/{runs[-1]}/metrics/",
        "job finder": f"/studies/{study}/jobs/?run={runs[0]}",
        "job finder search": f"/studies/{study}/jobs/?run={runs[0]}"
        + ("&q=1&share=cluster07" if args.demo else "&q=research-0&share=research"),
    }
    if built.get("forecast"):
        paths["forecast page"] = f"/forecasts/{built['forecast']}/"
        paths["forecast jobs API"] = f"/api/forecasts/{built['forecast']}/jobs/?limit=100"
    port = free_port()
    access_log = var_dir / f"access-{port}.log"
    server = serve(env, port, args.workers, args.threads, access_log, conf=args.demo)
    base = f"http://{HOST}:{port}"
    figures: dict = {"jobs": None if args.demo else args.jobs, "runs": len(runs), "paths": paths,
                     "replay_seconds": built["replay_seconds"], "by_users": []}  # fmt: skip
    try:
        warm = User(base)
        for path in paths.values():  # each worker process reads the study once before the clock starts
            for _ in range((args.workers or 3) * 2):
                warm.get(path)
        for users in args.users:
            signed_in = [User(base) for _ in range(users)]  # before the clock: sign-ins hash passwords
            access_log.write_text("")
            started = time.perf_counter()
            results = run_users(signed_in, paths, args.seconds)
            elapsed = time.perf_counter() - started
            time.sleep(1)  # the last lines of the access log
            figures["by_users"].append(
                report(paths, results, server_times(access_log, paths), users, elapsed)
            )
    finally:
        server.terminate()
        server.wait(timeout=30)
    return figures


if __name__ == "__main__":
    main()
