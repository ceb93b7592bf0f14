"""Studies: one trace replayed under several policies, one Run per policy.

Run state lives in the database (status, progress, heartbeat, error, metrics), not in a
Celery result backend, so pages and the API read it directly and a run whose worker died
can be recognised by its stale heartbeat (see ``planner.studies.reaper``).
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.validators import validate_long_name
from planner.worker_rows import FINISHED, RunStatus, WorkerAttempt


def run_summary(metrics: dict) -> dict:
    """What lists and headlines need: ``metrics["summary"]`` plus each share's jobs, waits,
    preemptions and rerun cost (no series, no CDFs)."""
    keep = ("name", "strategy", "jobs", "succeeded", "failed", "unschedulable", "cancelled", "preemptions",
            "wait_seconds", "jct_seconds", "rerun_cost_usd")  # fmt: skip
    return {
        **metrics.get("summary", {}),
        "shares": [{key: share.get(key) for key in keep} for share in metrics.get("shares", [])],
    }


def metrics_digest(metrics: dict | None) -> str:
    """A digest of a run's stored figures ("" without figures): what the page cache keys on
    (``planner.web.page_cache``), so figures written again (a rerun, a new window) miss."""
    if metrics is None:
        return ""
    options = orjson.OPT_SORT_KEYS | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS
    return hashlib.sha256(orjson.dumps(metrics, default=str, option=options)).hexdigest()


def recorded_metrics(metrics: dict) -> dict[str, Any]:
    """The fields written with a run's metrics, every time they are written: the metrics, their
    summary and their digest."""
    return {"metrics": metrics, "summary": run_summary(metrics), "metrics_digest": metrics_digest(metrics)}


class Study(models.Model):
    """A what-if question: the same trace under several policies, compared with a baseline."""

    name = models.CharField(max_length=200, validators=[validate_long_name])
    description = models.TextField(blank=True)
    trace = models.ForeignKey(Trace, on_delete=models.PROTECT, related_name="studies")
    policies = models.ManyToManyField(Policy, through="Run", related_name="studies")
    baseline = models.ForeignKey(
        Policy,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="baseline_of",
        help_text="the policy the others are compared with",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="studies"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "studies"
        permissions = [("view_finance_report", "Can read finance reports")]

    def __str__(self) -> str:
        return self.name

    @property
    def baseline_run(self) -> Run | None:
        if self.baseline_id is None:
            return None
        return self.runs.filter(policy_id=self.baseline_id).first()

    @property
    def status(self) -> str:
        """``succeeded`` when every run did, ``failed`` when any failed and none is left, else the
        furthest state reached: ``running`` or ``queued``."""
        statuses = set(self.runs.values_list("status", flat=True))
        if not statuses:
            return RunStatus.QUEUED
        if statuses == {RunStatus.SUCCEEDED}:
            return RunStatus.SUCCEEDED
        if statuses <= {RunStatus.SUCCEEDED, RunStatus.FAILED}:
            return RunStatus.FAILED
        return (
            RunStatus.RUNNING
            if RunStatus.RUNNING in statuses or RunStatus.SUCCEEDED in statuses
            else RunStatus.QUEUED
        )

    @property
    def progress(self) -> float:
        values = list(self.runs.values_list("progress", flat=True))
        return sum(values) / len(values) if values else 0.0


class Run(WorkerAttempt):
    """One policy replayed over the study's trace.

    ``policy_snapshot`` is the exact policy dict replayed (policies change later);
    ``attempts`` counts the times a worker started it; ``heartbeat`` is refreshed while a
    worker runs it; ``metrics`` is ``ReplayResult.metrics`` (hundreds of KB for a big
    study: lists defer it and read ``summary``); ``result_file`` holds the per-job
    outcomes (``.npz``, job order of the trace).
    """

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="runs")
    policy = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="runs")
    policy_name = models.CharField(max_length=100, help_text="the policy's name when the study was made")
    policy_snapshot = models.JSONField()
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    worker = models.CharField(max_length=255, blank=True, help_text="the worker that ran the last attempt")
    metrics = models.JSONField(null=True, blank=True)
    summary = models.JSONField(
        null=True, blank=True, help_text="the small part of metrics that lists show (see run_summary)"
    )
    metrics_digest = models.CharField(
        max_length=64, blank=True, default="", help_text="sha256 of metrics, written with them"
    )
    result_file = models.FileField(upload_to="runs/", max_length=255, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "policy"], name="unique_run_per_study_policy")
        ]

    def __str__(self) -> str:
        return f"{self.study} / {self.policy_name}"

    def save(self, *args, **kwargs) -> None:
        """Metrics saved through the model get their digest too (``recorded_metrics`` for updates)."""
        update_fields = kwargs.get("update_fields")
        if "metrics" in self.__dict__ and (update_fields is None or "metrics" in update_fields):
            self.metrics_digest = metrics_digest(self.metrics)
            if update_fields is not None:
                kwargs["update_fields"] = {*update_fields, "metrics_digest"}
        super().save(*args, **kwargs)

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def duration_seconds(self) -> float | None:
        if self.started_at is None or self.finished_at is None:
            return None
        return (self.finished_at - self.started_at).total_seconds()


@receiver(post_delete, sender=Run)
def delete_result_file(sender, instance: Run, **kwargs) -> None:
    """A run's result file goes with it (and with its study)."""
    if instance.result_file.name:
        instance.result_file.storage.delete(instance.result_file.name)
