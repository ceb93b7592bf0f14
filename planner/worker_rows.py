"""The fields a row computed by a worker task carries: progress, error, the attempts and the worker
with its heartbeat, when it started and ended (a study's run, a trace's parse, a calibration, a
curve's point, a forecast's chunk). Abstract bases: each model keeps its own table, columns and
``status`` field."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone


class RunStatus(models.TextChoices):
    """Where a worker row is: every row computed by a worker task goes through these values."""

    QUEUED = "queued"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


FINISHED = (RunStatus.SUCCEEDED, RunStatus.FAILED)

# Where a worker row is and who computes it, in the order the admin and the API show them.
WORKER_FIELDS = ("status", "progress", "error", "attempts", "worker", "heartbeat")


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
        """True when the row is running and has not reported for longer than the stale limit."""
        if self.status != RunStatus.RUNNING:
            return False
        if self.heartbeat is None:
            return True
        limit = timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS)
        return (now or timezone.now()) - self.heartbeat > limit

    @classmethod
    def fail_queued(cls, pks: list[int], reason: str) -> int:
        """Fail the rows among ``pks`` still queued, with the reason (their task was never sent)."""
        return cls.objects.filter(pk__in=pks, status=RunStatus.QUEUED).update(
            status=RunStatus.FAILED, error=reason, finished_at=timezone.now()
        )

    @classmethod
    def queue_again(cls, pks: list[int], **computed: Any) -> int:
        """Put the rows back in the queue as if no worker had touched them: queued, no progress,
        error, attempts, heartbeat or times; ``computed`` clears what the model computed (its
        metrics, summary, result file). Returns the number of rows updated."""
        return cls.objects.filter(pk__in=pks).update(
            status=RunStatus.QUEUED, progress=0, error="", attempts=0, heartbeat=None,
            started_at=None, finished_at=None, **computed,
        )  # fmt: skip


class Launched(models.Model):
    """A row a user made (an uploaded trace, an advisor sweep, a curve, a worth search, a forecast):
    who, when, newest first."""

    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True
        ordering = ["-created_at", "-id"]
