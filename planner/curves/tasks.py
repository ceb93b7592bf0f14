"""The Celery tasks that replay one curve point or one search point, with the study replays'
claim / heartbeat / conditional-write machinery (``planner.studies.attempts``): a redelivered
task restarts, a superseded attempt records nothing, a finished point is never replayed. Sending
them (``enqueue_*``) and moving a search on (``advance_search``, which sends its next step) live
here too: a search point's task moves its search on, so they cannot live above the tasks."""

from __future__ import annotations

from collections.abc import Iterable

from celery import shared_task
from django.conf import settings
from django.db import models, transaction

from planner.curves.models import CurvePoint, SearchPoint
from planner.curves.search import judge_step
from planner.outages import publish_rows
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


def enqueue_curve_points(ids: Iterable[int], what: str | None = None) -> None:
    """One task per point after the commit; ``what`` as in ``studies.launch.enqueue_runs``."""
    _enqueue_points(CurvePoint, replay_curve_point, list(ids), what)


def enqueue_search_points(ids: Iterable[int], what: str | None = None) -> None:
    _enqueue_points(SearchPoint, replay_search_point, list(ids), what)


def _enqueue_points(model, task, pks: list[int], what: str | None) -> None:
    if not pks:
        return
    if what is None:
        for pk in pks:
            transaction.on_commit(lambda pk=pk: task.delay(pk))
    else:
        transaction.on_commit(lambda: _send_points(model, task, pks, what))


def _send_points(model, task, pks: list[int], what: str) -> None:
    """One task per point after the commit; when the broker refuses, the points still queued are
    failed with the reason (the curve or search then reads as failed), and the request gets a 503."""
    publish_rows(model, pks, lambda: [task.delay(pk) for pk in pks], what=what, then="start it again")


def advance_search(search_id: int) -> str:
    """Judge the search's step and send the next one (``planner.curves.search.judge_step``): after
    each of its points' tasks, and whenever the search is read."""
    outcome, next_points = judge_step(search_id)
    enqueue_search_points(next_points)
    return outcome
