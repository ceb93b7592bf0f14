"""Who owns capacity: instance types, pools, policies (named sets of quota shares) and shares.

A policy is stored relationally (one row per share, one row per share and instance type)
and turned into the SEMANTICS.md section 7 dict by ``Policy.to_policy_dict``. Whether it is
valid is decided by ``scheduling.model.parse_policy`` alone: ``Policy.validate_with`` runs it on the
policy as it would be after an edit and maps the engine's field path back to the field of
the model, form or API payload being edited. Model ``clean()`` methods, admin formsets and
API serializers all call it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction

from planner.validators import (
    validate_borrow_limit_percent,
    validate_gpus_per_instance,
    validate_hourly_price,
    validate_instance_count,
    validate_name,
    validate_startup_seconds,
)
from scheduling.errors import InputError
from scheduling.model import InSharePreemption, Queueing, Reclaim, Strategy, parse_policy
from scheduling.model import Policy as EnginePolicy
from scheduling.model import Share as EngineShare


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


class InstanceType(models.Model):
    """A kind of machine (``ml.g5.xlarge``, or ``gpu`` for traces counted in GPUs)."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    gpus = models.FloatField(
        default=1,
        validators=[MinValueValidator(0.001), validate_gpus_per_instance],
        help_text="GPUs per instance",
    )
    hourly_price = models.FloatField(
        default=0, validators=[validate_hourly_price], help_text="USD per instance-hour, for finance reports"
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class Pool(models.Model):
    """A pool of machines (AWS: service environment) with a capacity per instance type."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def capacity_dict(self) -> dict[str, int]:
        """Instances per instance type name."""
        return {c.instance_type.name: c.count for c in self.capacities.select_related("instance_type")}

    @property
    def capacity(self) -> dict[str, int]:
        return self.capacity_dict()

    def total_gpus(self) -> float:
        return sum(c.count * c.instance_type.gpus for c in self.capacities.select_related("instance_type"))

    def check_capacity(self, capacity: Mapping[str, int]) -> None:
        """Every policy of this pool must stay valid with the pool's capacity set to ``capacity``."""
        for policy in self.policies.all():
            policy.validate_with(capacity=capacity, error_field="capacity")

    @transaction.atomic
    def set_capacity(self, capacity: Mapping[str, int]) -> None:
        """Replace the capacity per type (names of existing instance types); not validated here."""
        types = {t.name: t for t in InstanceType.objects.filter(name__in=list(capacity))}
        self.capacities.exclude(instance_type__name__in=list(capacity)).delete()
        for type_name, count in capacity.items():
            PoolCapacity.objects.update_or_create(
                pool=self, instance_type=types[type_name], defaults={"count": count}
            )


class PoolCapacity(models.Model):
    """How many instances of one type a pool has (checked as a set: ``Pool.check_capacity``)."""

    pool = models.ForeignKey(Pool, on_delete=models.CASCADE, related_name="capacities")
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="pool_capacities")
    count = models.PositiveIntegerField(
        validators=[validate_instance_count], help_text="instances of this type in the pool"
    )

    class Meta:
        ordering = ["pool", "instance_type__name"]
        constraints = [
            models.UniqueConstraint(fields=["pool", "instance_type"], name="unique_pool_capacity_per_type")
        ]
        verbose_name_plural = "pool capacities"

    def __str__(self) -> str:
        return f"{self.pool}: {self.count} x {self.instance_type}"


@dataclass
class ShareSpec:
    """A share as the engine sees it: the proposed state of one share during an edit."""

    name: str
    strategy: str = Strategy.LEND_AND_BORROW.value
    borrow_limit_percent: float | None = None
    in_share_preemption: str = InSharePreemption.NEVER.value
    reclaim: str = Reclaim.ANY.value
    capacity: dict[str, int] = field(default_factory=dict)
    borrowing_limit: dict[str, int] | None = None
    lending_limit: dict[str, int] | None = None

    @classmethod
    def from_engine(cls, share: EngineShare) -> ShareSpec:
        return cls(
            name=share.name,
            strategy=share.strategy.value,
            borrow_limit_percent=share.borrow_limit_percent,
            in_share_preemption=share.in_share_preemption.value,
            reclaim=share.reclaim.value,
            capacity=dict(share.capacity),
            borrowing_limit=dict(share.borrowing_limit) if share.borrowing_limit is not None else None,
            lending_limit=dict(share.lending_limit) if share.lending_limit is not None else None,
        )

    def type_names(self) -> set[str]:
        """Every instance type this share has a quota or a limit of."""
        return set(self.capacity) | set(self.borrowing_limit or {}) | set(self.lending_limit or {})

    def to_dict(self) -> dict:
        out: dict = {
            "name": self.name,
            "capacity": dict(self.capacity),
            "strategy": self.strategy,
            "in_share_preemption": self.in_share_preemption,
            "reclaim": self.reclaim,
        }
        if self.borrow_limit_percent is not None:
            out["borrow_limit_percent"] = self.borrow_limit_percent
        if self.borrowing_limit:
            out["borrowing_limit"] = dict(self.borrowing_limit)
        if self.lending_limit:
            out["lending_limit"] = dict(self.lending_limit)
        return out


# Which model field an engine field path points at (after ``shares[i].``), for messages.
SHARE_FIELD_OF = {
    "name": "name",
    "capacity": "capacity",
    "strategy": "strategy",
    "borrow_limit_percent": "borrow_limit_percent",
    "borrowing_limit": "borrowing_limit",
    "lending_limit": "lending_limit",
    "in_share_preemption": "in_share_preemption",
    "reclaim": "reclaim",
}


class Policy(models.Model):
    """A named set of quota shares over a pool, with its queueing rules.

    ``parent`` is the policy this one was duplicated from (a variant).
    """

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    pool = models.ForeignKey(Pool, on_delete=models.PROTECT, related_name="policies")
    description = models.TextField(blank=True)
    queueing = models.CharField(
        max_length=32, choices=_choices(Queueing), default=Queueing.BEST_EFFORT_FIFO.value
    )
    startup_seconds = models.FloatField(
        default=0,
        validators=[validate_startup_seconds],
        help_text="seconds a started job holds capacity before work",
    )
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="variants",
        help_text="the policy this one was duplicated from",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "policies"

    def __str__(self) -> str:
        return self.name

    # -- the engine's view --------------------------------------------------------------

    def share_specs(self) -> list[ShareSpec]:
        shares = self.shares.prefetch_related("limits__instance_type").order_by("position", "id")
        return [share.spec() for share in shares]

    def to_policy_dict(
        self,
        *,
        shares: Iterable[ShareSpec] | None = None,
        capacity: Mapping[str, int] | None = None,
    ) -> dict:
        """The SEMANTICS.md section 7 policy JSON, optionally with proposed shares or capacity."""
        capacity = dict(capacity) if capacity is not None else self.pool.capacity_dict()
        specs = list(shares) if shares is not None else self.share_specs()
        type_names = set(capacity)
        for spec in specs:
            type_names |= set(spec.capacity) | set(spec.borrowing_limit or {}) | set(spec.lending_limit or {})
        known = {t.name: t for t in InstanceType.objects.filter(name__in=type_names)}
        return {
            "name": self.name,
            "description": self.description,
            "instance_types": {
                name: {"gpus": t.gpus, "hourly_price": t.hourly_price} for name, t in sorted(known.items())
            },
            "capacity": capacity,
            "queueing": self.queueing,
            "startup_seconds": self.startup_seconds,
            "shares": [spec.to_dict() for spec in specs],
        }

    def validate_with(
        self,
        *,
        shares: list[ShareSpec] | None = None,
        capacity: Mapping[str, int] | None = None,
        edited_share: int | None = None,
        error_field: str | None = None,
    ) -> EnginePolicy:
        """Validate the policy as it would be after an edit; the engine's parser decides.

        ``edited_share`` is the index (in ``shares``) of the share being edited: errors about
        it are reported on its own fields. Other errors go to ``error_field`` (or the whole
        object when None). Raises django ValidationError.
        """
        data = self.to_policy_dict(shares=shares, capacity=capacity)
        try:
            return parse_policy(data)
        except InputError as error:
            raise validation_error(error, data, edited_share=edited_share, error_field=error_field) from None

    def engine_policy(self) -> EnginePolicy:
        """The validated engine Policy for the stored state."""
        return self.validate_with()

    def clean(self) -> None:
        # A new policy has no shares yet: it is checked as a whole once shares are added.
        if self.pool_id is None or self.pk is None or not self.shares.exists():
            return
        self.validate_with(error_field=None)

    @classmethod
    @transaction.atomic
    def create_from_dict(
        cls, data: Mapping, *, pool: Pool, name: str | None = None, parent: Policy | None = None
    ):
        """A policy from the JSON of SEMANTICS.md section 7, on ``pool`` (whose capacity must hold
        it). Instance types are created when missing; raises ValidationError when invalid."""
        try:
            engine = parse_policy(data)
        except InputError as error:
            raise validation_error(error, data, edited_share=None, error_field=None) from None
        for instance_type in engine.instance_types.values():
            InstanceType.objects.get_or_create(
                name=instance_type.name,
                defaults={"gpus": instance_type.gpus, "hourly_price": instance_type.hourly_price},
            )
        policy = cls(
            name=name or engine.name,
            pool=pool,
            description=engine.description,
            queueing=engine.queueing.value,
            startup_seconds=engine.startup_seconds,
            parent=parent,
        )
        specs = [ShareSpec.from_engine(share) for share in engine.shares]
        policy.validate_with(shares=specs)
        policy.save()
        policy.replace_shares(specs)
        return policy

    # -- variants ------------------------------------------------------------------------

    @transaction.atomic
    def duplicate(self, name: str, description: str | None = None) -> Policy:
        """A copy with every share and limit, remembering this policy as its parent."""
        copy = Policy.objects.create(
            name=name,
            pool=self.pool,
            description=self.description if description is None else description,
            queueing=self.queueing,
            startup_seconds=self.startup_seconds,
            parent=self,
        )
        for share in self.shares.prefetch_related("limits").order_by("position", "id"):
            limits = list(share.limits.all())
            share.pk = None
            share.policy = copy
            share.save()
            for limit in limits:
                limit.pk = None
                limit.share = share
                limit.save()
        return copy

    @transaction.atomic
    def replace_shares(self, specs: list[ShareSpec]) -> None:
        """Store ``specs`` as this policy's shares (call ``validate_with(shares=specs)`` first).

        In two bulk inserts (shares, then their per-type rows): a policy of hundreds of shares is
        stored in a few queries, not three per share."""
        self.shares.all().delete()
        shares = Share.objects.bulk_create(
            [
                Share(
                    policy=self,
                    name=spec.name,
                    strategy=spec.strategy,
                    borrow_limit_percent=spec.borrow_limit_percent,
                    in_share_preemption=spec.in_share_preemption,
                    reclaim=spec.reclaim,
                    position=position,
                )
                for position, spec in enumerate(specs)
            ]
        )
        names = {name for spec in specs for name in spec.type_names()}
        types = {t.name: t for t in InstanceType.objects.filter(name__in=names)}
        ShareLimit.objects.bulk_create(
            [row for share, spec in zip(shares, specs, strict=True) for row in share.limit_rows(spec, types)]
        )


def validation_error(
    error: InputError, data: Mapping, *, edited_share: int | None, error_field: str | None
) -> ValidationError:
    """Map an engine field path (``shares[1].capacity.gpu``, ``capacity.gpu``) to a form field."""
    path = error.field or ""
    message = error.reason
    if path.startswith("shares[") and "]" in path:
        index = int(path[len("shares[") : path.index("]")])
        rest = path[path.index("]") + 1 :].lstrip(".")
        top, _, type_name = rest.partition(".")
        if index == edited_share:
            detail = f"{type_name}: {message}" if type_name else message
            return ValidationError({SHARE_FIELD_OF.get(top, error_field or "__all__"): detail})
        shares = data.get("shares") or []
        name = shares[index].get("name", f"#{index + 1}") if index < len(shares) else f"#{index + 1}"
        message = f"share {name}, {rest}: {message}" if rest else f"share {name}: {message}"
    elif path.startswith("capacity") and edited_share is not None and error_field is None:
        # Quotas adding up to more than the pool: the edited share's quota is what tipped it.
        return ValidationError({"capacity": message})
    elif path:
        message = f"{path}: {message}"
    if error_field:
        return ValidationError({error_field: message})
    return ValidationError(message)


class Share(models.Model):
    """A quota share (AWS) / ClusterQueue in a cohort (Kueue), with every knob of SEMANTICS.md.

    Per-type numbers (quota, borrowing and lending limits) live in ``ShareLimit`` rows.
    """

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="shares")
    name = models.CharField(max_length=100, validators=[validate_name])
    strategy = models.CharField(
        max_length=32, choices=_choices(Strategy), default=Strategy.LEND_AND_BORROW.value
    )
    borrow_limit_percent = models.FloatField(
        null=True,
        blank=True,
        validators=[validate_borrow_limit_percent],
        help_text="AWS borrowLimit: percent of its own capacity it may borrow; empty or -1 = unlimited",
    )
    in_share_preemption = models.CharField(
        max_length=40, choices=_choices(InSharePreemption), default=InSharePreemption.NEVER.value
    )
    reclaim = models.CharField(max_length=32, choices=_choices(Reclaim), default=Reclaim.ANY.value)
    position = models.PositiveIntegerField(default=0, help_text="order of the share in the policy")

    class Meta:
        ordering = ["policy", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "name"], name="unique_share_name_per_policy")
        ]

    def __str__(self) -> str:
        return f"{self.policy} / {self.name}"

    def spec(self, limits: Iterable[ShareLimit] | None = None) -> ShareSpec:
        """This share for the engine, with its stored limits or the proposed ``limits``."""
        rows = list(limits) if limits is not None else (list(self.limits.all()) if self.pk else [])
        borrowing = {r.instance_type.name: r.borrowing_limit for r in rows if r.borrowing_limit is not None}
        lending = {r.instance_type.name: r.lending_limit for r in rows if r.lending_limit is not None}
        return ShareSpec(
            name=self.name,
            strategy=self.strategy,
            borrow_limit_percent=self.borrow_limit_percent,
            in_share_preemption=self.in_share_preemption,
            reclaim=self.reclaim,
            capacity={r.instance_type.name: r.quota for r in rows},
            borrowing_limit=borrowing or None,
            lending_limit=lending or None,
        )

    def check_in_policy(self, spec: ShareSpec) -> EnginePolicy:
        """Validate the policy with this share replaced by (or, if new, extended with) ``spec``."""
        siblings = (
            list(self.policy.shares.exclude(pk=self.pk).order_by("position", "id")) if self.policy_id else []
        )
        specs = [s.spec() for s in siblings]
        key = (self.position, self.pk or float("inf"))
        index = sum(1 for s in siblings if (s.position, s.pk) < key)
        specs.insert(index, spec)
        return self.policy.validate_with(shares=specs, edited_share=index)

    def clean(self) -> None:
        if self.policy_id is None:
            return
        self.check_in_policy(self.spec())

    def limit_rows(self, spec: ShareSpec, types: Mapping[str, InstanceType]) -> list[ShareLimit]:
        """The unsaved ShareLimit rows of ``spec`` for this (saved) share."""
        return [
            ShareLimit(
                share=self,
                instance_type=types[type_name],
                quota=spec.capacity.get(type_name, 0),
                borrowing_limit=(spec.borrowing_limit or {}).get(type_name),
                lending_limit=(spec.lending_limit or {}).get(type_name),
            )
            for type_name in sorted(spec.type_names())
        ]

    def set_limits(self, spec: ShareSpec) -> None:
        """Store the per-type quota and limits of ``spec`` (instance types by name)."""
        names = spec.type_names()
        types = {t.name: t for t in InstanceType.objects.filter(name__in=names)}
        self.limits.exclude(instance_type__name__in=names).delete()
        for type_name in sorted(names):
            ShareLimit.objects.update_or_create(
                share=self,
                instance_type=types[type_name],
                defaults={
                    "quota": spec.capacity.get(type_name, 0),
                    "borrowing_limit": (spec.borrowing_limit or {}).get(type_name),
                    "lending_limit": (spec.lending_limit or {}).get(type_name),
                },
            )


class ShareLimit(models.Model):
    """A share's numbers for one instance type: quota, and optional Kueue-style limits.

    Rows are checked as a set, by ``Share.check_in_policy(share.spec(limits=rows))``.
    """

    share = models.ForeignKey(Share, on_delete=models.CASCADE, related_name="limits")
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="share_limits")
    quota = models.PositiveIntegerField(
        default=0, validators=[validate_instance_count], help_text="instances it may use without borrowing"
    )
    borrowing_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[validate_instance_count],
        help_text="at most this many instances above its quota (Kueue); empty = no limit",
    )
    lending_limit = models.PositiveIntegerField(
        null=True,
        blank=True,
        validators=[validate_instance_count],
        help_text="at most this many idle quota instances lent (Kueue); empty = all",
    )

    class Meta:
        ordering = ["share", "instance_type__name"]
        constraints = [
            models.UniqueConstraint(fields=["share", "instance_type"], name="unique_share_limit_per_type")
        ]

    def __str__(self) -> str:
        return f"{self.share}: {self.quota} x {self.instance_type}"
