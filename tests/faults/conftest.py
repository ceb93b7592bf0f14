"""Fixtures for the fault tests: media in a temporary folder, real ``celery worker`` processes
(tests/service/test_workers.py's Worker, on a queue of our own), and a Redis server of our own
that a test may stop and start again without disturbing anyone else's."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from planner.celery import app as celery_app
from tests.service.test_workers import Worker


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture(scope="module")
def queue():
    """A queue of our own (one per module: the producer declares a queue once per process)."""
    name = f"planner-faults-{uuid.uuid4().hex[:8]}"
    previous = celery_app.conf.task_routes
    celery_app.conf.task_routes = {"planner.studies.tasks.replay_run": {"queue": name}}
    celery_app.amqp.flush_routes()
    celery_app.amqp.__dict__.pop("router", None)  # the Router keeps the routes it was made with
    yield name
    celery_app.conf.task_routes = previous
    celery_app.amqp.flush_routes()
    celery_app.amqp.__dict__.pop("router", None)  # the Router keeps the routes it was made with


@pytest.fixture
def start_worker(queue, tmp_path, media_root, monkeypatch):
    """``start_worker(name, broker=None)``: a worker on our queue (on ``broker`` when given)."""
    workers: list[Worker] = []

    def start(name: str, broker: str | None = None) -> Worker:
        if broker:
            monkeypatch.setenv("REDIS_URL", broker)
        worker = Worker(name, queue, tmp_path / f"{name}.log", media_root)
        workers.append(worker)
        worker.wait_ready()
        return worker

    yield start
    for worker in workers:
        worker.stop()


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
