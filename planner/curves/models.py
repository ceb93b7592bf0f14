"""Capacity curves (a trace under a few policies at a series of pool sizes) and worth searches
(the smallest pool at which policy A matches policy B at today's size). Each replay is a point
row with the run state of a study's Run (status, progress, heartbeat, attempts, error), claimed
and recorded by ``planner.studies.attempts``, so a point whose worker died is redone, never lost.
A point keeps only ``scheduling.capacity_curve.point_summary`` (no per-job rows, no series). A
curve's training plans are points too, each at its policy's own size with the plan added.
"""

from __future__ import annotations

from django.db import models

from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.worker_rows import FINISHED, Launched, RunStatus, WorkerAttempt
from scheduling.capacity_plans import TrainingPlan
from scheduling.scaling import SizeMode
from scheduling.worth import METRIC_WORDS, Metric


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


SIZE_MODE_CHOICES = _choices(SizeMode)  # named in settings.SPECTACULAR_SETTINGS (one enum in the schema)


def combined_status(statuses: set[str]) -> str:
    """``succeeded`` when every replay did, ``failed`` when any failed and none is left, else
    ``running`` once one started, or ``queued``."""
    if not statuses:
        return RunStatus.QUEUED
    if statuses == {RunStatus.SUCCEEDED}:
        return RunStatus.SUCCEEDED
    if statuses <= set(FINISHED):
        return RunStatus.FAILED
    started = statuses & {RunStatus.RUNNING, RunStatus.SUCCEEDED, RunStatus.FAILED}
    return RunStatus.RUNNING if started else RunStatus.QUEUED


class ReplayPoint(WorkerAttempt):
    """One replay of the trace under ``policy_snapshot``: the policy scaled so that the sized
    type has ``size`` instances (``capacity`` per type, ``gpus`` in all)."""

    size = models.PositiveIntegerField(help_text="instances of the sized type")
    capacity = models.JSONField(help_text="the pool's capacity per instance type at this size")
    gpus = models.FloatField()
    policy_snapshot = models.JSONField(help_text="the exact (scaled) policy replayed")
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    summary = models.JSONField(null=True, blank=True, help_text="scheduling.capacity_curve.point_summary")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        abstract = True

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class CapacityCurve(Launched):
    """A trace replayed under each of ``lines`` (policies, in the order drawn) at each of ``sizes``."""

    name = models.CharField(max_length=200)
    trace = models.ForeignKey(Trace, on_delete=models.PROTECT, related_name="capacity_curves")
    mode = models.CharField(max_length=16, choices=SIZE_MODE_CHOICES, default=SizeMode.PROPORTIONAL.value)
    instance_type = models.CharField(max_length=100, help_text="the sized type: sizes count its instances")
    sizes = models.JSONField(help_text="pool sizes in instances of the sized type, ascending")
    today = models.PositiveIntegerField(default=0, help_text="the first policy's own size (instances)")
    lines = models.JSONField(help_text='[{"policy": id, "name": str}] in the order drawn')
    urgent_shares = models.JSONField(default=list, blank=True)
    plans = models.JSONField(
        default=list,
        blank=True,
        help_text='training plans, each one more replay: [{"line": i, "policy": id, "instance_type": '
        'str, "instances": n, "share": str, "start": s, "end": s, "label": str}]',
    )

    def __str__(self) -> str:
        return self.name

    def training_plan(self, index: int) -> TrainingPlan:
        plan = self.plans[index]
        return TrainingPlan(
            plan["instance_type"], plan["instances"], plan["share"], plan["start"], plan["end"]
        )

    @property
    def status(self) -> str:
        return combined_status(set(self.points.values_list("status", flat=True)))

    @property
    def progress(self) -> float:
        values = list(self.points.values_list("progress", flat=True))
        return sum(values) / len(values) if values else 0.0

    @property
    def finished(self) -> bool:
        return self.status in FINISHED


class CurvePoint(ReplayPoint):
    """A point of a policy's line, or (``plan`` set) the policy at its own size with one of the
    curve's training plans added."""

    curve = models.ForeignKey(CapacityCurve, on_delete=models.CASCADE, related_name="points")
    policy = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    policy_name = models.CharField(max_length=100)
    line = models.PositiveIntegerField(help_text="the policy's place in the curve's lines")
    plan = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="the training plan's place in the curve's plans (none: a line's point)",
    )

    class Meta:
        # A line's point before the plans at its size, on every database (PostgreSQL sorts NULL last).
        ordering = ["curve", "line", "size", models.F("plan").asc(nulls_first=True)]
        constraints = [
            models.UniqueConstraint(
                fields=["curve", "line", "size"],
                condition=models.Q(plan__isnull=True),
                name="unique_curve_point",
            ),
            models.UniqueConstraint(
                fields=["curve", "plan"],
                condition=models.Q(plan__isnull=False),
                name="unique_curve_plan_point",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.curve} / {self.policy_name} at {self.gpus:,.0f} GPUs"


class WorthSearch(Launched):
    """The smallest size at which ``policy_a`` is as good as ``policy_b`` at today's size
    (``today``, in instances of the sized type), on ``metric``; found step by step, each step's
    sizes replayed in parallel (``parallel`` of them)."""

    name = models.CharField(max_length=200)
    trace = models.ForeignKey(Trace, on_delete=models.PROTECT, related_name="worth_searches")
    policy_a = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    policy_a_name = models.CharField(max_length=100)
    policy_a_snapshot = models.JSONField(help_text="policy A as it was, at its own size")
    policy_b = models.ForeignKey(Policy, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    policy_b_name = models.CharField(max_length=100)
    policy_b_snapshot = models.JSONField(help_text="policy B as it was: today's pool")
    metric = models.CharField(
        max_length=16,
        choices=[(metric.value, METRIC_WORDS[metric]) for metric in Metric],
        default=Metric.SHARE_P95.value,
    )
    urgent_shares = models.JSONField(default=list, blank=True)
    tolerance_seconds = models.FloatField(default=60)
    tolerance_percent = models.FloatField(default=2)
    mode = models.CharField(max_length=16, choices=SIZE_MODE_CHOICES, default=SizeMode.PROPORTIONAL.value)
    instance_type = models.CharField(max_length=100)
    today = models.PositiveIntegerField(help_text="policy B's instances of the sized type")
    lower = models.PositiveIntegerField(default=1)
    upper = models.PositiveIntegerField(help_text="the largest size tried")
    parallel = models.PositiveIntegerField(default=3, help_text="sizes replayed at once per step")
    status = models.CharField(
        max_length=16, choices=RunStatus.choices, default=RunStatus.QUEUED, db_index=True
    )
    error = models.TextField(blank=True)
    steps = models.PositiveIntegerField(default=0)
    answer_size = models.PositiveIntegerField(null=True, blank=True)
    exact = models.BooleanField(default=False, help_text="the size one instance smaller was seen short")
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(Launched.Meta):
        verbose_name_plural = "worth searches"

    def __str__(self) -> str:
        return self.name

    @property
    def finished(self) -> bool:
        return self.status in FINISHED

    @property
    def progress(self) -> float:
        """Of the replays asked for so far (a search does not know how many steps it will take)."""
        values = list(self.points.values_list("progress", flat=True))
        return sum(values) / len(values) if values else 0.0


class PointRole(models.TextChoices):
    TARGET = "target"  # policy B at today's size
    CANDIDATE = "candidate"  # policy A at a size being tried


class SearchPoint(ReplayPoint):
    search = models.ForeignKey(WorthSearch, on_delete=models.CASCADE, related_name="points")
    role = models.CharField(max_length=16, choices=PointRole.choices)
    step = models.PositiveIntegerField()
    matches = models.BooleanField(null=True, blank=True, help_text="A here is as good as B at today's size")
    verdict = models.CharField(max_length=300, blank=True, help_text="why it matches or falls short")

    class Meta:
        ordering = ["search", "step", "role", "size"]
        constraints = [models.UniqueConstraint(fields=["search", "role", "size"], name="unique_search_point")]

    def __str__(self) -> str:
        return f"{self.search} / {self.role} at {self.gpus:,.0f} GPUs"
