"""Advisor sweeps: a trace and a base policy, the knobs swept and the constraints set, and one
variant row per policy the sweep made. The replays are one Study (one Run per variant, plus the
base), so status and progress are the study's."""

from __future__ import annotations

from django.db import models

from planner.capacity.models import Policy
from planner.studies.models import RunStatus, Study
from planner.traces.models import Trace
from planner.validators import validate_name
from planner.worker_rows import Launched


class SweepMode(models.TextChoices):
    GRID = "grid"
    RANDOM = "random"


class Sweep(Launched):
    """Policy variants of ``base_policy`` replayed over ``trace``, compared on a Pareto front."""

    name = models.CharField(max_length=100, validators=[validate_name])
    trace = models.ForeignKey(Trace, on_delete=models.PROTECT, related_name="sweeps")
    base_policy = models.ForeignKey(Policy, on_delete=models.PROTECT, related_name="sweeps")
    knobs = models.JSONField(default=dict, blank=True, help_text="knob name -> values to try")
    mode = models.CharField(max_length=8, choices=SweepMode.choices, default=SweepMode.GRID)
    size = models.PositiveIntegerField(default=50, help_text="at most this many variants")
    seed = models.IntegerField(default=0)
    constraints = models.JSONField(default=list, blank=True)
    urgent_shares = models.JSONField(default=list, blank=True)
    study = models.OneToOneField(
        Study, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweep"
    )

    def __str__(self) -> str:
        return self.name

    @property
    def status(self) -> str:
        return self.study.status if self.study_id else RunStatus.FAILED

    @property
    def progress(self) -> float:
        return self.study.progress if self.study_id else 0.0

    @property
    def finished(self) -> bool:
        return self.status in (RunStatus.SUCCEEDED, RunStatus.FAILED)


class SweepVariant(models.Model):
    """One policy the sweep made (a child of the base). ``kept`` variants survive the sweep."""

    sweep = models.ForeignKey(Sweep, on_delete=models.CASCADE, related_name="variants")
    policy = models.ForeignKey(
        Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="sweep_variants"
    )
    number = models.PositiveIntegerField()
    label = models.TextField(help_text="what the variant changes from the base policy")
    changes = models.JSONField(default=dict)
    kept = models.BooleanField(default=False, help_text="saved as a policy: not deleted with the sweep")

    class Meta:
        ordering = ["sweep", "number"]
        constraints = [models.UniqueConstraint(fields=["sweep", "number"], name="unique_variant_number")]

    def __str__(self) -> str:
        return f"{self.sweep} v{self.number}"
