"""The Celery tasks that replay one curve point or one search point, with the study replays'
claim / heartbeat / conditional-write machinery (``planner.studies.attempts``): a redelivered
task restarts, a superseded attempt records nothing, a finished point is never replayed."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings
from django.db import models

from planner.curves.launch import advance_search
from planner.curves.models import CurvePoint, SearchPoint
from planner.strict_json import strict_json
from planner.studies.attempts import Heartbeat, run_attempt
from planner.worker_results import record_success
from scheduling.capacity_curve import point_summary
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay


def _execute(model: type[models.Model], trace, pk: int, attempt: int) -> bool:
    point = model.objects.get(pk=pk)
    policy = EnginePolicy.from_dict(point.policy_snapshot)
    with Heartbeat(model, pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS) as heartbeat:
        jobs = trace.load_jobs()
        heartbeat.check()
        result = replay(policy, jobs, progress=heartbeat.report)
        heartbeat.check()
        summary = strict_json(point_summary(result.metrics, policy))
    return record_success(model, pk, attempt, summary=summary)


def execute_curve_point(pk: int, attempt: int) -> bool:
    trace = CurvePoint.objects.select_related("curve__trace").get(pk=pk).curve.trace
    return _execute(CurvePoint, trace, pk, attempt)


def execute_search_point(pk: int, attempt: int) -> bool:
    trace = SearchPoint.objects.select_related("search__trace").get(pk=pk).search.trace
    return _execute(SearchPoint, trace, pk, attempt)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def replay_curve_point(self, pk: int) -> str:
    """Replay one point of a capacity curve."""
    return run_attempt(self, CurvePoint, pk, execute_curve_point)


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def replay_search_point(self, pk: int) -> str:
    """Replay one point of a worth search, then move the search on (judge the step, plan the next)."""
    outcome = run_attempt(self, SearchPoint, pk, execute_search_point)
    search_id = SearchPoint.objects.filter(pk=pk).values_list("search_id", flat=True).first()
    if search_id is not None:
        advance_search(search_id)
    return outcome
