"""The Celery task that computes a calibration: the study replays' claim / heartbeat /
conditional-write machinery (``planner.studies.attempts``) around a replay of the trace under
the policy in force and its comparison with the recorded waits."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from planner.calibration.models import Calibration, calibration_summary
from planner.strict_json import strict_json
from planner.studies.attempts import Heartbeat, run_attempt
from planner.worker_results import record_success
from scheduling.calibration import calibrate
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay


def execute(pk: int, attempt: int) -> bool:
    """Replay the trace under the snapshot and compare; True when this attempt recorded the result."""
    calibration = Calibration.objects.select_related("trace").get(pk=pk)
    policy = EnginePolicy.from_dict(calibration.policy_snapshot)
    with Heartbeat(Calibration, pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS) as heartbeat:
        trace = calibration.trace.load_jobs()
        heartbeat.check()
        result = replay(policy, trace, progress=heartbeat.report)
        heartbeat.check()
        metrics = strict_json(calibrate(trace, result))
    return record_success(Calibration, pk, attempt, metrics=metrics, summary=calibration_summary(metrics))


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def calibrate_trace(self, pk: int) -> str:
    """Compute one calibration. Idempotent: a finished one is left alone, a redelivered one restarts."""
    return run_attempt(self, Calibration, pk, execute)
