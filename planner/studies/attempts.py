"""Work on a row that a worker must own while it computes: claimed, beating, then recorded.

Runs and calibrations share it (both have status, attempts, worker, heartbeat, progress, error
and finished_at). A worker first *claims* the row (a locked update that bumps ``attempts``);
every later write (heartbeat, progress, the result) is conditional on that attempt still owning
the row, so a superseded attempt can never overwrite a newer one, and a finished row is never
computed again.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, DataError, close_old_connections, connection, models, transaction
from django.db.models import Q
from django.utils import timezone

from planner.studies.liveness import Liveness, WorkerProcess
from planner.studies.models import RunStatus
from scheduling.errors import InputError

logger = logging.getLogger(__name__)


class Superseded(Exception):
    """Another attempt took the row over (this one was presumed dead): stop computing."""


def claim(
    model: type[models.Model], pk: int, worker: str, process: WorkerProcess | None = None
) -> tuple[int | None, bool]:
    """Take a row for this worker (``process`` is the one that will compute it). Returns
    ``(attempt, busy)``: ``attempt`` is None when there is nothing to do, and ``busy`` says another
    live attempt is computing it right now (it beats, or its process still runs)."""
    now = timezone.now()
    seen = model.objects.filter(pk=pk).only("status", "heartbeat", "attempts", "worker_process").first()
    # Judged before the lock: asking another host's worker takes up to a second.
    live_attempt = None
    stale = seen is not None and seen.heartbeat_is_stale(now)
    if stale and Liveness().judge(seen.worker_process).alive is not False:
        live_attempt = seen.attempts
    with transaction.atomic():
        row = model.objects.select_for_update().filter(pk=pk).first()
        if row is None or row.finished:
            return None, False
        if row.status == RunStatus.RUNNING and (
            not row.heartbeat_is_stale(now) or row.attempts == live_attempt
        ):
            return None, True
        if row.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
            last = f" (last: {row.error})" if row.error else ""
            row.status = RunStatus.FAILED
            row.error = f"gave up after {row.attempts} attempts: the worker stopped each time{last}"
            row.finished_at = now
            row.save(update_fields=["status", "error", "finished_at"])
            return None, False
        row.status = RunStatus.RUNNING
        row.attempts += 1
        row.worker = worker
        row.worker_process = process.record() if process else None
        row.heartbeat = now
        row.started_at = now
        row.progress = 0
        row.save(
            update_fields=[
                "status", "attempts", "worker", "worker_process", "heartbeat", "started_at", "progress"
            ]
        )  # fmt: skip
        return row.attempts, False


def owned(model: type[models.Model], pk: int, attempt: int) -> models.QuerySet:
    """The row, if this attempt still owns it (an empty queryset otherwise)."""
    return model.objects.filter(pk=pk, attempts=attempt, status=RunStatus.RUNNING)


def storable(text: str) -> str:
    """Text a database of either kind stores: PostgreSQL refuses NUL bytes, SQLite took them."""
    return text.replace("\x00", "\\x00")


def fail(model: type[models.Model], pk: int, attempt: int, reason: str) -> None:
    now = timezone.now()
    owned(model, pk, attempt).update(
        status=RunStatus.FAILED, error=storable(reason)[:4000], finished_at=now, heartbeat=now
    )


class Heartbeat:
    """Proves the computing worker alive and lets its work be stopped.

    The heartbeat and the latest progress are written every ``interval`` seconds, from two places:
    the computing thread itself, whenever the engine's progress callback (``report``) or the code
    between phases (``check``) calls in and a beat is due, and a background thread for the phases
    that call nothing (reading files, numpy, I/O). The first is what the heartbeat rests on:
    compiled code (the replay engine) never lets another thread take the GIL, so the background
    thread alone went silent for minutes. A pass that calls nothing back for longer than the stale
    limit still goes silent: the reaper then asks whether the attempt's process lives
    (``planner.studies.liveness``) before it starts another.

    A beat that finds the row gone from this attempt (another attempt took it over, or the row was
    deleted with its study, curve or trace) marks it superseded, and the next ``report`` or
    ``check`` raises Superseded: the work stops within a beat of the deletion."""

    def __init__(self, model: type[models.Model], pk: int, attempt: int, interval: float):
        self.model = model
        self.pk = pk
        self.attempt = attempt
        self.interval = interval
        self.fraction = 0.0
        self.superseded = False
        self._last_beat = time.monotonic()
        self._beating = threading.Lock()  # one beat at a time, from either thread
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._loop, name=f"heartbeat-{model._meta.model_name}-{pk}", daemon=True
        )

    def report(self, fraction: float) -> None:
        """The engine's progress callback: records the fraction, beats when due, stops the work
        (Superseded) once the row is no longer this attempt's."""
        self.fraction = max(0.0, min(float(fraction), 1.0))
        self.check()

    def check(self) -> None:
        """From the computing thread: beat when one is due; Superseded once the row is lost."""
        if not self.superseded and time.monotonic() - self._last_beat >= self.interval:
            self._beat_once()
        if self.superseded:
            raise Superseded()

    def _beat_once(self) -> None:
        if not self._beating.acquire(blocking=False):
            return  # the other thread is beating right now
        try:
            self._last_beat = time.monotonic()
            self.beat()
        except DatabaseError:
            # A database blip costs a beat, not the replay: the next beat tries again, and a
            # database gone for good fails the attempt when it stores its result.
            name = self.model._meta.model_name
            logger.warning("heartbeat of %s %s not written", name, self.pk, exc_info=True)
        finally:
            self._beating.release()

    def beat(self) -> None:
        progress = round(min(self.fraction, 0.99), 4)
        if not owned(self.model, self.pk, self.attempt).update(heartbeat=timezone.now(), progress=progress):
            self.superseded = True

    def _loop(self) -> None:
        try:
            while not self._stop.wait(max(self.interval / 2, 0.05)):
                if time.monotonic() - self._last_beat >= self.interval:
                    self._beat_once()
        except Exception:
            logger.exception("heartbeat of %s %s failed", self.model._meta.model_name, self.pk)
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        self._thread.join()


def run_attempt(task, model: type[models.Model], pk: int, execute: Callable[[int, int], bool]) -> str:
    """The body of a bind=True, acks_late task computing row ``pk`` with ``execute(pk, attempt)``.

    Idempotent: a finished row is left alone and a redelivered one restarts. Bad input fails the
    row with the engine's message; other errors are retried, then fail it with the reason."""
    name = model._meta.model_name
    if not task.request.is_eager:
        close_old_connections()
    node = task.request.hostname or ""
    process = WorkerProcess.current(node=node, task=task.request.id or "")
    attempt, busy = claim(model, pk, worker=node or "eager", process=process)
    if attempt is None:
        if busy and not task.request.is_eager:
            # A redelivery while another attempt still beats: look again once it could be stale.
            task.apply_async((pk,), countdown=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 1)
        return "busy" if busy else "nothing to do"
    try:
        recorded = execute(pk, attempt)
    except Superseded:
        return "superseded"
    except InputError as error:
        fail(model, pk, attempt, error.describe())
        return "failed"
    except DataError as error:
        # A value the database refuses (out of range, a NUL byte): the same input is refused again.
        logger.exception("%s %s: the database refused the result", name, pk)
        fail(model, pk, attempt, f"attempt {attempt}: the database refused the result: {error}")
        return "failed"
    except Exception as error:
        reason = f"attempt {attempt} failed: {type(error).__name__}: {error}"
        logger.exception("%s %s: %s", name, pk, reason)
        if attempt < settings.PLANNER_RUN_MAX_ATTEMPTS:
            if owned(model, pk, attempt).update(status=RunStatus.QUEUED, error=reason, progress=0):
                raise task.retry(countdown=settings.PLANNER_RETRY_DELAY_SECONDS * attempt) from error
            return "superseded"
        fail(model, pk, attempt, reason)
        return "failed"
    return "succeeded" if recorded else "superseded"


def silence_note(row, now=None) -> str:
    """Words for a row still "running" whose worker has not beaten for several heartbeats: since
    when, and when the reaper will send it again (or fail it, after the last attempt) if the
    silence goes on and its process has ended (a live one is waited for). Empty while the worker
    answers. Pages show it so that a killed worker is not two minutes of a plain "running"."""
    if row.status != RunStatus.RUNNING or row.heartbeat is None:
        return ""
    now = now or timezone.now()
    silent = (now - row.heartbeat).total_seconds()
    if silent < max(10.0, 3 * settings.PLANNER_HEARTBEAT_SECONDS):
        return ""
    at = row.heartbeat + timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS)
    worker = row.worker or "its worker"
    last = row.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS
    then = (
        f"it fails at {at:%H:%M:%S} UTC (attempt {row.attempts} was the last of "
        f"{settings.PLANNER_RUN_MAX_ATTEMPTS})"
        if last
        else f"it goes back to the queue at {at:%H:%M:%S} UTC for attempt {row.attempts + 1} of "
        f"{settings.PLANNER_RUN_MAX_ATTEMPTS}"
    )
    return (
        f"{worker} stopped answering {silent:.0f} s ago; unless it answers again, {then}, "
        "if its process has ended by then."
    )


def reap_stale(
    rows: models.QuerySet, enqueue: Callable[[Iterable[int]], None], now=None
) -> dict[str, list[int]]:
    """Rows among ``rows`` still "running" whose heartbeat is stale and whose process is gone (their
    worker died) are sent again with ``enqueue``, or failed with the reason once their attempts are
    used up. A stale row whose process still runs (one long compiled pass calls nothing back) is
    left alone: an attempt is never started while the previous one lives. A row that beat or
    changed meanwhile is left alone too (every update is conditional on what was read)."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS)
    candidates = rows.filter(status=RunStatus.RUNNING).filter(
        Q(heartbeat__lt=stale_before) | Q(heartbeat__isnull=True)
    )
    liveness = Liveness()
    outcome: dict[str, list[int]] = {"requeued": [], "failed": []}
    for row in candidates:
        verdict = liveness.judge(row.worker_process)
        if verdict.alive is not False:
            name = rows.model._meta.model_name
            logger.info("%s %s: heartbeat stale, not reaped: %s", name, row.pk, verdict.words)
            continue
        silent = (
            f"no heartbeat from {row.worker or 'its worker'} since {row.heartbeat:%Y-%m-%d %H:%M:%S} UTC"
            if row.heartbeat
            else "its worker never reported"
        )
        if verdict.words:
            silent += f" and {verdict.words}"
        same = rows.model.objects.filter(
            pk=row.pk, status=RunStatus.RUNNING, attempts=row.attempts, heartbeat=row.heartbeat
        )
        with transaction.atomic():
            if row.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
                if same.update(
                    status=RunStatus.FAILED,
                    error=f"attempt {row.attempts} of {row.attempts} stopped: {silent}",
                    finished_at=now,
                ):
                    outcome["failed"].append(row.pk)
            elif same.update(
                status=RunStatus.QUEUED, progress=0, error=f"attempt {row.attempts} stopped: {silent}"
            ):
                enqueue([row.pk])
                outcome["requeued"].append(row.pk)
    return outcome
