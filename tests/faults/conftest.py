"""Fixtures for the fault tests: media in a temporary folder, real ``celery worker`` processes
(tests/service/test_workers.py's Worker, on a queue of our own), and a Redis server of our own
that a test may stop and start again without disturbing anyone else's."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

from tests import fixtures
from tests.service.test_workers import Worker, own_queue, worker_starter

media_root = fixtures.media_root  # a fixture (tests/fixtures.py)


@pytest.fixture(scope="module")
def queue():
    """A queue of our own (one per module: the producer declares a queue once per process)."""
    with own_queue("planner.studies.tasks.replay_run", "planner-faults") as name:
        yield name


@pytest.fixture
def start_worker(queue, tmp_path, media_root, monkeypatch):
    """``start_worker(name, broker=None)``: a worker on our queue (on ``broker`` when given)."""
    with worker_starter(queue, tmp_path, media_root) as start_on_queue:

        def start(name: str, broker: str | None = None) -> Worker:
            if broker:
                monkeypatch.setenv("REDIS_URL", broker)
            return start_on_queue(name)

        yield start


class RedisServer:
    """A redis-server on a free port of 127.0.0.1, persisting to an append-only file (as a
    production Redis does), that can be stopped (SIGTERM: a clean shutdown) and started again."""

    def __init__(self, folder: Path):
        self.folder = folder
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        command = [
            shutil.which("redis-server"), "--bind", "127.0.0.1", "--port", str(self.port),
            "--dir", str(self.folder),
            "--appendonly", "yes", "--appendfsync", "always", "--save", "", "--logfile", "redis.log",
        ]  # fmt: skip
        self.process = subprocess.Popen(command, cwd=self.folder)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5) as conn:
                    conn.sendall(b"PING\r\n")
                    if conn.recv(16).startswith(b"+PONG"):
                        return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("redis-server did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(timeout=20)

    def forget(self) -> None:
        """Delete what a stopped server persisted: it starts again empty (a Redis without persistence)."""
        for path in self.folder.glob("appendonly*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()


@pytest.fixture
def redis_server(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server is not installed")
    server = RedisServer(tmp_path)
    server.start()
    yield server
    server.stop()
