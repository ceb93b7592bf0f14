"""Ingest and output benchmarks (called by replay_benchmark.py ``--cli`` and ``--upload``).

- ``cli``: the 1,040,265-job trace (the ITP 2021 trace tiled 15 times in time, clusters as shares,
  all LEND_AND_BORROW 200%; synthetic jobs of the same count when ../shared is absent) as a planner
  CSV. In one process, each phase of ``python -m scheduling replay`` timed with the peak RSS after
  it (read, replay, write); then the command itself end to end, and the bare loop of issue 15 (the
  CSV through ``csv.reader``, two heap events pushed and popped per job) on the same file.
- ``upload``: a throwaway planner (its own var/ folder: SQLite, filesystem broker, media) served by
  gunicorn with one Celery worker (solo pool); the trace uploaded with curl through the API, timed
  to its 202, to ready (the parse on the worker) and a one-policy study on it to finished; peak RSS
  of the web and worker processes.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import resource
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# ../shared beside the checkout (or beside the folder of worktrees it sits in)
ITP = next(
    (
        folder / "shared" / "data" / "itp-2021" / "itp_all_clusters.csv"
        for folder in (ROOT.parent, ROOT.parent.parent)
        if (folder / "shared" / "data").exists()
    ),
    ROOT.parent / "shared" / "data" / "itp-2021" / "itp_all_clusters.csv",
)
TILES = 15


def tiled_trace(jobs: int | None = None):
    """(policy dict, Trace): the tiled ITP trace, or synthetic jobs (``jobs``, default the tiled
    trace's count) on the demo policy when ../shared is absent or ``jobs`` is given."""
    import numpy as np

    from scheduling.model import Strategy
    from scheduling.quota_tables import itp_policy_dict
    from scheduling.trace import Trace

    if jobs is None and ITP.exists():
        from scheduling.traces import read_trace

        one = read_trace(ITP, format="itp-2021")
        span = float(one.submit_time.max() - one.submit_time.min()) + 3600
        trace = Trace(
            job_id=[f"{job}-{copy}" for copy in range(TILES) for job in one.job_id],
            submit_time=np.concatenate([one.submit_time + copy * span for copy in range(TILES)]),
            share=np.tile(one.share, TILES),
            share_names=one.share_names,
            priority=np.tile(one.priority, TILES),
            instance_type=np.tile(one.instance_type, TILES),
            type_names=one.type_names,
            instance_count=np.tile(one.instance_count, TILES),
            duration=np.tile(one.duration, TILES),
            checkpoint_interval=np.tile(one.checkpoint_interval, TILES),
            preemption_retries=np.tile(one.preemption_retries, TILES),
        )
        return itp_policy_dict(Strategy.LEND_AND_BORROW, borrow_limit_percent=200), trace
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    trace = generate(jobs or 1_040_265, seed=1)
    return demo_policy_dict(demo_pool_gpus(trace)), trace


def write_case(folder: Path, jobs: int | None = None) -> tuple[Path, Path, str]:
    """The trace as a planner CSV and its policy as JSON in ``folder``; and what the trace is."""
    from scheduling.traces.planner import write_planner_csv

    policy, trace = tiled_trace(jobs)
    kind = f"ITP 2021 x{TILES}" if jobs is None and ITP.exists() else "synthetic"
    csv_path, policy_path = folder / f"trace-{len(trace)}.csv", folder / "policy.json"
    write_planner_csv(trace, csv_path)
    policy_path.write_text(json.dumps(policy))
    return csv_path, policy_path, f"{kind}, {len(trace):,} jobs"


def _status_mb(key: str) -> int:
    """VmHWM (peak) or VmRSS (now) of this process, in MB. Not ru_maxrss: Linux carries that over
    from the parent through fork and exec, so a child would report its parent's peak."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def _phase_start() -> int:
    """Reset the peak to the current RSS (writing 5 to clear_refs); the RSS at the phase's start."""
    with contextlib.suppress(OSError):
        Path("/proc/self/clear_refs").write_text("5")
    return _status_mb("VmRSS")


def cli_phases(trace_path: str, policy_path: str, out_path: str) -> dict:
    """Each phase of the command line in this process: seconds, jobs/s and peak RSS after it."""
    from scheduling.cli import one_shot_process, read_policy
    from scheduling.replay.engine import replay
    from scheduling.traces import read_trace

    figures: dict = {}
    one_shot_process()  # as the command does
    policy = read_policy(policy_path)
    before = _phase_start()
    figures["start_mb"] = before
    wall = time.perf_counter()
    trace = read_trace(trace_path)
    figures["read"] = (time.perf_counter() - wall, _status_mb("VmHWM"), _status_mb("VmHWM") - before)
    before = _phase_start()
    wall = time.perf_counter()
    result = replay(policy, trace)
    figures["replay"] = (time.perf_counter() - wall, _status_mb("VmHWM"), _status_mb("VmHWM") - before)
    before = _phase_start()
    wall = time.perf_counter()
    result.write_json(out_path, include_jobs=True, include_events=False)
    figures["write"] = (time.perf_counter() - wall, _status_mb("VmHWM"), _status_mb("VmHWM") - before)
    figures["jobs"] = len(trace)
    figures["file_mb"] = round(os.path.getsize(trace_path) / 2**20)
    figures["result_mb"] = round(os.path.getsize(out_path) / 2**20)
    return figures


def bare_loop(trace_path: str) -> float:
    """Issue 15's yardstick: csv.reader over the file and two heap events per job, nothing else."""
    import csv
    import heapq

    wall = time.perf_counter()
    events: list = []
    with open(trace_path, newline="") as stream:
        rows = csv.reader(stream)
        header = next(rows)
        submit, duration = header.index("submit_time"), header.index("duration")
        for number, row in enumerate(rows):
            start = float(row[submit])
            heapq.heappush(events, (start, number))
            heapq.heappush(events, (start + float(row[duration]), number))
    while events:
        heapq.heappop(events)
    return time.perf_counter() - wall


def run_cli(env: dict, repeat: int = 1) -> None:
    """The phases once, then the command and the bare loop side by side ``repeat`` times (the
    machine's speed varies from minute to minute: each pair is run back to back)."""
    with tempfile.TemporaryDirectory(prefix="planner-cli-bench-") as folder:
        trace, policy, what = write_case(Path(folder))
        out = Path(folder) / "result.json"
        print(f"command line on {what} ({trace.stat().st_size / 2**20:,.0f} MB CSV)")
        phases = json.loads(_python(["--cli-phases", str(trace), str(policy), str(out)], env))
        pairs = []
        for _ in range(max(1, repeat)):
            bare = float(_python(["--bare-loop", str(trace)], env))
            wall = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "scheduling", "replay", "--policy", str(policy), "--trace", str(trace),
                 "--out", str(out)], check=True, cwd=ROOT, env=env,
            )  # fmt: skip
            pairs.append((time.perf_counter() - wall, bare))
    jobs = phases["jobs"]
    print("phase | seconds | jobs/s | peak RSS in the phase | peak above the phase's start")
    for phase in ("read", "replay", "write"):
        seconds, peak, above = phases[phase]
        print(f"{phase} | {seconds:.2f} | {jobs / seconds:,.0f} | {peak:,} MB | {above:,} MB")
    sizes = f"CSV {phases['file_mb']} MB; RESULT.json {phases['result_mb']} MB"
    print(f"(after imports: {phases['start_mb']} MB; {sizes})")
    print("python -m scheduling replay end to end | bare loop (csv.reader + two heap events per job) | ratio")
    for command, bare in pairs:
        print(f"{command:.2f} s | {bare:.2f} s | {command / bare:.2f}x")
    if len(pairs) > 1:
        ratios = sorted(command / bare for command, bare in pairs)
        print(f"ratio: median {ratios[len(ratios) // 2]:.2f}x, worst {ratios[-1]:.2f}x of {len(pairs)} pairs")


def _python(args: list[str], env: dict) -> str:
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "replay_benchmark.py"), *args],
        capture_output=True, text=True, cwd=ROOT, env=env, check=False,
    )  # fmt: skip
    if out.returncode:
        raise SystemExit(out.stderr)
    return out.stdout.strip().splitlines()[-1]


# ---------------------------------------------------------------------------------------
# Upload to study finished, through the API, with one worker


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _peak_rss_mb(pid: int) -> int:
    """VmHWM of a process (and, for gunicorn's master, the largest of its workers)."""
    best = 0
    pids = [pid]
    children = Path(f"/proc/{pid}/task/{pid}/children")
    if children.exists():
        pids += [int(p) for p in children.read_text().split()]
    for one in pids:
        try:
            for line in Path(f"/proc/{one}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    best = max(best, int(line.split()[1]) // 1024)
        except OSError:
            pass
    return best


SETUP = """
from django.contrib.auth.models import Group, User
from rest_framework.authtoken.models import Token
from planner.capacity.models import InstanceType, Policy, Pool
import json, sys
user = User.objects.create_user("bench")
user.groups.add(Group.objects.get(name="admin"))
data = json.load(open(sys.argv[-1]))
for name in data["capacity"]:
    spec = data.get("instance_types", {}).get(name, {})
    InstanceType.objects.get_or_create(
        name=name, defaults={"gpus": spec.get("gpus", 1), "hourly_price": spec.get("hourly_price", 0)}
    )
pool = Pool.objects.create(name="bench")
pool.set_capacity(data["capacity"])
policy = Policy.create_from_dict(data, pool=pool)
print(json.dumps({"token": Token.objects.create(user=user).key, "policy": policy.pk}))
"""


def _api(base: str, token: str, path: str, body: dict | None = None) -> dict:
    import urllib.request

    request = urllib.request.Request(
        base + path,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Token {token}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=60) as answer:
        return json.loads(answer.read())


def _send(base: str, token: str, trace: Path, name: str, *, form: bool) -> str:
    """POST a trace file: as the body itself (fields in the query string; streamed from the file
    in 1 MB writes, as a client should), or as a multipart form with curl. The answer's body."""
    if form:
        return subprocess.run(
            ["curl", "-s", "-H", f"Authorization: Token {token}", "-F", f"name={name}",
             "-F", f"file=@{trace}", f"{base}/api/traces/"], capture_output=True, text=True, check=True,
        ).stdout  # fmt: skip
    host, port = base.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=600, blocksize=2**20)
    headers = {"Authorization": f"Token {token}", "Content-Type": "text/csv",
               "Content-Length": str(trace.stat().st_size)}  # fmt: skip
    with trace.open("rb") as body:
        connection.request("POST", f"/api/traces/?name={name}", body=body, headers=headers)
    answer = connection.getresponse().read().decode()
    connection.close()
    return answer


def run_upload(env: dict, jobs: int | None) -> None:
    folder = Path(tempfile.mkdtemp(prefix="planner-upload-bench-"))
    started: list[subprocess.Popen] = []
    try:
        trace, policy, what = write_case(folder, jobs)
        size = trace.stat().st_size
        print(f"upload to study finished, one worker, {what} ({size / 2**20:,.0f} MB CSV)")
        var = folder / "var"
        env = {**env, "PLANNER_VAR_DIR": str(var), "DEBUG": "1", "PLANNER_MAX_UPLOAD_BYTES": str(2**31),
               "PLANNER_MAX_TRACE_ROWS": "10000000"}  # fmt: skip
        manage = [sys.executable, str(ROOT / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], check=True, cwd=ROOT, env=env)
        subprocess.run([*manage, "setup_roles"], check=True, cwd=ROOT, env=env, capture_output=True)
        setup = subprocess.run(
            [*manage, "shell", "-c", SETUP.replace("sys.argv[-1]", repr(str(policy)))],
            check=True, cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        ids = json.loads(setup.stdout.strip().splitlines()[-1])
        port = _free_port()
        base = f"http://127.0.0.1:{port}"
        web = subprocess.Popen(
            [sys.executable, "-m", "gunicorn", "planner.wsgi", "-w", "1", "-b", f"127.0.0.1:{port}",
             "--timeout", "600"], cwd=ROOT, env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(web)
        worker = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "planner", "worker", "--pool", "solo", "-l", "WARNING"],
            cwd=ROOT, env=env, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        started.append(worker)
        for _ in range(100):
            try:
                _api(base, ids["token"], "/api/me/")
                break
            except OSError:
                time.sleep(0.2)
        # The case file was just written: its pages, still to be flushed, would slow the upload's
        # own writes to disk (the kernel throttles a writer once enough is dirty).
        os.sync()
        wall = time.perf_counter()
        answer = _send(base, ids["token"], trace, "bench", form=False)
        accepted = time.perf_counter() - wall
        body = json.loads(answer)
        trace_id = body["id"]
        while body["status"] == "parsing":
            time.sleep(0.25)
            body = _api(base, ids["token"], f"/api/traces/{trace_id}/")
        ready = time.perf_counter() - wall
        if body["status"] != "ready":
            raise SystemExit(f"the upload failed: {body['error']}")
        worker_after_parse = _peak_rss_mb(worker.pid)
        study = _api(base, ids["token"], "/api/studies/",
                     {"name": "bench", "trace": trace_id, "policies": [ids["policy"]]})  # fmt: skip
        while study["status"] not in ("succeeded", "failed"):
            time.sleep(0.5)
            study = _api(base, ids["token"], f"/api/studies/{study['id']}/")
        finished = time.perf_counter() - wall
        jobs_read = body["job_count"]
        parse = body["parse"]
        from datetime import datetime

        parse_seconds = (
            datetime.fromisoformat(parse["finished_at"]) - datetime.fromisoformat(parse["started_at"])
        ).total_seconds()
        print("step | seconds | figures")
        print(f"upload answered 202 | {accepted:.2f} | web process peak {_peak_rss_mb(web.pid):,} MB")
        print(f"parsed on the worker (claim to ready) | {parse_seconds:.2f} | "
              f"{jobs_read / parse_seconds:,.0f} jobs/s (read, check, summary, .npz), "
              f"worker peak {worker_after_parse:,} MB")  # fmt: skip
        print(f"upload to ready | {ready:.2f} |")
        peak = _peak_rss_mb(worker.pid)
        print(f"study {study['status']} (one run) | {finished - ready:.2f} | worker peak {peak:,} MB")
        print(f"upload to study finished | {finished:.2f} |")
        # the same file as a multipart form, for comparison (the study is done: nothing else runs)
        os.sync()
        wall = time.perf_counter()
        _send(base, ids["token"], trace, "bench-form", form=True)
        print(f"the same upload as a multipart form, answered 202 | {time.perf_counter() - wall:.2f} |")
    finally:
        for process in started:
            process.terminate()
        for process in started:
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)
