"""Calibrations as JSON (the list without CDFs, the detail with every per-share figure), the create
payload (trace + policy) and the quota-table upload form."""

from __future__ import annotations

from rest_framework import serializers

from planner.calibration.models import Calibration
from planner.calibration.quota_import import KINDS, STRATEGIES
from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.validators import validate_name
from scheduling.quota_tables import DEFAULT_GPUS_PER_NODE


class CalibrationSerializer(serializers.ModelSerializer):
    trace = serializers.PrimaryKeyRelatedField(queryset=Trace.objects.all())
    trace_name = serializers.CharField(source="trace.name", read_only=True)
    policy = serializers.PrimaryKeyRelatedField(queryset=Policy.objects.all())
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = Calibration
        fields = [
            "id",
            "trace",
            "trace_name",
            "policy",
            "policy_name",
            "note",
            "status",
            "progress",
            "error",
            "attempts",
            "summary",
            "created_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = [name for name in fields if name not in ("trace", "policy", "note")]
        extra_kwargs = {"note": {"required": False}}


class CalibrationDetailSerializer(CalibrationSerializer):
    """With ``metrics``: for all jobs and per share, the recorded and simulated wait distributions,
    KS distance and p-value, p50/p95 ratios and differences, both CDFs (at most 500 points), the
    counts of jobs compared and left out, and the verdict."""

    class Meta(CalibrationSerializer.Meta):
        fields = [*CalibrationSerializer.Meta.fields, "policy_snapshot", "metrics"]
        read_only_fields = [*CalibrationSerializer.Meta.read_only_fields, "policy_snapshot", "metrics"]


class QuotaTableUploadSerializer(serializers.Serializer):
    """A quota table and how to read it; the new pool and policy are both called ``name``."""

    file = serializers.FileField()
    kind = serializers.ChoiceField(choices=list(KINDS), help_text="helios-day or nodes")
    name = serializers.CharField(max_length=100, validators=[validate_name])
    day = serializers.CharField(
        required=False, allow_blank=True, default="", help_text="helios-day: YYYY-MM-DD"
    )
    gpus_per_node = serializers.IntegerField(required=False, min_value=1, default=DEFAULT_GPUS_PER_NODE)
    strategy = serializers.ChoiceField(choices=list(STRATEGIES), required=False, default="RESERVE")
