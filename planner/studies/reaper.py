"""Runs whose worker died: a running run whose heartbeat is stale is re-enqueued, or failed
with the reason once its attempts are used up. Never stuck "running" forever.

Called by ``manage.py reap_runs``, by every worker when it starts, and when a study is read.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from planner.studies.launch import enqueue_runs
from planner.studies.models import Run, RunStatus


def reap_stale_runs(runs=None, now=None) -> dict[str, list[int]]:
    """Re-enqueue or fail the stale running runs among ``runs`` (default: all runs)."""
    now = now or timezone.now()
    stale_before = now - timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS)
    candidates = (
        (runs if runs is not None else Run.objects.all())
        .filter(status=RunStatus.RUNNING)
        .filter(Q(heartbeat__lt=stale_before) | Q(heartbeat__isnull=True))
    )
    outcome: dict[str, list[int]] = {"requeued": [], "failed": []}
    for run in candidates:
        silent = (
            f"no heartbeat from {run.worker or 'its worker'} since {run.heartbeat:%Y-%m-%d %H:%M:%S} UTC"
            if (run.heartbeat)
            else "its worker never reported"
        )
        same = Run.objects.filter(
            pk=run.pk, status=RunStatus.RUNNING, attempts=run.attempts, heartbeat=run.heartbeat
        )
        with transaction.atomic():
            if run.attempts >= settings.PLANNER_RUN_MAX_ATTEMPTS:
                changed = same.update(
                    status=RunStatus.FAILED,
                    error=f"attempt {run.attempts} of {run.attempts} stopped: {silent}",
                    finished_at=now,
                )
                if changed:
                    outcome["failed"].append(run.pk)
            else:
                changed = same.update(
                    status=RunStatus.QUEUED, progress=0, error=f"attempt {run.attempts} stopped: {silent}"
                )
                if changed:
                    enqueue_runs([run.pk])
                    outcome["requeued"].append(run.pk)
    return outcome
