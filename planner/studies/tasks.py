"""The Celery task that replays one run, safely under redelivery, retries and dead workers.

The claim / heartbeat / conditional-write machinery is ``planner.studies.attempts``, shared with
the calibrations; here is what a run computes and stores.
"""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from planner.strict_json import strict_json
from planner.studies.attempts import Heartbeat, claim, owned, run_attempt
from planner.studies.jobs import write_indexes
from planner.studies.models import Run, RunStatus, recorded_metrics
from planner.studies.window import apply_study_window
from scheduling.capacity_plans import capacity_steps
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay

logger = logging.getLogger(__name__)


def claim_run(run_id: int, worker: str) -> tuple[int | None, bool]:
    """Take a run for this worker: ``(attempt, busy)`` as ``attempts.claim``."""
    return claim(Run, run_id, worker)


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


def with_capacity_steps(metrics: dict, policy: EnginePolicy) -> dict:
    """The run's usage series with the pool's capacity and each share's quota over its window as
    step lines (``series.steps``, SEMANTICS.md section 9), unless the engine's metrics hold them."""
    series = metrics.get("series")
    if series is None or "steps" in series or not series.get("t"):
        return metrics
    start, end = series["t"][0], series["t"][-1] + series.get("width", 0.0)
    series["steps"] = capacity_steps(policy, start, end)
    return metrics


def execute(run_id: int, attempt: int) -> bool:
    """Replay the run's trace under its snapshot; True when this attempt recorded the result."""
    run = Run.objects.select_related("study__trace").get(pk=run_id)
    policy = EnginePolicy.from_dict(run.policy_snapshot)
    # Every phase beats (loading a 5M-job trace, the steps and the outcomes file take seconds
    # to minutes too), and each ends with a check: a run deleted meanwhile stops here.
    with Heartbeat(Run, run_id, attempt, settings.PLANNER_HEARTBEAT_SECONDS) as heartbeat:
        trace = run.study.trace.load_jobs()
        heartbeat.check()
        result = replay(policy, trace, progress=heartbeat.report)
        heartbeat.check()
        name = write_outcomes(result, run_id, attempt)
        try:
            heartbeat.check()
            metrics = strict_json(with_capacity_steps(result.metrics, policy))
            heartbeat.check()
        except BaseException:
            (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
            raise
    with transaction.atomic():
        recorded = owned(Run, run_id, attempt).update(
            status=RunStatus.SUCCEEDED,
            **recorded_metrics(metrics),
            result_file=name,
            progress=1.0,
            error="",
            heartbeat=timezone.now(),
            finished_at=timezone.now(),
        )
    if not recorded:
        (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
        return False
    try:
        write_indexes(run, trace, result.outcomes)
    except Exception:  # the run is recorded; the job finder builds its index on first use
        logger.exception("job finder index of run %s", run_id)
    try:
        apply_study_window(run.study_id)
    except Exception:  # the run is recorded; the next reader of the study applies the window
        logger.exception("common window of study %s after run %s", run.study_id, run_id)
    return True


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def replay_run(self, run_id: int) -> str:
    """Replay one run. Idempotent: a finished run is left alone, a redelivered one restarts."""
    return run_attempt(self, Run, run_id, execute)
