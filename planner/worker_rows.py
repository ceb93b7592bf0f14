"""The fields a row computed by a worker task carries: progress, error, the attempts and the worker
with its heartbeat, when it started and ended (a study's run, a trace's parse, a calibration, a
curve's point, a forecast's chunk). Abstract bases: each model keeps its own table, columns and
``status`` field."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models


class WorkerAttempt(models.Model):
    """What a worker writes while it computes the row; the row's ``status`` says where it is, in
    RunStatus's values (``planner.studies.attempts`` works with any such row)."""

    progress = models.FloatField(default=0)
    error = models.TextField(blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True)
    worker_process = models.JSONField(
        null=True, blank=True, help_text="the process computing the attempt (planner.studies.liveness)"
    )
    heartbeat = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        abstract = True

    def heartbeat_is_stale(self, now=None) -> bool:
        # planner.studies.models imports the traces app, whose Trace is one of these rows.
        from planner.studies.models import heartbeat_is_stale

        return heartbeat_is_stale(self, now)

    @classmethod
    def queue_again(cls, pks: list[int], **computed: Any) -> int:
        """Put the rows back in the queue as if no worker had touched them: queued, no progress,
        error, attempts, heartbeat or times; ``computed`` clears what the model computed (its
        metrics, summary, result file). Returns the number of rows updated."""
        from planner.studies.models import RunStatus

        return cls.objects.filter(pk__in=pks).update(
            status=RunStatus.QUEUED, progress=0, error="", attempts=0, heartbeat=None,
            started_at=None, finished_at=None, **computed,
        )  # fmt: skip


class Launched(models.Model):
    """A computation a user launched (a curve, a worth search, a forecast): who, when, newest first."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]
