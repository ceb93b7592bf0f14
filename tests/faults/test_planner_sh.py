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
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
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
