"""Sweeps as JSON: the create payload (trace, base policy, knobs, size, mode, constraints, urgent
shares), the list (status and progress) and the detail (every point and the Pareto front)."""

from __future__ import annotations

from rest_framework import serializers

from planner.advisor.models import Sweep, SweepMode
from planner.api.serializers import LaunchedSerializer
from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.validators import validate_name
from scheduling.advisor import MAX_VARIANTS


class SweepSerializer(LaunchedSerializer):
    trace = serializers.PrimaryKeyRelatedField(queryset=Trace.objects.all())
    base_policy = serializers.PrimaryKeyRelatedField(queryset=Policy.objects.all())
    knobs = serializers.JSONField(
        required=False,
        help_text='knob -> values: {"shares": [names], "strategy": ["RESERVE", "LEND", "LEND_AND_BORROW"], '
        '"borrow_limit_percent": [-1, 0, 50, 100, 200], "lending_limit": [null, 0, 0.5] (fraction of quota), '
        '"in_share_preemption": ["never", "lower_priority"]}; missing knobs take these defaults',
    )
    constraints = serializers.JSONField(
        required=False,
        help_text='[{"metric": "p95_wait_seconds", "share": "prod", "max": 3600}, '
        '{"metric": "utilization", "min": 0.7}, {"metric": "urgent_p95_wait_seconds", "max": 7200}, '
        '{"metric": "rerun_gpu_hours", "max": 50}]',
    )
    urgent_shares = serializers.ListField(
        child=serializers.CharField(), required=False, help_text="shares whose worst p95 wait is minimized"
    )
    mode = serializers.ChoiceField(choices=SweepMode.choices, required=False, default=SweepMode.GRID)
    size = serializers.IntegerField(min_value=1, max_value=MAX_VARIANTS, required=False, default=50)
    variants = serializers.SerializerMethodField()

    class Meta:
        model = Sweep
        fields = [
            "id",
            "name",
            "trace",
            "base_policy",
            "knobs",
            "mode",
            "size",
            "seed",
            "constraints",
            "urgent_shares",
            "study",
            "status",
            "progress",
            "variants",
            "created_by",
            "created_at",
        ]
        read_only_fields = ["study", "created_at"]
        extra_kwargs = {"name": {"required": False}, "seed": {"required": False}}

    def get_variants(self, sweep: Sweep) -> int:
        return sweep.variants.count()


class SweepPointSerializer(serializers.Serializer):
    variant = serializers.IntegerField(allow_null=True, help_text="null for the base policy")
    policy = serializers.IntegerField(allow_null=True)
    policy_name = serializers.CharField()
    label = serializers.CharField(help_text="what the variant changes from the base")
    kept = serializers.BooleanField()
    utilization = serializers.FloatField()
    urgent_p95_wait_seconds = serializers.FloatField()
    rerun_gpu_hours = serializers.FloatField()
    rerun_cost_usd = serializers.FloatField()
    share_p95_wait_seconds = serializers.DictField(child=serializers.FloatField())
    on_front = serializers.BooleanField()
    violations = serializers.ListField(child=serializers.CharField(), help_text="constraints it breaks")
    preemption_loops = serializers.IntegerField(
        help_text="jobs its replay left out for section 8's loop rule (0: its preemptions do not loop; "
        "else Kueue would keep evicting and re-admitting those workloads, issue #14543)"
    )


class SweepDetailSerializer(SweepSerializer):
    """With ``front`` (the non-dominated points that meet every constraint) and ``points`` (every
    replayed policy, the base included, with the constraints it breaks)."""

    front = SweepPointSerializer(many=True, read_only=True)
    points = SweepPointSerializer(many=True, read_only=True)

    class Meta(SweepSerializer.Meta):
        fields = [*SweepSerializer.Meta.fields, "front", "points"]


class KeepSerializer(serializers.Serializer):
    name = serializers.CharField(
        max_length=100,
        required=False,
        allow_blank=True,
        help_text="new policy name",
        validators=[validate_name],
    )
