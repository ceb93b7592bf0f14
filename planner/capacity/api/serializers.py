"""Instance types, pools, policies and shares as JSON. Per-type numbers are objects keyed by
instance type name (``{"ml.g5.xlarge": 2}``), as in the policy JSON of SEMANTICS.md; so are a
policy's ``fair_sharing``, ``changes``, ``runnable_timeout_seconds`` and ``cohorts`` (sections
8-10 and 13) and a share's ``flavor_order``, ``flavor_fungibility`` and ``cohort`` (sections 12
and 13). Every write is checked by the engine's validator through the models
(``Policy.validate_with``): nothing is stored unless the whole policy is valid."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from planner.api.errors import as_drf
from planner.capacity.models import (
    DEFAULT_FAIR_STRATEGIES,
    CohortSpec,
    InstanceType,
    Policy,
    Pool,
    Share,
    ShareSpec,
    change_specs_of,
    strategies_key,
)
from planner.validators import validate_borrow_limit_percent, validate_fair_weight, validate_name
from scheduling.capacity_plans import TrainingPlan
from scheduling.errors import InputError
from scheduling.model import (
    MAX_CHANGES,
    MAX_FAIR_WEIGHT,
    MAX_INSTANCES,
    MIN_FAIR_WEIGHT,
    parse_instance_count,
)
from scheduling.traces.fields import parse_time


class NumberField(serializers.FloatField):
    """A JSON number: ``true`` is refused, not read as 1 (DRF's FloatField would take it)."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            raise serializers.ValidationError(f"{str(data).lower()} is not a number")
        return super().to_internal_value(data)


class InstanceCountField(serializers.IntegerField):
    """A number of instances, as the engine's validator takes it (0 to MAX_INSTANCES, whole)."""

    def __init__(self, **kwargs):
        super().__init__(min_value=0, max_value=MAX_INSTANCES, **kwargs)

    def to_internal_value(self, data) -> int:
        try:
            return parse_instance_count(data, "count")
        except InputError as error:
            raise serializers.ValidationError(error.reason) from None


def counts_field(**kwargs) -> serializers.DictField:
    return serializers.DictField(child=InstanceCountField(), **kwargs)


def check_type_names(names, field: str) -> None:
    known = set(InstanceType.objects.filter(name__in=list(names)).values_list("name", flat=True))
    unknown = sorted(set(names) - known)
    if unknown:
        raise serializers.ValidationError({field: f"unknown instance type(s): {', '.join(unknown)}"})


class InstanceTypeSerializer(serializers.ModelSerializer):
    class Meta:
        model = InstanceType
        fields = ["id", "name", "gpus", "hourly_price", "description"]


class PoolSerializer(serializers.ModelSerializer):
    capacity = counts_field(help_text="instances per instance type name")
    total_gpus = serializers.SerializerMethodField()

    class Meta:
        model = Pool
        fields = ["id", "name", "description", "capacity", "total_gpus", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]

    def get_total_gpus(self, pool: Pool) -> float:
        return pool.total_gpus()

    def validate(self, attrs: dict) -> dict:
        capacity = attrs.get("capacity")
        if capacity is not None:
            check_type_names(capacity, "capacity")
            if self.instance is not None:
                try:
                    self.instance.check_capacity(capacity)
                except DjangoValidationError as error:
                    raise as_drf(error) from None
        return attrs

    @transaction.atomic
    def create(self, validated: dict) -> Pool:
        capacity = validated.pop("capacity", {})
        pool = Pool.objects.create(**validated)
        pool.set_capacity(capacity)
        return pool

    @transaction.atomic
    def update(self, pool: Pool, validated: dict) -> Pool:
        capacity = validated.pop("capacity", None)
        pool = super().update(pool, validated)
        if capacity is not None:
            pool.set_capacity(capacity)
        return pool


class ShareFieldsSerializer(serializers.Serializer):
    """The knobs of one share, as in the policy JSON."""

    name = serializers.CharField(max_length=100, validators=[validate_name])
    strategy = serializers.ChoiceField(
        choices=Share._meta.get_field("strategy").choices, default="LEND_AND_BORROW"
    )
    borrow_limit_percent = NumberField(
        required=False, allow_null=True, default=None, validators=[validate_borrow_limit_percent]
    )
    in_share_preemption = serializers.ChoiceField(
        choices=Share._meta.get_field("in_share_preemption").choices, default="never"
    )
    reclaim = serializers.ChoiceField(choices=Share._meta.get_field("reclaim").choices, default="any")
    capacity = counts_field(default=dict, help_text="quota: instances per instance type name")
    borrowing_limit = counts_field(required=False, allow_null=True, default=None)
    lending_limit = counts_field(required=False, allow_null=True, default=None)
    fair_weight = NumberField(
        default=1,
        validators=[validate_fair_weight],
        help_text=f"Kueue fairSharing.weight: 0, or {MIN_FAIR_WEIGHT:g} to {MAX_FAIR_WEIGHT:,g}; "
        "only used with the policy's fair sharing on",
    )
    # Sections 12 and 13, as the policy JSON has them: the engine's parser checks them.
    flavor_order = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text="instance types in the order its jobs of several types try them (docs/semantics.md "
        "section 12); null: the policy's order",
    )
    flavor_fungibility = serializers.JSONField(
        required=False,
        allow_null=True,
        default=None,
        help_text='Kueue flavorFungibility: {"when_can_borrow", "when_can_preempt", "preference"}; null: '
        "Kueue's defaults",
    )
    cohort = serializers.CharField(
        required=False,
        allow_null=True,
        default=None,
        max_length=100,
        help_text="the cohort it is in (docs/semantics.md section 13); null: the root",
    )


def share_representation(share: Share) -> dict:
    spec = share.spec()
    return {
        "capacity": spec.capacity,
        "borrowing_limit": spec.borrowing_limit,
        "lending_limit": spec.lending_limit,
        "flavor_order": spec.flavor_order,
        "flavor_fungibility": spec.flavor_fungibility,
        "cohort": spec.cohort,
    }


def spec_of(attrs: dict, base: ShareSpec | None = None) -> ShareSpec:
    """A ShareSpec from validated fields, unspecified ones taken from ``base``."""
    base = base or ShareSpec(name=attrs.get("name", ""))
    values = {key: getattr(base, key) for key in ShareSpec.__dataclass_fields__}
    values.update({key: value for key, value in attrs.items() if key in values})
    return ShareSpec(**values)


class PolicyShareSerializer(ShareFieldsSerializer):
    """A share written inside its policy (the whole list replaces the policy's shares)."""

    id = serializers.IntegerField(read_only=True)

    def to_representation(self, share: Share) -> dict:
        return {
            "id": share.pk,
            "name": share.name,
            "strategy": share.strategy,
            "borrow_limit_percent": share.borrow_limit_percent,
            "in_share_preemption": share.in_share_preemption,
            "reclaim": share.reclaim,
            "fair_weight": share.fair_weight,
            **share_representation(share),
        }


# The keys of sections 8, 9 and 13 the API takes as in the policy JSON; the engine parses them.
RAW_POLICY_KEYS = ("fair_sharing", "changes", "cohorts")


class PolicySerializer(serializers.ModelSerializer):
    shares = PolicyShareSerializer(many=True, required=False, help_text="replaces every share when given")
    parent = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    fair_sharing = serializers.JSONField(
        required=False,
        allow_null=True,
        help_text='Kueue fairSharing: {"preemption_strategies": [...]} (docs/semantics.md section 8); '
        "null: off",
    )
    changes = serializers.JSONField(
        required=False,
        help_text="the calendar (docs/semantics.md section 9): [{time, capacity}, {time, share, capacity}]; "
        "times in seconds or ISO-8601; replaces every change when given",
    )
    cohorts = serializers.JSONField(
        required=False,
        help_text="the tree of cohorts (docs/semantics.md section 13): [{name, parent, capacity, "
        "borrowing_limit, lending_limit, fair_weight}]; replaces the tree when given ([]: flat)",
    )

    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "pool",
            "description",
            "queueing",
            "startup_seconds",
            "fair_sharing",
            "runnable_timeout_seconds",
            "parent",
            "shares",
            "cohorts",
            "changes",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def to_representation(self, policy: Policy) -> dict:
        data = super().to_representation(policy)
        data["shares"] = [
            PolicyShareSerializer().to_representation(share)
            for share in policy.shares.order_by("position", "id")
            .select_related("cohort")
            .prefetch_related("limits__instance_type")
        ]
        exported = policy.to_policy_dict()
        data["fair_sharing"] = exported.get("fair_sharing")
        data["changes"] = exported.get("changes", [])
        data["cohorts"] = exported.get("cohorts", [])
        return data

    def validate(self, attrs: dict) -> dict:
        shares = attrs.get("shares")
        if self.instance is None and not shares:
            raise serializers.ValidationError({"shares": "a policy needs at least one share"})
        specs = [spec_of(share) for share in shares] if shares is not None else None
        for spec in specs or []:
            check_type_names(
                set(spec.capacity) | set(spec.borrowing_limit or {}) | set(spec.lending_limit or {}), "shares"
            )
        raw = {key: attrs.pop(key) for key in RAW_POLICY_KEYS if key in attrs}
        if raw.get("changes") is not None:
            if isinstance(raw["changes"], list) and len(raw["changes"]) > MAX_CHANGES:
                # Refused before anything reads the list (the engine says the same, later).
                raise serializers.ValidationError(
                    {
                        "changes": f"{len(raw['changes']):,} changes: a policy's calendar holds at most "
                        f"{MAX_CHANGES:,}"
                    }
                )
            check_type_names(_change_type_names(raw["changes"]), "changes")
        if raw.get("cohorts") is not None:
            check_type_names(_cohort_type_names(raw["cohorts"]), "cohorts")
        policy = Policy(pk=self.instance.pk if self.instance else None)
        if self.instance is not None:
            for field in (
                "name",
                "pool_id",
                "description",
                "queueing",
                "startup_seconds",
                "runnable_timeout_seconds",
            ):
                setattr(policy, field, getattr(self.instance, field))
            policy.fair_sharing = self.instance.fair_sharing
            policy.fair_preemption_strategies = self.instance.fair_preemption_strategies
        for key, value in attrs.items():
            if key != "shares":
                setattr(policy, key, value)
        if policy.pool_id is None:
            return attrs
        overrides = {key: raw[key] for key in raw}
        if "fair_sharing" not in raw:
            overrides["fair_sharing"] = policy.settings_dict().get("fair_sharing")
        try:
            engine = policy.validate_with(shares=specs, overrides=overrides, error_field="shares")
        except DjangoValidationError as error:
            raise as_drf(_on_raw_field(error, raw)) from None
        if "fair_sharing" in raw:
            fair = engine.fair_sharing
            attrs["fair_sharing"] = fair is not None
            attrs["fair_preemption_strategies"] = (
                strategies_key(fair.preemption_strategies) if fair is not None else DEFAULT_FAIR_STRATEGIES
            )
        if "changes" in raw:
            attrs["calendar"] = change_specs_of(engine)
        if "cohorts" in raw:
            attrs["tree"] = [CohortSpec.from_engine(cohort) for cohort in engine.cohorts]
        return attrs

    @transaction.atomic
    def create(self, validated: dict) -> Policy:
        shares = validated.pop("shares")
        calendar = validated.pop("calendar", [])
        tree = validated.pop("tree", [])
        policy = Policy.objects.create(**validated)
        policy.replace_shares([spec_of(share) for share in shares], cohorts=tree)
        policy.replace_changes(calendar)
        return policy

    @transaction.atomic
    def update(self, policy: Policy, validated: dict) -> Policy:
        shares = validated.pop("shares", None)
        calendar = validated.pop("calendar", None)
        tree = validated.pop("tree", None)
        policy = super().update(policy, validated)
        if shares is not None:
            policy.replace_shares([spec_of(share) for share in shares], cohorts=tree)
        elif tree is not None:
            policy.replace_cohorts(tree)
        if calendar is not None:
            policy.replace_changes(calendar)
        return policy


class PolicyListSerializer(serializers.ModelSerializer):
    """A policy in a list: its settings and how many shares it has, not the shares themselves (a list
    of 50 policies of hundreds of shares each would be megabytes); they are at ``shares_url``."""

    parent = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)
    share_count = serializers.IntegerField(read_only=True, help_text="how many shares it has")
    shares_url = serializers.SerializerMethodField(help_text="its shares: /api/shares/?policy=<id>")

    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "pool",
            "description",
            "queueing",
            "startup_seconds",
            "runnable_timeout_seconds",
            "parent",
            "share_count",
            "shares_url",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_shares_url(self, policy: Policy) -> str:
        return f"/api/shares/?policy={policy.pk}"


def _change_type_names(changes) -> set[str]:
    """The instance types a raw ``changes`` list names (the engine says what else is wrong)."""
    names: set[str] = set()
    for change in changes if isinstance(changes, list) else []:
        capacity = change.get("capacity") if isinstance(change, dict) else None
        if isinstance(capacity, dict):
            names |= {name for name in capacity if isinstance(name, str)}
    return names


def _cohort_type_names(cohorts) -> set[str]:
    """The instance types a raw ``cohorts`` list names (the engine says what else is wrong)."""
    names: set[str] = set()
    for cohort in cohorts if isinstance(cohorts, list) else []:
        for key in ("capacity", "borrowing_limit", "lending_limit"):
            table = cohort.get(key) if isinstance(cohort, dict) else None
            if isinstance(table, dict):
                names |= {name for name in table if isinstance(name, str)}
    return names


def _on_raw_field(error: DjangoValidationError, raw: dict) -> DjangoValidationError:
    """An engine error about ``fair_sharing...`` or ``changes[i]...`` that went to ``shares`` (the
    serializer's catch-all) moved to the field the caller sent it in."""
    if not hasattr(error, "error_dict"):
        return error
    moved: dict[str, list[str]] = {}
    for field, messages in error.message_dict.items():
        for message in messages:
            target = field
            for key in raw:
                if field == "shares" and message.startswith(key):
                    target = key
            if field == "fair_preemption_strategies":
                target = "fair_sharing"
            moved.setdefault(target, []).append(message)
    return DjangoValidationError(moved)


class TrainingPlanSerializer(serializers.Serializer):
    """A training plan (docs/semantics.md section 9): ``instances`` more of a type in the pool and in a
    share's quota from ``start`` to ``end`` (seconds or ISO-8601, like the trace's times)."""

    instance_type = serializers.CharField(max_length=100)
    instances = serializers.IntegerField(min_value=1)
    share = serializers.CharField(max_length=100)
    start = serializers.CharField(help_text="seconds or an ISO-8601 timestamp")
    end = serializers.CharField(help_text="seconds or an ISO-8601 timestamp")

    def validate(self, attrs: dict) -> dict:
        times = {}
        for key in ("start", "end"):
            try:
                times[key], _ = parse_time(attrs[key], None, key)
            except InputError as error:
                raise serializers.ValidationError({key: error.reason}) from None
        attrs["plan"] = TrainingPlan(
            instance_type=attrs["instance_type"],
            instances=attrs["instances"],
            share=attrs["share"],
            start=times["start"],
            end=times["end"],
        )
        return attrs


class PolicyDuplicateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, validators=[validate_name])
    description = serializers.CharField(required=False, allow_blank=True)

    def validate_name(self, name: str) -> str:
        if Policy.objects.filter(name=name).exists():
            raise serializers.ValidationError(f"a policy named {name!r} already exists")
        return name


class ShareSerializer(ShareFieldsSerializer, serializers.ModelSerializer):
    """A share on its own (``/api/shares/``): edits are checked within its policy."""

    class Meta:
        model = Share
        fields = [
            "id",
            "policy",
            "name",
            "position",
            "strategy",
            "borrow_limit_percent",
            "in_share_preemption",
            "reclaim",
            "capacity",
            "borrowing_limit",
            "lending_limit",
            "fair_weight",
            "flavor_order",
            "flavor_fungibility",
            "cohort",
        ]

    def to_representation(self, share: Share) -> dict:
        data = serializers.ModelSerializer.to_representation(self, share)
        data.update(share_representation(share))
        return data

    def validate(self, attrs: dict) -> dict:
        share = Share(pk=self.instance.pk if self.instance else None)
        if self.instance is not None:
            for field in (
                "policy_id",
                "name",
                "position",
                "strategy",
                "borrow_limit_percent",
                "in_share_preemption",
                "reclaim",
                "fair_weight",
            ):
                setattr(share, field, getattr(self.instance, field))
        for key in (
            "policy",
            "name",
            "position",
            "strategy",
            "borrow_limit_percent",
            "in_share_preemption",
            "reclaim",
            "fair_weight",
        ):
            if key in attrs:
                setattr(share, key, attrs[key])
        if self.instance is not None and share.policy_id != self.instance.policy_id:
            raise serializers.ValidationError({"policy": "a share cannot move to another policy"})
        spec = spec_of(attrs, base=self.instance.spec() if self.instance else None)
        check_type_names(
            set(spec.capacity) | set(spec.borrowing_limit or {}) | set(spec.lending_limit or {}), "capacity"
        )
        try:
            share.check_in_policy(spec)
        except DjangoValidationError as error:
            raise as_drf(error) from None
        attrs["spec"] = spec
        return attrs

    @transaction.atomic
    def create(self, validated: dict) -> Share:
        spec = validated.pop("spec")
        share = Share(
            policy=validated["policy"], position=validated.get("position", validated["policy"].shares.count())
        )
        share.apply(spec)
        share.save()
        share.set_limits(spec)
        return share

    @transaction.atomic
    def update(self, share: Share, validated: dict) -> Share:
        spec = validated.pop("spec")
        share.apply(spec)
        share.position = validated.get("position", share.position)
        share.save()
        share.set_limits(spec)
        return share
