"""Curves and worth searches as JSON: the create payloads, the lists (status and progress) and
the details (every point with its summary; a curve's rows over its common window; a search's
sentence). $ fields are removed for viewers by the API's renderer (``planner.accounts.money``)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from planner.api.serializers import LaunchedSerializer
from planner.capacity.models import Policy
from planner.curves.models import CapacityCurve, WorthSearch
from planner.traces.models import Trace
from scheduling.capacity_curve import MAX_PLANS, MAX_POLICIES, MAX_SIZES
from scheduling.capacity_plans import TrainingPlan
from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES
from scheduling.scaling import SizeMode
from scheduling.traces.fields import parse_time
from scheduling.worth import DEFAULT_PARALLEL, MAX_PARALLEL, Metric

POINT_FIELDS = ["id", "size", "capacity", "gpus", "status", "progress", "error", "attempts", "summary"]


@extend_schema_field({"oneOf": [{"type": "number"}, {"type": "string"}]})
class TraceTimeField(serializers.Field):
    """A time as in traces: seconds, or an ISO-8601 timestamp (read back as Unix seconds)."""

    def to_internal_value(self, data) -> float:
        try:
            seconds, _ = parse_time(data, None, self.field_name)
        except InputError as error:
            raise serializers.ValidationError(error.reason) from None
        return seconds

    def to_representation(self, value) -> float:
        return float(value)


class CurvePlanSerializer(serializers.Serializer):
    """A training plan on a curve (docs/semantics.md section 9): ``instances`` more of a type in the pool
    and in ``share``'s quota from ``start`` to ``end``, added to ``policy`` (one of the curve's
    policies; default the first) at its own size and replayed as one more point."""

    policy = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        help_text="one of the curve's policies (default: the first)",
    )
    instance_type = serializers.CharField(max_length=100)
    instances = serializers.IntegerField(min_value=1)
    share = serializers.CharField(max_length=100)
    start = TraceTimeField(help_text="seconds or an ISO-8601 timestamp, as in the trace")
    end = TraceTimeField(help_text="seconds or an ISO-8601 timestamp: the instances go at this time")
    line = serializers.IntegerField(read_only=True, help_text="the policy's place in the curve's lines")
    label = serializers.CharField(read_only=True)

    def plan(self, attrs: dict) -> TrainingPlan:
        return TrainingPlan(
            attrs["instance_type"], attrs["instances"], attrs["share"], attrs["start"], attrs["end"]
        )


def point_dict(point, extra: tuple[str, ...] = ()) -> dict:
    return {name: getattr(point, name) for name in (*POINT_FIELDS, *extra)}


class CurveSerializer(LaunchedSerializer):
    trace = serializers.PrimaryKeyRelatedField(queryset=Trace.objects.all())
    policies = serializers.PrimaryKeyRelatedField(
        queryset=Policy.objects.all(), many=True, write_only=True,
        help_text=f"one line each, up to {MAX_POLICIES}; the first one's pool sets the sizes",
    )  # fmt: skip
    mode = serializers.ChoiceField(
        choices=[m.value for m in SizeMode], required=False, default=SizeMode.PROPORTIONAL.value,
        help_text="proportional: every instance type scaled alike; one_type: only instance_type changes",
    )  # fmt: skip
    instance_type = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        help_text="sizes count its instances (default: most GPUs)",
    )
    factors = serializers.ListField(
        child=serializers.FloatField(), required=False, write_only=True, max_length=MAX_SIZES,
        help_text="sizes as multiples of today's (default 0.75 ... 2, eight of them)",
    )  # fmt: skip
    sizes = serializers.ListField(
        child=serializers.IntegerField(min_value=1, max_value=MAX_INSTANCES), required=False,
        max_length=MAX_SIZES,
        help_text="exact sizes in instances of the sized type (instead of factors)",
    )  # fmt: skip
    urgent_shares = serializers.ListField(child=serializers.CharField(), required=False)
    plans = CurvePlanSerializer(
        many=True, required=False, max_length=MAX_PLANS,
        help_text="training plans, each one more replay: its policy at its own size with the plan",
    )  # fmt: skip

    class Meta:
        model = CapacityCurve
        fields = [
            "id", "name", "trace", "policies", "lines", "mode", "instance_type", "factors", "sizes",
            "urgent_shares", "plans", "status", "progress", "created_by", "created_at",
        ]  # fmt: skip
        read_only_fields = ["lines", "created_at"]
        extra_kwargs = {"name": {"required": False}}


class CurveDetailSerializer(CurveSerializer):
    """With ``points`` (each replay: size, capacity, GPUs, state, summary; ``plan``: the index of
    its training plan, or null on a policy's line), ``rows`` (the succeeded points of the lines
    over the curve's common window: utilization, worst p95 of the urgent shares, each share's p95,
    rerun per month) and ``plan_rows`` (each replayed plan: its row at its average GPUs, its base
    row without it, its hours, GPU-hours and cost in the window, and its ``effect`` on the worst
    p95 and ``share_effect`` on its share's p95, per $1,000 and per 1,000 GPU-hours)."""

    points = serializers.SerializerMethodField()
    rows = serializers.SerializerMethodField()
    plan_rows = serializers.SerializerMethodField()

    class Meta(CurveSerializer.Meta):
        fields = [*CurveSerializer.Meta.fields, "points", "rows", "plan_rows"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_points(self, curve: CapacityCurve) -> list[dict]:
        return [
            {
                "policy": point.policy_id,
                "policy_name": point.policy_name,
                "line": point.line,
                "plan": point.plan,
                **point_dict(point),
            }
            for point in curve.points.all()
        ]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_rows(self, curve: CapacityCurve) -> list[dict]:
        from planner.curves.figures import rows_of

        return [row.as_dict() for row in rows_of(curve)]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_plan_rows(self, curve: CapacityCurve) -> list[dict]:
        from planner.curves.figures import plan_rows_of, rows_of

        return [{"index": i, **row.as_dict()} for i, row in plan_rows_of(curve, rows_of(curve))]


class WorthSearchSerializer(LaunchedSerializer):
    trace = serializers.PrimaryKeyRelatedField(queryset=Trace.objects.all())
    policy_a = serializers.PrimaryKeyRelatedField(
        queryset=Policy.objects.all(), help_text="the policy whose pool is sized (say, the static split)"
    )
    policy_b = serializers.PrimaryKeyRelatedField(
        queryset=Policy.objects.all(), help_text="the policy to match at today's size"
    )
    metric = serializers.ChoiceField(choices=[m.value for m in Metric], required=False, default="share_p95")
    urgent_shares = serializers.ListField(child=serializers.CharField(), required=False)
    mode = serializers.ChoiceField(
        choices=[m.value for m in SizeMode], required=False, default=SizeMode.PROPORTIONAL.value
    )
    instance_type = serializers.CharField(required=False, allow_blank=True, default="")
    tolerance_seconds = serializers.FloatField(required=False, default=60, min_value=0)
    tolerance_percent = serializers.FloatField(required=False, default=2, min_value=0)
    upper = serializers.IntegerField(
        required=False, default=0, min_value=0, max_value=MAX_INSTANCES,
        help_text="the largest size tried (0: 4x today's)",
    )  # fmt: skip
    parallel = serializers.IntegerField(
        required=False, default=DEFAULT_PARALLEL, min_value=1, max_value=MAX_PARALLEL,
        help_text="sizes replayed at once in each step",
    )  # fmt: skip

    class Meta:
        model = WorthSearch
        fields = [
            "id", "name", "trace", "policy_a", "policy_a_name", "policy_b", "policy_b_name", "metric",
            "urgent_shares", "tolerance_seconds", "tolerance_percent", "mode", "instance_type", "today",
            "upper", "parallel", "status", "progress", "error", "steps", "answer_size", "exact",
            "created_by", "created_at", "finished_at",
        ]  # fmt: skip
        read_only_fields = [
            "policy_a_name", "policy_b_name", "today", "error", "steps", "answer_size", "exact",
            "created_at", "finished_at",
        ]  # fmt: skip
        extra_kwargs = {"name": {"required": False}}


class WorthSearchDetailSerializer(WorthSearchSerializer):
    """With ``sentence`` (the answer in words; $ only for finance and admin), ``answer_gpus`` and
    ``points``: B's target replay, then A at every size tried, with its step and verdict."""

    sentence = serializers.CharField(read_only=True)
    answer_gpus = serializers.FloatField(read_only=True, allow_null=True)
    points = serializers.SerializerMethodField()

    class Meta(WorthSearchSerializer.Meta):
        fields = [*WorthSearchSerializer.Meta.fields, "sentence", "answer_gpus", "points"]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_points(self, search: WorthSearch) -> list[dict]:
        return [point_dict(point, ("role", "step", "matches", "verdict")) for point in search.points.all()]
