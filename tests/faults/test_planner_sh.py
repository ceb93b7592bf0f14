"""``./planner.sh`` as a new user runs it (in a folder of its own, without the demo data): it serves
with DEBUG off (no traceback or debug page to whoever uses it; static files by whitenoise), and
when its worker is killed it starts a new one, says so in the terminal, and the web stays up."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def get(url: str) -> tuple[int, str]:
    # A generous limit: these tests are about what is served, not how fast, and CI runs them beside
    # two other lanes on two cores.
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, response.read().decode("utf-8", "replace")
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode("utf-8", "replace")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for(condition, seconds: float, what: str) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture
def planner_sh(tmp_path):
    port = free_port()
    env = {
        key: value
        for key, value in os.environ.items()
        if key
        not in ("DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "PLANNER_BROKER_DIR", "ALLOWED_HOSTS")
    }
    env.update(PLANNER_VAR_DIR=str(tmp_path / "var"), PLANNER_PORT=str(port), PLANNER_DEMO="0")
    process = subprocess.Popen(
        ["./planner.sh"], cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True,
    )  # fmt: skip
    output: list[str] = []
    threading.Thread(target=lambda: output.extend(process.stdout), daemon=True).start()
    try:
        wait_for(lambda: any("The planner is at" in line for line in output) or process.poll() is not None,
                 600, "planner.sh to serve")  # fmt: skip
        assert process.poll() is None, "".join(output)
        yield f"http://127.0.0.1:{port}", tmp_path / "var", process, output
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)


def test_planner_sh_serves_without_debug_and_restarts_a_dead_worker(planner_sh):
    url, var, process, output = planner_sh
    assert get(f"{url}/login/")[0] == 200
    assert get(f"{url}/static/css/planner.css")[0] == 200  # whitenoise, with DEBUG off
    status, body = get(f"{url}/no-such-page/")
    assert status == 404
    assert "Traceback" not in body and "URLconf" not in body  # no debug page

    first = int((var / "worker.pid").read_text())
    assert alive(first)
    os.kill(first, signal.SIGKILL)
    wait_for(
        lambda: any("the worker stopped (exit 137)" in line for line in output), 30, "the restart message"
    )
    wait_for(lambda: int((var / "worker.pid").read_text()) != first, 30, "a new worker")
    second = int((var / "worker.pid").read_text())
    assert alive(second)
    assert get(f"{url}/login/")[0] == 200  # the web stayed up
    assert process.poll() is None

    os.killpg(process.pid, signal.SIGINT)  # Ctrl-C stops both
    process.wait(30)
    wait_for(lambda: not alive(second), 30, "the worker to stop")


def running(pid: int) -> bool:
    """Alive and not a zombie (an orphan's zombie waits for an init that may never reap it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])


def test_a_killed_supervisor_takes_its_worker_with_it(planner_sh):
    url, var, process, output = planner_sh
    worker = int((var / "worker.pid").read_text())
    supervisor = parent_of(worker)
    assert supervisor != process.pid  # the supervisor is the script's child, the worker's parent
    os.kill(supervisor, signal.SIGKILL)
    wait_for(lambda: not running(worker), 60, "the orphaned worker to stop")
    assert int((var / "worker.pid").read_text()) == worker  # and nobody started another
    assert get(f"{url}/login/")[0] == 200  # the web server is not the supervisor's


def test_a_killed_script_leaves_no_server_or_worker(planner_sh):
    url, var, process, output = planner_sh
    worker = int((var / "worker.pid").read_text())
    servers = [int(pid) for pid in subprocess.run(["pgrep", "-P", str(process.pid), "-f", "gunicorn"],
                                                  capture_output=True, text=True).stdout.split()]  # fmt: skip
    assert servers, "gunicorn runs as the script's child"
    os.kill(process.pid, signal.SIGKILL)
    process.wait(10)  # reaped, as the user's shell would
    wait_for(lambda: not running(worker), 60, "the worker to stop")
    wait_for(lambda: not any(running(pid) for pid in servers), 60, "the web server to stop")
