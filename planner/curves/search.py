"""A worth search's steps: the range and rule it searches with, and judging a step's replays to
plan the next step or conclude.

Below ``planner.curves.tasks`` (a search point's task moves its search on) and
``planner.curves.launch`` (starting a search plans its first step): neither is imported here.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from planner.curves.models import PointRole, SearchPoint, WorthSearch
from planner.curves.sizing import point_fields, scaled_policy
from planner.studies.models import RunStatus
from scheduling.scaling import SizeMode
from scheduling.worth import Criterion, SearchRange, conclusion, matches, next_sizes, parse_metric


def search_range(search: WorthSearch) -> SearchRange:
    """The sizes the search may try, as the engine's search reads them."""
    return SearchRange(today=search.today, lower=search.lower, upper=search.upper, parallel=search.parallel)


def criterion(search: WorthSearch) -> Criterion:
    """When a candidate matches the target, as the engine judges it."""
    return Criterion(
        metric=parse_metric(search.metric),
        urgent_shares=tuple(search.urgent_shares),
        tolerance_seconds=search.tolerance_seconds,
        tolerance_percent=search.tolerance_percent,
    )


def new_candidates(search: WorthSearch, sizes: Sequence[int], step: int) -> list[SearchPoint]:
    """The search's candidate points at ``sizes`` for ``step``, stored (queued, not sent)."""
    mode = SizeMode(search.mode)
    points = []
    for size in sizes:
        capacity, scaled = scaled_policy(
            search.policy_a_snapshot, size, mode, search.instance_type, "policy_a"
        )
        points.append(
            SearchPoint(
                search=search,
                role=PointRole.CANDIDATE,
                step=step,
                **point_fields(size, capacity, scaled),
            )
        )
    return SearchPoint.objects.bulk_create(points)


def judge_step(search_id: int) -> tuple[str, list[int]]:
    """Judge the finished replays of the search's step and plan the next step, or conclude: the
    outcome, and the points of the next step to send (stored, not sent: sending is the tasks'
    part, ``planner.curves.tasks.advance_search``). Idempotent and safe to call from several
    workers at once (the search row is locked)."""
    with transaction.atomic():
        search = WorthSearch.objects.select_for_update().filter(pk=search_id).first()
        if search is None or search.finished:
            return "finished", []
        points = list(search.points.all())
        failed = [point for point in points if point.status == RunStatus.FAILED]
        if failed:
            point = failed[0]
            who = search.policy_b_name if point.role == PointRole.TARGET else search.policy_a_name
            search.status = RunStatus.FAILED
            search.error = f"the replay of {who} at {point.gpus:,.0f} GPUs failed: {point.error}"[:4000]
            search.finished_at = timezone.now()
            search.save(update_fields=["status", "error", "finished_at"])
            return "failed", []
        if any(point.status != RunStatus.SUCCEEDED for point in points):
            return "waiting", []
        target = next(point for point in points if point.role == PointRole.TARGET)
        rule = criterion(search)
        verdicts = {}
        for point in points:
            if point.role != PointRole.CANDIDATE:
                continue
            if point.matches is None:
                point.matches, point.verdict = matches(point.summary, target.summary, rule)
                point.save(update_fields=["matches", "verdict"])
            verdicts[point.size] = point.matches
        bounds = search_range(search)
        sizes = next_sizes(bounds, verdicts)
        if sizes:
            search.steps += 1
            search.save(update_fields=["steps"])
            return "next step", [point.pk for point in new_candidates(search, sizes, step=search.steps)]
        found = conclusion(bounds, verdicts)
        search.status = RunStatus.SUCCEEDED
        search.answer_size = found.size
        search.exact = found.exact
        search.finished_at = timezone.now()
        search.save(update_fields=["status", "answer_size", "exact", "finished_at"])
        return "succeeded", []
