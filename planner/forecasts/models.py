"""Forecasts: a queue snapshot replayed forward many times (SEMANTICS.md section 11).

A Forecast keeps its inputs as they were (the snapshot, the exact policy, the history trace) and
its run state (status, progress, error). Its samples are cut into chunks, each a row with a
study Run's claim / heartbeat / attempt fields (``planner.studies.attempts``), holding the raw
``SampleStarts`` it computed; the last chunk to finish merges them into ``result`` (FORECAST.json)
and one ForecastJob row per snapshot job, which the table and ``?search=`` read a page at a time.
"""

from __future__ import annotations

from django.db import models

from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.worker_rows import FINISHED, Launched, RunStatus, WorkerAttempt


class Arrivals(models.TextChoices):
    HISTORY = "history", "the previous week's arrivals, day by day"
    NONE = "none", "no new jobs"


class SnapshotFormat(models.TextChoices):
    AUTO = "auto", "detect"
    PLANNER = "planner", "planner JSON (SEMANTICS.md section 11)"
    KUEUE = "kueue-workloads", "Kueue: kubectl get workloads -A -o json"
    AWS_BATCH = "aws-batch", "AWS Batch: list-service-jobs pages and describe-service-job"


class Source(models.TextChoices):
    API = "api", "the API"
    PASTED = "pasted", "pasted on the page"
    UPLOADED = "uploaded", "an uploaded file"
    DEMO = "demo", "the demo pool now"


class Forecast(Launched):
    """When each job of ``snapshot`` starts under ``policy_snapshot``, as quantiles over ``samples``
    replays (durations and arrivals drawn from ``history`` with ``seed``)."""

    name = models.CharField(max_length=200, blank=True)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.API)
    snapshot_format = models.CharField(
        max_length=20, choices=SnapshotFormat.choices, default=SnapshotFormat.AUTO,
        help_text="the format the snapshot was read as (as asked; auto detects)",
    )  # fmt: skip
    snapshot = models.JSONField(help_text="the snapshot as planner JSON (SEMANTICS.md section 11)")
    snapshot_time = models.FloatField(help_text="T0: the instant of the snapshot (seconds)")
    running_jobs = models.PositiveIntegerField(default=0)
    pending_jobs = models.PositiveIntegerField(default=0)
    policy = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    policy_name = models.CharField(max_length=100)
    policy_snapshot = models.JSONField(help_text="the exact policy replayed")
    history = models.ForeignKey(
        Trace, null=True, blank=True, on_delete=models.PROTECT, related_name="forecasts",
        help_text="durations and arrivals are drawn from it; none: every job needs its own duration",
    )  # fmt: skip
    samples = models.PositiveIntegerField()
    seed = models.BigIntegerField(default=0)
    arrivals = models.CharField(max_length=16, choices=Arrivals.choices, default=Arrivals.NONE)
    horizon_days = models.FloatField(default=30)
    chunk_samples = models.PositiveIntegerField(help_text="samples per chunk (one worker task each)")
    chunks = models.PositiveIntegerField()
    chunks_done = models.PositiveIntegerField(default=0)
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    error = models.TextField(blank=True)
    result = models.JSONField(null=True, blank=True, help_text="FORECAST.json (SEMANTICS.md section 11)")
    shares = models.JSONField(
        null=True, blank=True, help_text="per share: the queue at T0 and when it starts (aggregates)"
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.name or f"forecast {self.pk}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def progress(self) -> float:
        """Chunks done / chunks: each chunk is an equal share of the samples (the last may be less)."""
        if self.status == RunStatus.SUCCEEDED:
            return 1.0
        return self.chunks_done / self.chunks if self.chunks else 0.0

    @property
    def jobs(self) -> int:
        return self.running_jobs + self.pending_jobs


class ForecastChunk(WorkerAttempt):
    """Samples ``first`` .. ``first + count - 1`` of a forecast, replayed by one worker task;
    ``starts`` is their raw ``SampleStarts`` (JSON) once it succeeded."""

    forecast = models.ForeignKey(Forecast, on_delete=models.CASCADE, related_name="chunk_rows")
    index = models.PositiveIntegerField()
    first = models.PositiveIntegerField()
    count = models.PositiveIntegerField()
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    starts = models.JSONField(null=True, blank=True, help_text="SampleStarts.to_json()")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["forecast", "index"]
        constraints = [models.UniqueConstraint(fields=["forecast", "index"], name="unique_forecast_chunk")]

    def __str__(self) -> str:
        return f"{self.forecast} / samples {self.first}-{self.first + self.count - 1}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class ForecastJob(models.Model):
    """One job of a finished forecast's FORECAST.json, as a row, so that a page of the table and a
    search over job ids and users read a few rows, not the whole result. Times are seconds, as in
    the snapshot; null where fewer than that share of samples started (or ended) it."""

    forecast = models.ForeignKey(Forecast, on_delete=models.CASCADE, related_name="job_rows")
    row = models.PositiveIntegerField(help_text="its place in FORECAST.json's jobs")
    job_id = models.CharField(max_length=255)
    user = models.CharField(max_length=255, blank=True)
    share = models.CharField(max_length=100)
    state = models.CharField(max_length=16, help_text="RUNNING or RUNNABLE at T0")
    position = models.PositiveIntegerField(null=True, blank=True, help_text="in its share's queue (pending)")
    reason = models.CharField(max_length=64, blank=True)
    instance_type = models.CharField(max_length=100, blank=True)
    instance_count = models.PositiveIntegerField(default=1)
    gpus = models.FloatField(default=0)
    start_p10 = models.FloatField(null=True, blank=True)
    start_p50 = models.FloatField(null=True, blank=True)
    start_p90 = models.FloatField(null=True, blank=True)
    end_p10 = models.FloatField(null=True, blank=True)
    end_p50 = models.FloatField(null=True, blank=True)
    end_p90 = models.FloatField(null=True, blank=True)
    p_start_1h = models.FloatField(null=True, blank=True)
    p_start_24h = models.FloatField(null=True, blank=True)
    baseline_requested_time = models.FloatField(null=True, blank=True)
    baseline_share_median_wait = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["forecast", "row"]
        indexes = [
            models.Index(fields=["forecast", "row"], name="forecast_job_row"),
            models.Index(fields=["forecast", "share", "position"], name="forecast_job_queue"),
            models.Index(fields=["forecast", "state", "start_p50"], name="forecast_job_soonest"),
        ]

    def __str__(self) -> str:
        return f"{self.forecast} / {self.job_id}"
