"""The Celery task that replays one run, safely under redelivery, retries and dead workers.

A worker first *claims* the run (a locked update that bumps ``attempts``); every later write
(heartbeat, progress, the result) is conditional on that attempt still owning the run, so a
superseded attempt can never overwrite a newer one. A succeeded run is never replayed again.
"""

from __future__ import annotations

import logging
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, connection, transaction
from django.utils import timezone

from planner.strict_json import strict_json
from planner.studies.models import Run, RunStatus, run_summary
from scheduling.engine import replay
from scheduling.errors import InputError
from scheduling.model import Policy as EnginePolicy

logger = logging.getLogger(__name__)


class Superseded(Exception):
    """Another attempt took the run over (this one was presumed dead): stop replaying."""


def claim_run(run_id: int, worker: str) -> tuple[int | None, bool]:
    """Take a run for this worker. Returns ``(attempt, busy)``: ``attempt`` is None when there is
    nothing to do, and ``busy`` says another live attempt is running it right now."""
    now = timezone.now()
    with transaction.atomic():
        run = Run.objects.select_for_update().filter(pk=run_id).first()
        if run is None or run.finished:
            return None, False
        if run.status == RunStatus.RUNNING and not run.heartbeat_is_stale(now):
            return None, True
        if run.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
            last = f" (last: {run.error})" if run.error else ""
            run.status = RunStatus.FAILED
            run.error = f"gave up after {run.attempts} attempts: the worker stopped each time{last}"
            run.finished_at = now
            run.save(update_fields=["status", "error", "finished_at"])
            return None, False
        run.status = RunStatus.RUNNING
        run.attempts += 1
        run.worker = worker
        run.heartbeat = now
        run.started_at = now
        run.progress = 0
        run.save(update_fields=["status", "attempts", "worker", "heartbeat", "started_at", "progress"])
        return run.attempts, False


def _owned(run_id: int, attempt: int):
    return Run.objects.filter(pk=run_id, attempts=attempt, status=RunStatus.RUNNING)


class Heartbeat:
    """While the replay runs, a thread writes heartbeat and latest progress every few seconds,
    so progress is throttled and a long silent phase still proves the worker is alive."""

    def __init__(self, run_id: int, attempt: int, interval: float):
        self.run_id = run_id
        self.attempt = attempt
        self.interval = interval
        self.fraction = 0.0
        self.superseded = False
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-run-{run_id}", daemon=True)

    def report(self, fraction: float) -> None:
        """The engine's progress callback."""
        self.fraction = max(0.0, min(float(fraction), 1.0))
        if self.superseded:
            raise Superseded()

    def beat(self) -> None:
        progress = round(min(self.fraction, 0.99), 4)
        if not _owned(self.run_id, self.attempt).update(heartbeat=timezone.now(), progress=progress):
            self.superseded = True

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                self.beat()
        except Exception:
            logger.exception("heartbeat of run %s failed", self.run_id)
        finally:
            connection.close()

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        self._thread.join()


def write_outcomes(result, run_id: int, attempt: int) -> str:
    """Write the per-job outcomes atomically (temp file + rename); returns the media name."""
    folder = Path(settings.MEDIA_ROOT) / "runs"
    folder.mkdir(parents=True, exist_ok=True)
    final = folder / f"run-{run_id}-attempt-{attempt}.npz"
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=f".{final.name}.", suffix=".tmp")
    try:
        with os.fdopen(descriptor, "wb") as out:
            result.save_outcomes(out)
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return final.relative_to(Path(settings.MEDIA_ROOT)).as_posix()


def execute(run_id: int, attempt: int) -> bool:
    """Replay the run's trace under its snapshot; True when this attempt recorded the result."""
    run = Run.objects.select_related("study__trace").get(pk=run_id)
    policy = EnginePolicy.from_dict(run.policy_snapshot)
    trace = run.study.trace.load_jobs()
    with Heartbeat(run_id, attempt, settings.PLANNER_HEARTBEAT_SECONDS) as heartbeat:
        result = replay(policy, trace, progress=heartbeat.report)
    name = write_outcomes(result, run_id, attempt)
    metrics = strict_json(result.metrics)
    with transaction.atomic():
        recorded = _owned(run_id, attempt).update(
            status=RunStatus.SUCCEEDED,
            metrics=metrics,
            summary=run_summary(metrics),
            result_file=name,
            progress=1.0,
            error="",
            heartbeat=timezone.now(),
            finished_at=timezone.now(),
        )
    if not recorded:
        (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
    return bool(recorded)


def fail_run(run_id: int, attempt: int, reason: str) -> None:
    _owned(run_id, attempt).update(
        status=RunStatus.FAILED, error=reason[:4000], finished_at=timezone.now(), heartbeat=timezone.now()
    )


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def replay_run(self, run_id: int) -> str:
    """Replay one run. Idempotent: a finished run is left alone, a redelivered one restarts."""
    if not self.request.is_eager:
        close_old_connections()
    attempt, busy = claim_run(run_id, worker=self.request.hostname or "eager")
    if attempt is None:
        if busy and not self.request.is_eager:
            # A redelivery while another attempt still beats: look again once it could be stale.
            replay_run.apply_async((run_id,), countdown=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 1)
        return "busy" if busy else "nothing to do"
    try:
        recorded = execute(run_id, attempt)
    except Superseded:
        return "superseded"
    except InputError as error:
        fail_run(run_id, attempt, error.describe())
        return "failed"
    except Exception as error:
        reason = f"attempt {attempt} failed: {type(error).__name__}: {error}"
        logger.exception("run %s: %s", run_id, reason)
        if attempt < settings.PLANNER_RUN_MAX_ATTEMPTS:
            released = _owned(run_id, attempt).update(status=RunStatus.QUEUED, error=reason, progress=0)
            if released:
                raise self.retry(countdown=settings.PLANNER_RETRY_DELAY_SECONDS * attempt) from error
            return "superseded"
        fail_run(run_id, attempt, reason)
        return "failed"
    return "succeeded" if recorded else "superseded"
