"""Who owns capacity: instance types, pools, policies (named sets of quota shares) and shares.

A policy is stored relationally (one row per share, one row per share and instance type)
and turned into the SEMANTICS.md section 7 dict by ``Policy.to_policy_dict``. Whether it is
valid is decided by ``scheduling.model.parse_policy`` alone: ``Policy.validate_with`` runs it on the
policy as it would be after an edit and maps the engine's field path back to the field of
the model, form or API payload being edited. Model ``clean()`` methods, admin formsets and
API serializers all call it.

A policy's calendar (SEMANTICS.md section 9) is one ``CalendarChange`` row per instant, target
(the pool, or one share) and instance type; the policy JSON groups the rows of one instant and
target into one change.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from django.core.exceptions import ValidationError
from django.core.validators import MinValueValidator
from django.db import models, transaction
from django.db.models import F

from planner.validators import (
    validate_borrow_limit_percent,
    validate_gpus_per_instance,
    validate_hourly_price,
    validate_instance_count,
    validate_name,
    validate_startup_seconds,
)
from scheduling.capacity_plans import TrainingPlan, add_training_plan
from scheduling.errors import InputError
from scheduling.model import (
    FAIR_STRATEGY_LISTS,
    InSharePreemption,
    Queueing,
    Reclaim,
    Strategy,
    parse_policy,
    share_dict,
)
from scheduling.model import Cohort as EngineCohort
from scheduling.model import Policy as EnginePolicy
from scheduling.model import Share as EngineShare


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


def strategies_key(strategies: Iterable) -> str:
    """A list of fair-sharing preemption strategies as the one string a model field stores."""
    return ",".join(getattr(s, "value", s) for s in strategies)


FAIR_STRATEGY_CHOICES = [
    (strategies_key(strategies), " then ".join(s.value for s in strategies))
    for strategies in FAIR_STRATEGY_LISTS
]
DEFAULT_FAIR_STRATEGIES = strategies_key(FAIR_STRATEGY_LISTS[2])


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
    fair_weight: float = 1.0
    # Section 12: the order its jobs try their types in (None: the policy's), and flavorFungibility
    # as the policy JSON writes it (None: Kueue's defaults).
    flavor_order: list[str] | None = None
    flavor_fungibility: dict[str, str] | None = None
    cohort: str | None = None  # section 13: the cohort it is in (None: the root)

    @classmethod
    def from_engine(cls, share: EngineShare, type_order: list[str] | None = None) -> ShareSpec:
        """``type_order``: the share's whole flavor order in the engine policy. Kept whole whenever
        there are several types, because a stored policy lists its types by name, not in the order
        the engine policy had (the order would change under it)."""
        engine_dict = share_dict(share)  # (the engine's JSON: the keys it writes only when set)
        order = list(type_order) if type_order and len(type_order) > 1 else engine_dict.get("flavor_order")
        return cls(
            name=share.name,
            strategy=share.strategy.value,
            borrow_limit_percent=share.borrow_limit_percent,
            in_share_preemption=share.in_share_preemption.value,
            reclaim=share.reclaim.value,
            capacity=dict(share.capacity),
            borrowing_limit=dict(share.borrowing_limit) if share.borrowing_limit is not None else None,
            lending_limit=dict(share.lending_limit) if share.lending_limit is not None else None,
            fair_weight=share.fair_weight,
            flavor_order=order,
            flavor_fungibility=engine_dict.get("flavor_fungibility"),
            cohort=share.cohort,
        )

    def type_names(self) -> set[str]:
        """Every instance type this share has a quota or a limit of."""
        return _type_names(self)

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
        _write_limits(self, out)
        if self.fair_weight != 1:
            out["fair_weight"] = self.fair_weight
        if self.flavor_order:
            out["flavor_order"] = list(self.flavor_order)
        if self.flavor_fungibility:
            out["flavor_fungibility"] = dict(self.flavor_fungibility)
        if self.cohort:
            out["cohort"] = self.cohort
        return out


@dataclass
class CohortSpec:
    """A cohort as the engine sees it (SEMANTICS.md section 13): the proposed state of one cohort
    during an edit. ``parent`` None is the root."""

    name: str
    parent: str | None = None
    capacity: dict[str, int] = field(default_factory=dict)
    borrowing_limit: dict[str, int] | None = None
    lending_limit: dict[str, int] | None = None
    fair_weight: float = 1.0

    @classmethod
    def from_engine(cls, cohort: EngineCohort) -> CohortSpec:
        return cls(
            name=cohort.name,
            parent=cohort.parent,
            capacity=dict(cohort.capacity),
            borrowing_limit=dict(cohort.borrowing_limit) if cohort.borrowing_limit else None,
            lending_limit=dict(cohort.lending_limit) if cohort.lending_limit else None,
            fair_weight=cohort.fair_weight,
        )

    def type_names(self) -> set[str]:
        """Every instance type this cohort has a quota or a limit of."""
        return _type_names(self)

    def to_dict(self) -> dict:
        out: dict = {"name": self.name}
        if self.parent:
            out["parent"] = self.parent
        out["capacity"] = dict(self.capacity)
        _write_limits(self, out)
        if self.fair_weight != 1:
            out["fair_weight"] = self.fair_weight
        return out


# --- a node's numbers per type (a share's or a cohort's: the same three, section 13) ------------


def _type_names(spec: ShareSpec | CohortSpec) -> set[str]:
    return set(spec.capacity) | set(spec.borrowing_limit or {}) | set(spec.lending_limit or {})


def _write_limits(spec: ShareSpec | CohortSpec, out: dict) -> None:
    """The policy JSON's limits of a node, written only when set."""
    if spec.borrowing_limit:
        out["borrowing_limit"] = dict(spec.borrowing_limit)
    if spec.lending_limit:
        out["lending_limit"] = dict(spec.lending_limit)


def _numbers_for(spec: ShareSpec | CohortSpec, type_name: str) -> dict[str, int | None]:
    """A node's stored row of one type: its quota and its two limits (None: not set)."""
    return {
        "quota": spec.capacity.get(type_name, 0),
        "borrowing_limit": (spec.borrowing_limit or {}).get(type_name),
        "lending_limit": (spec.lending_limit or {}).get(type_name),
    }


def _numbers_of(rows: Iterable[ShareLimit] | Iterable[CohortLimit]) -> dict:
    """A node's spec fields from its stored rows (``_numbers_for`` backwards)."""
    rows = list(rows)
    borrowing = {r.instance_type.name: r.borrowing_limit for r in rows if r.borrowing_limit is not None}
    lending = {r.instance_type.name: r.lending_limit for r in rows if r.lending_limit is not None}
    return {
        "capacity": {r.instance_type.name: r.quota for r in rows},
        "borrowing_limit": borrowing or None,
        "lending_limit": lending or None,
    }


def _limit_fields(
    quota: str, borrowing: str, lending: str
) -> tuple[models.PositiveIntegerField, models.PositiveIntegerField, models.PositiveIntegerField]:
    """The columns of a node's row of one type: its quota and Kueue's two limits (empty: none), with
    help texts that say what they mean for that kind of node."""
    return (
        models.PositiveIntegerField(default=0, validators=[validate_instance_count], help_text=quota),
        models.PositiveIntegerField(
            null=True, blank=True, validators=[validate_instance_count], help_text=borrowing
        ),
        models.PositiveIntegerField(
            null=True, blank=True, validators=[validate_instance_count], help_text=lending
        ),
    )


def renamed_in_tree(
    cohorts: list[CohortSpec], shares: list[ShareSpec], old: str, new: str
) -> tuple[list[CohortSpec], list[ShareSpec]]:
    """The tree with cohort ``old`` called ``new`` wherever a cohort or share names it as parent
    (what a rename in the editor means: its children follow it)."""
    if old == new:
        return cohorts, shares
    return (
        [replace(c, parent=new) if c.parent == old else c for c in cohorts],
        [replace(s, cohort=new) if s.cohort == old else s for s in shares],
    )


@dataclass(frozen=True)
class ChangeSpec:
    """One row of a policy's calendar as the engine sees it: from ``time`` on, the pool (``share``
    None) or that share has ``count`` instances of ``instance_type``."""

    time: float
    share: str | None
    instance_type: str
    count: int

    def target(self) -> str:
        return "the pool" if self.share is None else f"share {self.share}"


def changes_to_dicts(specs: Iterable[ChangeSpec]) -> tuple[list[dict], list[dict[str, int]]]:
    """The section 9 ``changes`` list for calendar rows: sorted by time (stable), the rows of one
    instant and target that follow each other grouped into one change. Also, per change, the
    index of the row behind each of its types (an error names a change and a type; a form shows
    it next to the row)."""
    rows = sorted(enumerate(specs), key=lambda item: item[1].time)
    changes: list[dict] = []
    origins: list[dict[str, int]] = []
    for index, spec in rows:
        last = changes[-1] if changes else None
        if (
            last is not None
            and last["time"] == spec.time
            and last.get("share") == spec.share
            and spec.instance_type not in last["capacity"]
        ):
            last["capacity"][spec.instance_type] = spec.count
            origins[-1][spec.instance_type] = index
            continue
        change: dict = {"time": spec.time}
        if spec.share is not None:
            change["share"] = spec.share
        change["capacity"] = {spec.instance_type: spec.count}
        changes.append(change)
        origins.append({spec.instance_type: index})
    return changes, origins


def change_specs_of(engine: EnginePolicy) -> list[ChangeSpec]:
    """Calendar rows for an engine policy's changes; a later setting of the same instant, target
    and type wins, as in the engine, so each of them is one row."""
    rows: dict[tuple[float, str | None, str], ChangeSpec] = {}
    for change in engine.changes:
        for type_name, count in change.capacity.items():
            key = (change.time, change.share, type_name)
            rows.pop(key, None)
            rows[key] = ChangeSpec(change.time, change.share, type_name, count)
    return list(rows.values())


def duplicate_change_rows(specs: list[ChangeSpec]) -> dict[int, int]:
    """Rows that set the same target and type at the same instant as an earlier row, mapped to
    that earlier row: the engine would keep the later one, a table must say which it means."""
    first: dict[tuple[float, str | None, str], int] = {}
    out = {}
    for index, spec in enumerate(specs):
        key = (spec.time, spec.share, spec.instance_type)
        if key in first:
            out[index] = first[key]
        else:
            first[key] = index
    return out


class CalendarError(ValidationError):
    """A ValidationError about one calendar row: ``row`` is its index in the rows validated."""

    def __init__(self, message, row: int):
        super().__init__(message)
        self.row = row


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
    "fair_weight": "fair_weight",
    "flavor_order": "flavor_order",
    "flavor_fungibility": "flavor_fungibility",
    "cohort": "cohort",
}
# Which cohort form field an engine field path points at (after ``cohorts[i].``).
COHORT_FIELD_OF = {
    "name": "name",
    "parent": "parent",
    "capacity": "capacity",
    "borrowing_limit": "borrowing_limit",
    "lending_limit": "lending_limit",
    "fair_weight": "fair_weight",
}
# The policy's own fields an engine field path can name (the rest go to the whole policy).
POLICY_FIELD_OF = {
    "queueing": "queueing",
    "startup_seconds": "startup_seconds",
    "runnable_timeout_seconds": "runnable_timeout_seconds",
    "fair_sharing": "fair_preemption_strategies",
}
# The policy's settings a variant copies (besides its shares and calendar).
POLICY_SETTINGS = (
    "queueing",
    "startup_seconds",
    "fair_sharing",
    "fair_preemption_strategies",
    "runnable_timeout_seconds",
)


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
    fair_sharing = models.BooleanField(
        default=False,
        help_text="Kueue fairSharing: admit by each share's value (borrowed GPUs / weight), "
        "preempt to even it",
    )
    fair_preemption_strategies = models.CharField(
        max_length=64,
        choices=FAIR_STRATEGY_CHOICES,
        default=DEFAULT_FAIR_STRATEGIES,
        help_text="Kueue fairSharing.preemptionStrategies, tried in this order (only with fair sharing on)",
    )
    runnable_timeout_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="AWS jobStateTimeLimitActions: cancel a job RUNNABLE this long without a break; "
        "empty = never",
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
        shares = (
            self.shares.select_related("cohort")
            .prefetch_related("limits__instance_type")
            .order_by("position", "id")
        )
        return [share.spec() for share in shares]

    def cohort_specs(self) -> list[CohortSpec]:
        """The stored tree of cohorts (section 13), in their order; empty for a flat policy."""
        if self.pk is None:
            return []
        cohorts = (
            Cohort.objects.filter(policy_id=self.pk)
            .select_related("parent")
            .prefetch_related("limits__instance_type")
        )
        return [cohort.spec() for cohort in cohorts]

    def change_specs(self, renamed: Mapping[str, str] | None = None) -> list[ChangeSpec]:
        """The stored calendar rows in their order; ``renamed`` maps a share's stored name to the
        name it is about to get (so that an edit is checked with its calendar)."""
        if self.pk is None:
            return []
        renamed = renamed or {}
        # Plain tuples, not model objects: a calendar of 10,000 rows is read on every page, export
        # and API call about the policy, and building its model instances took seconds.
        rows = self.changes.values_list("time", "share__name", "instance_type__name", "count")
        return [
            ChangeSpec(
                time=time,
                share=None if share is None else renamed.get(share, share),
                instance_type=type_name,
                count=count,
            )
            for time, share, type_name, count in rows
        ]

    def settings_dict(self) -> dict:
        """Sections 8 and 10 of the policy JSON from this policy's fields (absent when off)."""
        out: dict = {}
        if self.fair_sharing:
            out["fair_sharing"] = {"preemption_strategies": self.fair_preemption_strategies.split(",")}
        if self.runnable_timeout_seconds is not None:
            out["runnable_timeout_seconds"] = self.runnable_timeout_seconds
        return out

    def to_policy_dict(
        self,
        *,
        shares: Iterable[ShareSpec] | None = None,
        capacity: Mapping[str, int] | None = None,
        changes: Iterable[ChangeSpec] | None = None,
        cohorts: Iterable[CohortSpec] | None = None,
    ) -> dict:
        """The SEMANTICS.md policy JSON (sections 7-10 and 13), optionally with proposed shares,
        capacity, calendar or tree of cohorts."""
        return self._policy_dict_and_origins(
            shares=shares, capacity=capacity, changes=changes, cohorts=cohorts
        )[0]

    def _policy_dict_and_origins(
        self,
        *,
        shares: Iterable[ShareSpec] | None = None,
        capacity: Mapping[str, int] | None = None,
        changes: Iterable[ChangeSpec] | None = None,
        cohorts: Iterable[CohortSpec] | None = None,
    ) -> tuple[dict, list[dict[str, int]]]:
        capacity = dict(capacity) if capacity is not None else self.pool.capacity_dict()
        specs = list(shares) if shares is not None else self.share_specs()
        calendar = list(changes) if changes is not None else self.change_specs()
        tree = list(cohorts) if cohorts is not None else self.cohort_specs()
        type_names = set(capacity) | {row.instance_type for row in calendar}
        for spec in specs:
            type_names |= spec.type_names() | set(spec.flavor_order or ())
        for cohort in tree:
            type_names |= cohort.type_names()
        known = {t.name: t for t in InstanceType.objects.filter(name__in=type_names)}
        change_dicts, origins = changes_to_dicts(calendar)
        data = {
            "name": self.name,
            "description": self.description,
            "instance_types": {
                name: {"gpus": t.gpus, "hourly_price": t.hourly_price} for name, t in sorted(known.items())
            },
            "capacity": capacity,
            "queueing": self.queueing,
            "startup_seconds": self.startup_seconds,
            "shares": [spec.to_dict() for spec in specs],
            **self.settings_dict(),
        }
        if change_dicts:
            data["changes"] = change_dicts
        if tree:
            data["cohorts"] = [cohort.to_dict() for cohort in tree]
        return data, origins

    def validate_with(
        self,
        *,
        shares: list[ShareSpec] | None = None,
        capacity: Mapping[str, int] | None = None,
        changes: list[ChangeSpec] | None = None,
        cohorts: list[CohortSpec] | None = None,
        overrides: Mapping | None = None,
        edited_share: int | None = None,
        edited_cohort: int | None = None,
        error_field: str | None = None,
    ) -> EnginePolicy:
        """Validate the policy as it would be after an edit; the engine's parser decides.

        ``edited_share`` is the index (in ``shares``) of the share being edited: errors about
        it are reported on its own fields, and so are those about ``edited_cohort`` (its index in
        ``cohorts``). An error about the calendar is a CalendarError naming
        the row (in ``changes``, or the stored rows). Other errors go to ``error_field`` (or the
        whole object when None). ``overrides`` replaces top-level keys of the policy JSON with what
        a caller sent as is (the API's ``fair_sharing`` or ``changes``): the engine parses them.
        Raises django ValidationError.
        """
        calendar = list(changes) if changes is not None else self.change_specs()
        data, origins = self._policy_dict_and_origins(
            shares=shares, capacity=capacity, changes=calendar, cohorts=cohorts
        )
        for key, value in (overrides or {}).items():
            if value is None:
                data.pop(key, None)
            else:
                data[key] = value
        try:
            return parse_policy(data)
        except InputError as error:
            if (error.field or "").startswith("changes[") and "changes" not in (overrides or {}):
                raise calendar_error(error, calendar, origins, error_field=error_field) from None
            raise validation_error(
                error, data, edited_share=edited_share, edited_cohort=edited_cohort, error_field=error_field
            ) from None

    @transaction.atomic
    def add_training_plan(self, plan: TrainingPlan) -> list[ChangeSpec]:
        """Write a training plan's changes into the calendar (``scheduling.capacity_plans``: four
        changes, and the ones inside the plan raised); returns the new calendar. Raises
        ValidationError naming the plan's field, or the calendar row that breaks section 1."""
        engine = self.engine_policy()
        try:
            planned = add_training_plan(engine, plan)
        except InputError as error:
            raise ValidationError({error.field or "__all__": error.reason}) from None
        calendar = change_specs_of(planned)
        self.validate_with(changes=calendar)
        self.replace_changes(calendar)
        return calendar

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
        fair = engine.fair_sharing
        policy = cls(
            name=name or engine.name,
            pool=pool,
            description=engine.description,
            queueing=engine.queueing.value,
            startup_seconds=engine.startup_seconds,
            fair_sharing=fair is not None,
            fair_preemption_strategies=(
                strategies_key(fair.preemption_strategies) if fair is not None else DEFAULT_FAIR_STRATEGIES
            ),
            runnable_timeout_seconds=engine.runnable_timeout_seconds,
            parent=parent,
        )
        specs = [ShareSpec.from_engine(share, engine.types_in_order(share.name)) for share in engine.shares]
        tree = [CohortSpec.from_engine(cohort) for cohort in engine.cohorts]
        calendar = change_specs_of(engine)
        policy.validate_with(shares=specs, changes=calendar, cohorts=tree)
        policy.save()
        policy.replace_shares(specs, cohorts=tree)
        policy.replace_changes(calendar)
        return policy

    # -- variants ------------------------------------------------------------------------

    @transaction.atomic
    def duplicate(self, name: str, description: str | None = None) -> Policy:
        """A copy with every share, limit, cohort, setting and calendar row, remembering this
        policy as its parent. A stored policy the engine now refuses (a calendar stored before a rule held:
        a change before 1970) is not copied: ValidationError saying why."""
        try:
            self.engine_policy()
        except ValidationError as error:
            raise ValidationError(
                f"{self.name} is not a valid policy, so it is not copied: {' '.join(error.messages)}"
            ) from None
        copy = Policy.objects.create(
            name=name,
            pool=self.pool,
            description=self.description if description is None else description,
            parent=self,
            **{key: getattr(self, key) for key in POLICY_SETTINGS},
        )
        copy.replace_shares(self.share_specs(), cohorts=self.cohort_specs())
        copy.replace_changes(self.change_specs())
        return copy

    @transaction.atomic
    def replace_shares(self, specs: list[ShareSpec], cohorts: list[CohortSpec] | None = None) -> None:
        """Store ``specs`` as this policy's shares, and ``cohorts`` (when given) as its tree (call
        ``validate_with(shares=specs, cohorts=cohorts)`` first).

        In two bulk inserts (shares, then their per-type rows): a policy of hundreds of shares is
        stored in a few queries, not three per share. Calendar rows of shares that keep their name
        stay; those of shares gone go with them."""
        calendar = self.change_specs()
        self.shares.all().delete()
        if cohorts is not None:
            self.replace_cohorts(cohorts)
        stored = {cohort.name: cohort for cohort in self.cohorts.all()}
        shares = Share.objects.bulk_create(
            [
                Share(
                    policy=self,
                    name=spec.name,
                    strategy=spec.strategy,
                    borrow_limit_percent=spec.borrow_limit_percent,
                    in_share_preemption=spec.in_share_preemption,
                    reclaim=spec.reclaim,
                    fair_weight=spec.fair_weight,
                    flavor_order=spec.flavor_order,
                    flavor_fungibility=spec.flavor_fungibility,
                    cohort=stored[spec.cohort] if spec.cohort else None,
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
        kept = {spec.name for spec in specs}
        self.replace_changes([row for row in calendar if row.share is None or row.share in kept])

    @transaction.atomic
    def replace_cohorts(self, specs: list[CohortSpec]) -> None:
        """Store ``specs`` as this policy's tree of cohorts (call ``validate_with(cohorts=specs)``
        first). Shares stay in the cohort of their name; a share whose cohort is gone is at the root."""
        members = dict(self.shares.filter(cohort__isnull=False).values_list("pk", "cohort__name"))
        self.cohorts.all().delete()
        cohorts = Cohort.objects.bulk_create(
            Cohort(policy=self, name=spec.name, fair_weight=spec.fair_weight, position=position)
            for position, spec in enumerate(specs)
        )
        by_name = {cohort.name: cohort for cohort in cohorts}
        for cohort, spec in zip(cohorts, specs, strict=True):
            cohort.parent = by_name.get(spec.parent) if spec.parent else None
        Cohort.objects.bulk_update(cohorts, ["parent"])
        names = {name for spec in specs for name in spec.type_names()}
        types = {t.name: t for t in InstanceType.objects.filter(name__in=names)}
        CohortLimit.objects.bulk_create(
            [
                row
                for cohort, spec in zip(cohorts, specs, strict=True)
                for row in cohort.limit_rows(spec, types)
            ]
        )
        for share_pk, name in members.items():
            if name in by_name:
                Share.objects.filter(pk=share_pk).update(cohort=by_name[name])

    @transaction.atomic
    def replace_changes(self, specs: list[ChangeSpec]) -> None:
        """Store ``specs`` as this policy's calendar (call ``validate_with(changes=specs)`` first)."""
        self.changes.all().delete()
        shares = {share.name: share for share in self.shares.all()}
        types = {t.name: t for t in InstanceType.objects.filter(name__in={s.instance_type for s in specs})}
        CalendarChange.objects.bulk_create(
            CalendarChange(
                policy=self,
                time=spec.time,
                share=None if spec.share is None else shares[spec.share],
                instance_type=types[spec.instance_type],
                count=spec.count,
            )
            for spec in specs
        )


def validation_error(
    error: InputError,
    data: Mapping,
    *,
    edited_share: int | None,
    error_field: str | None,
    edited_cohort: int | None = None,
) -> ValidationError:
    """Map an engine field path (``shares[1].capacity.gpu``, ``cohorts[0].parent``,
    ``capacity.gpu``) to a form field: the edited share's or cohort's own field, else a message
    naming the share or cohort and its field (under ``cohorts`` for a cohort)."""
    path = error.field or ""
    message = error.reason
    nodes = (("share", edited_share, SHARE_FIELD_OF), ("cohort", edited_cohort, COHORT_FIELD_OF))
    for kind, edited, fields in nodes:
        prefix = f"{kind}s["
        if not (path.startswith(prefix) and "]" in path):
            continue
        index = int(path[len(prefix) : path.index("]")])
        rest = path[path.index("]") + 1 :].lstrip(".")
        top, _, type_name = rest.partition(".")
        items = data.get(f"{kind}s") or []
        name = items[index].get("name", f"#{index + 1}") if index < len(items) else f"#{index + 1}"
        # The tree's validator says whose problem it is ("cohort b: ..."): the field says it here.
        message = message.removeprefix(f"{kind} {name}: ").removeprefix(f"{kind} {name!r}: ")
        if index == edited:
            detail = f"{type_name}: {message}" if type_name else message
            return ValidationError({fields.get(top.split("[")[0], error_field or "__all__"): detail})
        message = f"{kind} {name}, {rest}: {message}" if rest else f"{kind} {name}: {message}"
        if kind == "cohort":
            return ValidationError({"cohorts": message})
        break
    else:
        if path.startswith("capacity") and edited_share is not None and error_field is None:
            # Quotas adding up to more than the pool: the edited share's quota is what tipped it.
            return ValidationError({"capacity": message})
        if path.startswith("capacity") and edited_cohort is not None:
            return ValidationError({"capacity": message})  # the same, for the edited cohort
        if path.split(".")[0] in POLICY_FIELD_OF and edited_share is None:
            return ValidationError({POLICY_FIELD_OF[path.split(".")[0]]: message})
        if path:
            message = f"{path}: {message}"
    if error_field:
        return ValidationError({error_field: message})
    return ValidationError(message)


def calendar_error(
    error: InputError, calendar: list[ChangeSpec], origins: list[dict[str, int]], *, error_field: str | None
) -> CalendarError:
    """An engine error about ``changes[i]...`` as a CalendarError on the calendar row behind it,
    its message saying which row (time, target and type) in words."""
    path = error.field or ""
    index = int(path[len("changes[") : path.index("]")])
    rest = path[path.index("]") + 1 :].lstrip(".")
    type_name = rest.partition(".")[2]
    rows = origins[index] if index < len(origins) else {}
    row = rows.get(type_name, next(iter(rows.values()), 0))
    spec = calendar[row] if row < len(calendar) else None
    where = f"change at {describe_time(spec.time)}, {spec.target()}, {spec.instance_type}" if spec else path
    message = f"{where}: {error.reason}"
    return CalendarError({error_field: message} if error_field else message, row=row)


def describe_time(seconds: float) -> str:
    """A change's time as people read it: a UTC date for Unix times (from 2001 on: traces with
    ISO-8601 timestamps), else seconds from the trace's origin, in days and hours when long
    **(choice)**: the number alone cannot say which it is."""
    from datetime import UTC, datetime

    if seconds >= 1e9:
        stamp = datetime.fromtimestamp(seconds, UTC)
        return stamp.strftime("%Y-%m-%d %H:%M:%S UTC" if stamp.second else "%Y-%m-%d %H:%M UTC")
    text = f"{seconds:,g} s"
    if seconds >= 86400:
        days, rest = divmod(seconds, 86400)
        text += f" (day {int(days)} + {rest / 3600:g} h)"
    return text


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
    fair_weight = models.FloatField(
        default=1,
        help_text="Kueue fairSharing.weight: its borrowed GPUs count divided by this (0: first to give back)",
    )
    # SEMANTICS.md section 12, as the policy JSON has them (checked by the engine's validator).
    flavor_order = models.JSONField(
        null=True, blank=True, help_text="instance types in the order its jobs of several types try them"
    )
    flavor_fungibility = models.JSONField(
        null=True,
        blank=True,
        help_text="Kueue flavorFungibility: when_can_borrow, when_can_preempt, preference",
    )
    cohort = models.ForeignKey(
        "Cohort",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="shares",
        help_text="the cohort it is in (section 13); empty: the root",
    )
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
        return ShareSpec(
            name=self.name,
            strategy=self.strategy,
            borrow_limit_percent=self.borrow_limit_percent,
            in_share_preemption=self.in_share_preemption,
            reclaim=self.reclaim,
            **_numbers_of(rows),
            fair_weight=self.fair_weight,
            flavor_order=self.flavor_order,
            flavor_fungibility=self.flavor_fungibility,
            cohort=self.cohort.name if self.cohort_id else None,
        )

    def check_in_policy(self, spec: ShareSpec) -> EnginePolicy:
        """Validate the policy with this share replaced by (or, if new, extended with) ``spec``
        (its calendar rows follow it when it is renamed)."""
        siblings = (
            list(self.policy.shares.exclude(pk=self.pk).order_by("position", "id")) if self.policy_id else []
        )
        specs = [s.spec() for s in siblings]
        key = (self.position, self.pk or float("inf"))
        index = sum(1 for s in siblings if (s.position, s.pk) < key)
        specs.insert(index, spec)
        stored = Share.objects.filter(pk=self.pk).values_list("name", flat=True) if self.pk else []
        stored_name = next(iter(stored), None)
        renamed = {stored_name: spec.name} if stored_name else None
        return self.policy.validate_with(
            shares=specs, changes=self.policy.change_specs(renamed), edited_share=index
        )

    def clean(self) -> None:
        if self.policy_id is None:
            return
        if self.cohort_id is not None and self.cohort.policy_id != self.policy_id:
            raise ValidationError({"cohort": "a share's cohort must be a cohort of its own policy"})
        self.check_in_policy(self.spec())

    def limit_rows(self, spec: ShareSpec, types: Mapping[str, InstanceType]) -> list[ShareLimit]:
        """The unsaved ShareLimit rows of ``spec`` for this (saved) share."""
        return [
            ShareLimit(share=self, instance_type=types[type_name], **_numbers_for(spec, type_name))
            for type_name in sorted(spec.type_names())
        ]

    def apply(self, spec: ShareSpec) -> None:
        """Set this share's own fields (not its per-type rows: ``set_limits``) from ``spec``, its
        cohort found by name in its policy; not saved, not validated here."""
        self.name = spec.name
        self.strategy = spec.strategy
        self.borrow_limit_percent = spec.borrow_limit_percent
        self.in_share_preemption = spec.in_share_preemption
        self.reclaim = spec.reclaim
        self.fair_weight = spec.fair_weight
        self.flavor_order = spec.flavor_order
        self.flavor_fungibility = spec.flavor_fungibility
        self.cohort = Cohort.objects.get(policy_id=self.policy_id, name=spec.cohort) if spec.cohort else None

    def set_limits(self, spec: ShareSpec) -> None:
        """Store the per-type quota and limits of ``spec`` (instance types by name)."""
        names = spec.type_names()
        types = {t.name: t for t in InstanceType.objects.filter(name__in=names)}
        self.limits.exclude(instance_type__name__in=names).delete()
        for type_name in sorted(names):
            ShareLimit.objects.update_or_create(
                share=self, instance_type=types[type_name], defaults=_numbers_for(spec, type_name)
            )


class ShareLimit(models.Model):
    """A share's numbers for one instance type: quota, and optional Kueue-style limits.

    Rows are checked as a set, by ``Share.check_in_policy(share.spec(limits=rows))``.
    """

    share = models.ForeignKey(Share, on_delete=models.CASCADE, related_name="limits")
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="share_limits")
    quota, borrowing_limit, lending_limit = _limit_fields(
        quota="instances it may use without borrowing",
        borrowing="at most this many instances above its quota (Kueue); empty = no limit",
        lending="at most this many idle quota instances lent (Kueue); empty = all",
    )

    class Meta:
        ordering = ["share", "instance_type__name"]
        constraints = [
            models.UniqueConstraint(fields=["share", "instance_type"], name="unique_share_limit_per_type")
        ]

    def __str__(self) -> str:
        return f"{self.share}: {self.quota} x {self.instance_type}"


class Cohort(models.Model):
    """A Kueue Cohort in a policy's tree (SEMANTICS.md section 13): its own quota and limits per
    type in ``CohortLimit`` rows, a parent cohort of the same policy (empty: the root), and a fair
    weight. The tree is checked as a whole, with the policy, by ``Policy.validate_with(cohorts=...)``."""

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="cohorts")
    name = models.CharField(max_length=100, validators=[validate_name])
    parent = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="children",
        help_text="the cohort it is in (same policy); empty: the root",
    )
    fair_weight = models.FloatField(
        default=1, help_text="Kueue fairSharing.weight of its subtree (only used with fair sharing on)"
    )
    position = models.PositiveIntegerField(default=0, help_text="order of the cohort in the policy")

    class Meta:
        ordering = ["policy", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["policy", "name"], name="unique_cohort_name_per_policy")
        ]

    def __str__(self) -> str:
        return f"{self.policy} / cohort {self.name}"

    def spec(self) -> CohortSpec:
        rows = list(self.limits.all()) if self.pk else []
        return CohortSpec(
            name=self.name,
            parent=self.parent.name if self.parent_id else None,
            **_numbers_of(rows),
            fair_weight=self.fair_weight,
        )

    def clean(self) -> None:
        if self.parent_id is not None and self.parent.policy_id != self.policy_id:
            raise ValidationError({"parent": "a cohort's parent must be a cohort of the same policy"})

    def limit_rows(self, spec: CohortSpec, types: Mapping[str, InstanceType]) -> list[CohortLimit]:
        """The unsaved CohortLimit rows of ``spec`` for this (saved) cohort."""
        return [
            CohortLimit(cohort=self, instance_type=types[type_name], **_numbers_for(spec, type_name))
            for type_name in sorted(spec.type_names())
        ]


class CohortLimit(models.Model):
    """A cohort's numbers for one instance type: its own quota, and optional limits on what its
    subtree borrows from its parent and lends to it."""

    cohort = models.ForeignKey(Cohort, on_delete=models.CASCADE, related_name="limits")
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="cohort_limits")
    quota, borrowing_limit, lending_limit = _limit_fields(
        quota="the cohort's own nominal quota",
        borrowing="at most this many instances its subtree borrows above its subtree quota; empty = no limit",
        lending="at most this many of its subtree's quota lent to its parent; empty = all",
    )

    class Meta:
        ordering = ["cohort", "instance_type__name"]
        constraints = [
            models.UniqueConstraint(fields=["cohort", "instance_type"], name="unique_cohort_limit_per_type")
        ]

    def __str__(self) -> str:
        return f"{self.cohort}: {self.quota} x {self.instance_type}"


class CalendarChange(models.Model):
    """One row of a policy's calendar (SEMANTICS.md section 9): from ``time`` on, the pool (no
    share) or the share has ``count`` instances of the type. Rows are checked as a set, with the
    policy, by ``Policy.validate_with(changes=...)``; a training plan writes four of them."""

    policy = models.ForeignKey(Policy, on_delete=models.CASCADE, related_name="changes")
    time = models.FloatField(help_text="seconds, as the trace's times (Unix seconds for ISO-8601 traces)")
    share = models.ForeignKey(
        Share,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="changes",
        help_text="empty: the pool's capacity; else this share's quota",
    )
    instance_type = models.ForeignKey(InstanceType, on_delete=models.PROTECT, related_name="changes")
    count = models.PositiveIntegerField(help_text="instances from this time on")

    class Meta:
        ordering = ["policy", "time", F("share__position").asc(nulls_first=True), "instance_type__name", "id"]

    def __str__(self) -> str:
        since = describe_time(self.time)
        return f"{self.policy}: {self.spec().target()} {self.count} x {self.instance_type} from {since}"

    def spec(self) -> ChangeSpec:
        return ChangeSpec(
            time=self.time,
            share=None if self.share_id is None else self.share.name,
            instance_type=self.instance_type.name,
            count=self.count,
        )
