"""A calibration: a trace with recorded start times replayed under the policy that was in force,
and how far the replayed waits are from the recorded ones (``scheduling.calibration``).

State lives in the database like a study's Run (status, progress, heartbeat, attempts, error), so
the page and the API read it directly and a calibration whose worker died is recognised and redone.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.worker_rows import FINISHED, RunStatus, WorkerAttempt


def calibration_summary(metrics: dict) -> dict:
    """What lists need: per block (all jobs, then each share) the counts, KS, p50/p95 and the
    verdict, without distributions and CDFs."""
    keep = ("name", "jobs", "compared", "excluded", "ks", "p50", "p95", "verdict", "preemptions")
    blocks = [metrics["all"], *metrics.get("shares", [])] if metrics else []
    return {"blocks": [{key: block[key] for key in keep if key in block} for block in blocks]}


class Calibration(WorkerAttempt):
    """The trace replayed under ``policy_snapshot`` (the policy in force, as it was when asked),
    compared with the waits the trace recorded. ``metrics`` is ``scheduling.calibration.calibrate``."""

    trace = models.ForeignKey(Trace, on_delete=models.CASCADE, related_name="calibrations")
    policy = models.ForeignKey(
        Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="calibrations"
    )
    policy_name = models.CharField(
        max_length=100, help_text="the policy's name when the calibration was made"
    )
    policy_snapshot = models.JSONField(help_text="the exact policy replayed")
    note = models.TextField(blank=True, help_text="what is assumed about the policy in force")
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    metrics = models.JSONField(null=True, blank=True)
    summary = models.JSONField(null=True, blank=True, help_text="see calibration_summary")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="calibrations",
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.trace} under {self.policy_name}"

    @property
    def finished(self) -> bool:
        return self.status in FINISHED
