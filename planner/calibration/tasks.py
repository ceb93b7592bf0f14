"""The Celery task that computes a calibration, in the pattern of the study replays
(``planner.studies.tasks``): acks_late, a claim that bumps ``attempts``, a heartbeat thread,
writes conditional on the attempt still owning the calibration, bad input failed with its reason
and other errors retried, then failed with the reason."""

from __future__ import annotations

import logging

from celery import shared_task
from django.conf import settings
from django.db import close_old_connections, transaction
from django.utils import timezone

from planner.calibration.models import Calibration, calibration_summary
from planner.strict_json import strict_json
from planner.studies.models import RunStatus
from planner.studies.tasks import Heartbeat, Superseded
from scheduling.calibration import calibrate
from scheduling.engine import replay
from scheduling.errors import InputError
from scheduling.model import Policy as EnginePolicy

logger = logging.getLogger(__name__)


def claim_calibration(pk: int, worker: str) -> tuple[int | None, bool]:
    """``(attempt, busy)`` as ``planner.studies.tasks.claim_run``: None when there is nothing to do;
    ``busy`` when another live attempt is computing it."""
    now = timezone.now()
    with transaction.atomic():
        calibration = Calibration.objects.select_for_update().filter(pk=pk).first()
        if calibration is None or calibration.finished:
            return None, False
        if calibration.status == RunStatus.RUNNING and not calibration.heartbeat_is_stale(now):
            return None, True
        if calibration.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
            last = f" (last: {calibration.error})" if calibration.error else ""
            calibration.status = RunStatus.FAILED
            calibration.error = (
                f"gave up after {calibration.attempts} attempts: the worker stopped each time{last}"
            )
            calibration.finished_at = now
            calibration.save(update_fields=["status", "error", "finished_at"])
            return None, False
        calibration.status = RunStatus.RUNNING
        calibration.attempts += 1
        calibration.worker = worker
        calibration.heartbeat = now
        calibration.started_at = now
        calibration.progress = 0
        calibration.save(
            update_fields=["status", "attempts", "worker", "heartbeat", "started_at", "progress"]
        )
        return calibration.attempts, False


def _owned(pk: int, attempt: int):
    return Calibration.objects.filter(pk=pk, attempts=attempt, status=RunStatus.RUNNING)


class CalibrationHeartbeat(Heartbeat):
    """The study replay's heartbeat thread, writing to the calibration instead of a run."""

    def beat(self) -> None:
        progress = round(min(self.fraction, 0.99), 4)
        if not _owned(self.run_id, self.attempt).update(heartbeat=timezone.now(), progress=progress):
            self.superseded = True


def execute(pk: int, attempt: int) -> bool:
    """Replay the trace under the snapshot and compare; True when this attempt recorded the result."""
    calibration = Calibration.objects.select_related("trace").get(pk=pk)
    policy = EnginePolicy.from_dict(calibration.policy_snapshot)
    trace = calibration.trace.load_jobs()
    with CalibrationHeartbeat(pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS) as heartbeat:
        result = replay(policy, trace, progress=heartbeat.report)
    metrics = strict_json(calibrate(trace, result))
    now = timezone.now()
    recorded = _owned(pk, attempt).update(
        status=RunStatus.SUCCEEDED,
        metrics=metrics,
        summary=calibration_summary(metrics),
        progress=1.0,
        error="",
        heartbeat=now,
        finished_at=now,
    )
    return bool(recorded)


def fail_calibration(pk: int, attempt: int, reason: str) -> None:
    now = timezone.now()
    _owned(pk, attempt).update(status=RunStatus.FAILED, error=reason[:4000], finished_at=now, heartbeat=now)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def calibrate_trace(self, pk: int) -> str:
    """Compute one calibration. Idempotent: a finished one is left alone, a redelivered one restarts."""
    if not self.request.is_eager:
        close_old_connections()
    attempt, busy = claim_calibration(pk, worker=self.request.hostname or "eager")
    if attempt is None:
        if busy and not self.request.is_eager:
            calibrate_trace.apply_async((pk,), countdown=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 1)
        return "busy" if busy else "nothing to do"
    try:
        recorded = execute(pk, attempt)
    except Superseded:
        return "superseded"
    except InputError as error:
        fail_calibration(pk, attempt, error.describe())
        return "failed"
    except Exception as error:
        reason = f"attempt {attempt} failed: {type(error).__name__}: {error}"
        logger.exception("calibration %s: %s", pk, reason)
        if attempt < settings.PLANNER_RUN_MAX_ATTEMPTS:
            if _owned(pk, attempt).update(status=RunStatus.QUEUED, error=reason, progress=0):
                raise self.retry(countdown=settings.PLANNER_RETRY_DELAY_SECONDS * attempt) from error
            return "superseded"
        fail_calibration(pk, attempt, reason)
        return "failed"
    return "succeeded" if recorded else "superseded"
