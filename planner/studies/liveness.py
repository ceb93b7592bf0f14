"""Is the process computing an attempt still alive? Asked by the reaper (and by a claim) once the
attempt's heartbeat is stale, so that a live attempt is never taken for dead.

A heartbeat can go silent while its worker lives: one compiled pass of the replay longer than the
stale limit calls nothing back. So every claim records the process that computes the attempt
(``WorkerProcess``), and a stale attempt is only sent again once that process is provably gone:

- on the same host (same hostname and PID namespace), from ``/proc``: the pid exists, is not a
  zombie, and started when the recorded process started (a reused pid is another process);
- on another host, by asking its Celery worker which tasks it is running
  (``inspect().active()``, with a short timeout): the attempt's task on the recorded pid is alive,
  anything else (no answer included) is dead. A broker that cannot be reached gives no verdict: the
  row is left for the next reaper pass rather than started twice.

A row with no recorded process (claimed before this was recorded, or by hand) is judged by its
heartbeat alone, as before.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import asdict, dataclass
from typing import Any

from django.conf import settings

from planner.celery import app

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class WorkerProcess:
    """The process computing an attempt: where it runs and how to recognise it."""

    host: str  # the machine's hostname
    namespace: str  # its PID namespace ("pid:[4026531836]"): containers may share a hostname
    pid: int
    started: str  # the process's start time in clock ticks since boot ("" where /proc is absent)
    node: str = ""  # the Celery worker's node name ("celery@host"), to ask it on another host
    task: str = ""  # the Celery task id of the attempt

    @classmethod
    def current(cls, node: str = "", task: str = "") -> WorkerProcess:
        pid = os.getpid()
        return cls(socket.gethostname(), pid_namespace(), pid, start_time(pid) or "", node, task)

    @classmethod
    def from_record(cls, record: Any) -> WorkerProcess | None:
        """The process stored on a row (``worker_process``), or None when none is stored."""
        if not isinstance(record, dict):
            return None
        try:
            return cls(
                host=str(record["host"]), namespace=str(record.get("namespace", "")), pid=int(record["pid"]),
                started=str(record.get("started", "")), node=str(record.get("node", "")),
                task=str(record.get("task", "")),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError):
            return None

    def record(self) -> dict[str, Any]:
        return asdict(self)

    def is_local(self) -> bool:
        return self.host == socket.gethostname() and self.namespace == pid_namespace()

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host}"


def pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""


def start_time(pid: int) -> str | None:
    """The start time of process ``pid`` (field 22 of /proc/PID/stat); None when no such live
    process exists (a zombie has ended: only its exit status is left for its parent)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as stat:
            text = stat.read()
    except FileNotFoundError:
        return None
    except OSError:  # no /proc here (not Linux): whether the pid exists at all
        return "" if pid_exists(pid) else None
    fields = text[text.rfind(")") + 2 :].split()  # the name in parentheses may hold spaces
    if len(fields) < 20 or fields[0] in ("Z", "X"):
        return None
    return fields[19]


def pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by another user
        return True
    return True


@dataclass(frozen=True)
class Verdict:
    alive: bool | None  # None: could not tell (the broker is unreachable)
    words: str  # why, for the row's error and the logs


class Liveness:
    """Verdicts for one reaper pass: each other host's worker is asked once, however many of its
    attempts are stale."""

    def __init__(self, timeout: float | None = None):
        self.timeout = settings.PLANNER_WORKER_PING_SECONDS if timeout is None else timeout
        self._answers: dict[str, tuple[str, list]] = {}

    def judge(self, record: Any) -> Verdict:
        process = WorkerProcess.from_record(record)
        if process is None:
            return Verdict(False, "")
        if process.is_local():
            return self._local(process)
        return self._remote(process)

    def _local(self, process: WorkerProcess) -> Verdict:
        started = start_time(process.pid)
        if started is None:
            return Verdict(False, f"its process ({process.describe()}) has ended")
        if process.started and started and started != process.started:
            reused = f"its process ({process.describe()}) has ended (the pid is another process's now)"
            return Verdict(False, reused)
        return Verdict(True, f"its process ({process.describe()}) is still running")

    def _remote(self, process: WorkerProcess) -> Verdict:
        if not process.node:
            return Verdict(False, f"its process ({process.describe()}) cannot be asked: no worker recorded")
        if process.node not in self._answers:
            self._answers[process.node] = self._ask(process.node)
        answer, tasks = self._answers[process.node]
        if answer == "unreachable":
            return Verdict(None, f"{process.node} could not be asked: the broker is unreachable")
        if answer == "silent":
            return Verdict(False, f"{process.node} did not answer within {self.timeout:g} s")
        running = any(
            task.get("id") == process.task and task.get("worker_pid") in (process.pid, None)
            for task in tasks
            if isinstance(task, dict)
        )
        if running:
            return Verdict(True, f"{process.node} still runs it ({process.describe()})")
        return Verdict(False, f"{process.node} answered but no longer runs it")

    def _ask(self, node: str) -> tuple[str, list]:
        """``("answered", the tasks node is running)``, ``("silent", [])`` when it does not answer
        in time, ``("unreachable", [])`` when the broker cannot be reached."""
        try:
            replies = app.control.inspect(destination=[node], timeout=self.timeout).active() or {}
        except Exception:  # kombu's OperationalError, a refused connection, a broker timeout
            logger.warning("could not ask %s whether it is alive", node, exc_info=True)
            return "unreachable", []
        if node not in replies:
            return "silent", []
        return "answered", list(replies[node] or [])
