"""Instance types, pools, policies and shares as JSON. Per-type numbers are objects keyed by
instance type name (``{"ml.g5.xlarge": 2}``), as in the policy JSON of SEMANTICS.md; every
write is checked by the engine's validator through the models (``Policy.validate_with``)."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import transaction
from rest_framework import serializers

from planner.api.errors import as_drf
from planner.capacity.models import InstanceType, Policy, Pool, Share, ShareSpec
from planner.validators import validate_borrow_limit_percent, validate_name
from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES, parse_instance_count


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
    borrow_limit_percent = serializers.FloatField(
        required=False, allow_null=True, default=None, validators=[validate_borrow_limit_percent]
    )
    in_share_preemption = serializers.ChoiceField(
        choices=Share._meta.get_field("in_share_preemption").choices, default="never"
    )
    reclaim = serializers.ChoiceField(choices=Share._meta.get_field("reclaim").choices, default="any")
    capacity = counts_field(default=dict, help_text="quota: instances per instance type name")
    borrowing_limit = counts_field(required=False, allow_null=True, default=None)
    lending_limit = counts_field(required=False, allow_null=True, default=None)


def share_representation(share: Share) -> dict:
    spec = share.spec()
    return {
        "capacity": spec.capacity,
        "borrowing_limit": spec.borrowing_limit,
        "lending_limit": spec.lending_limit,
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
            **share_representation(share),
        }


class PolicySerializer(serializers.ModelSerializer):
    shares = PolicyShareSerializer(many=True, required=False, help_text="replaces every share when given")
    parent = serializers.PrimaryKeyRelatedField(read_only=True, allow_null=True)

    class Meta:
        model = Policy
        fields = [
            "id",
            "name",
            "pool",
            "description",
            "queueing",
            "startup_seconds",
            "parent",
            "shares",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def to_representation(self, policy: Policy) -> dict:
        data = super().to_representation(policy)
        data["shares"] = [
            PolicyShareSerializer().to_representation(share)
            for share in policy.shares.order_by("position", "id").prefetch_related("limits__instance_type")
        ]
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
        policy = Policy(pk=self.instance.pk if self.instance else None)
        if self.instance is not None:
            for field in ("name", "pool_id", "description", "queueing", "startup_seconds"):
                setattr(policy, field, getattr(self.instance, field))
        for key, value in attrs.items():
            if key != "shares":
                setattr(policy, key, value)
        if policy.pool_id is None:
            return attrs
        try:
            if specs is not None or policy.pk is not None:
                policy.validate_with(shares=specs, error_field="shares")
        except DjangoValidationError as error:
            raise as_drf(error) from None
        return attrs

    @transaction.atomic
    def create(self, validated: dict) -> Policy:
        shares = validated.pop("shares")
        policy = Policy.objects.create(**validated)
        policy.replace_shares([spec_of(share) for share in shares])
        return policy

    @transaction.atomic
    def update(self, policy: Policy, validated: dict) -> Policy:
        shares = validated.pop("shares", None)
        policy = super().update(policy, validated)
        if shares is not None:
            policy.replace_shares([spec_of(share) for share in shares])
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
            "parent",
            "share_count",
            "shares_url",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_shares_url(self, policy: Policy) -> str:
        return f"/api/shares/?policy={policy.pk}"


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
        share = Share.objects.create(
            policy=validated["policy"],
            position=validated.get("position", validated["policy"].shares.count()),
            name=spec.name,
            strategy=spec.strategy,
            borrow_limit_percent=spec.borrow_limit_percent,
            in_share_preemption=spec.in_share_preemption,
            reclaim=spec.reclaim,
        )
        share.set_limits(spec)
        return share

    @transaction.atomic
    def update(self, share: Share, validated: dict) -> Share:
        spec = validated.pop("spec")
        share.name = spec.name
        share.strategy = spec.strategy
        share.borrow_limit_percent = spec.borrow_limit_percent
        share.in_share_preemption = spec.in_share_preemption
        share.reclaim = spec.reclaim
        share.position = validated.get("position", share.position)
        share.save()
        share.set_limits(spec)
        return share
