"""The last write of a worker task's attempt (``planner.studies.attempts``): its result and
``succeeded``, if the attempt still owns the row. Calibrations, curve points, forecast chunks and
trace parses record their results through it."""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from planner.studies.attempts import owned
from planner.studies.models import RunStatus


def record_success(model: type[models.Model], pk: int, attempt: int, **result: Any) -> bool:
    """Store ``result`` on the row and mark it succeeded; False when a newer attempt owns it."""
    now = timezone.now()
    recorded = owned(model, pk, attempt).update(
        status=RunStatus.SUCCEEDED, progress=1.0, error="", heartbeat=now, finished_at=now, **result
    )
    return bool(recorded)
