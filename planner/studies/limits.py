"""At most ``PLANNER_MAX_HEAVY_TASKS_PER_USER`` heavy tasks per user, queued or running.

A heavy task is what keeps workers replaying for minutes: a study (a sweep is its study), a
capacity curve, a worth search, a calibration. Each ``start_*`` / ``launch_study`` asks
``check_heavy_task_limit`` first, so the forms, the API and every other caller are bounded alike;
work started by nobody (the demo, management commands) is not counted or refused.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError

from planner.calibration.models import Calibration
from planner.curves.models import CapacityCurve, WorthSearch
from planner.studies.models import RunStatus, Study

UNFINISHED = (RunStatus.QUEUED, RunStatus.RUNNING)
SETTING = "PLANNER_MAX_HEAVY_TASKS_PER_USER"


class HeavyTaskLimit(ValidationError):
    """The user already has the most heavy tasks allowed: the API answers 429, a form shows it."""

    def __init__(self, limit: int, unfinished: int):
        self.limit = limit
        self.unfinished = unfinished
        super().__init__(
            {
                "__all__": (
                    f"you have {unfinished} studies, curves, searches or calibrations queued or running: "
                    f"the limit is {limit} per user ({SETTING}); wait for one to finish, or delete one"
                )
            }
        )

    @property
    def message(self) -> str:
        return self.messages[0]


def unfinished_heavy_tasks(user) -> int:
    """The user's studies, curves, worth searches and calibrations not finished yet."""
    studies = Study.objects.filter(created_by=user, runs__status__in=UNFINISHED).distinct().count()
    curves = CapacityCurve.objects.filter(created_by=user, points__status__in=UNFINISHED).distinct().count()
    searches = WorthSearch.objects.filter(created_by=user, status__in=UNFINISHED).count()
    calibrations = Calibration.objects.filter(created_by=user, status__in=UNFINISHED).count()
    return studies + curves + searches + calibrations


def check_heavy_task_limit(user) -> None:
    """HeavyTaskLimit when ``user`` may not start one more heavy task; nothing for no user."""
    if user is None or not getattr(user, "is_authenticated", False):
        return
    limit = settings.PLANNER_MAX_HEAVY_TASKS_PER_USER
    unfinished = unfinished_heavy_tasks(user)
    if unfinished >= limit:
        raise HeavyTaskLimit(limit, unfinished)
