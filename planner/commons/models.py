"""The commons-games figures of a trace (``scheduling.commons``), computed from its columns on
the first request and kept here, so the page and the API read a few kilobytes afterwards."""

from __future__ import annotations

from django.db import models

from planner.traces.models import Trace


class CommonsReport(models.Model):
    """Priority inflation and job splitting of one trace. ``params`` says what they were computed
    with (the version of the computation, GPUs per instance type): other params, other figures."""

    trace = models.OneToOneField(Trace, on_delete=models.CASCADE, related_name="commons_report")
    params = models.JSONField(default=dict)
    games = models.JSONField(default=dict, help_text="priority_inflation and job_splitting")
    seconds = models.FloatField(default=0, help_text="how long the computation took")
    computed_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"commons games of {self.trace}"
