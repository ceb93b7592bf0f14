"""Forms of the policy page: a share, a cohort, the pool's capacity, a calendar row, a training
plan, the policy's settings and a variant's name. They only collect and parse what was typed:
whether a policy is valid is decided by the engine's validator through the models
(``Share.check_in_policy``, ``Policy.validate_with``, ``Pool.check_capacity``), and its errors are
put back next to the field that caused them (``place_errors``)."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.core.exceptions import ValidationError

from planner.capacity.models import DEFAULT_FAIR_STRATEGIES, ChangeSpec, CohortSpec, Policy, ShareSpec
from planner.validators import validate_fair_weight, validate_name
from planner.web.forms import NumberInput, parse_time_field, place_errors, time_input_value, whole
from scheduling.capacity_plans import TrainingPlan
from scheduling.model import (
    DEFAULT_FUNGIBILITY,
    FlavorPreference,
    InSharePreemption,
    Reclaim,
    Strategy,
    WhenCan,
)

ROOT = ""  # the value of "the root" among a share's or cohort's parents


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


def per_type_limits(form: forms.Form) -> tuple[dict, dict, dict]:
    """Quota, borrowing and lending limit per instance type from the ``quota_i``, ``borrowing_i``
    and ``lending_i`` fields of a share's or cohort's form (a type with a limit has a quota, 0)."""
    data = form.cleaned_data
    capacity, borrowing, lending = {}, {}, {}
    for i, type_name in enumerate(form.instance_types):
        quota = whole(data.get(f"quota_{i}"))
        borrow = whole(data.get(f"borrowing_{i}"))
        lend = whole(data.get(f"lending_{i}"))
        if quota or borrow is not None or lend is not None:
            capacity[type_name] = quota or 0
        if borrow is not None:
            borrowing[type_name] = borrow
        if lend is not None:
            lending[type_name] = lend
    return capacity, borrowing, lending


def add_per_type_fields(form: forms.Form, borrow_label: str, lend_label: str) -> None:
    for i, type_name in enumerate(form.instance_types):
        form.fields[f"quota_{i}"] = forms.FloatField(
            label=f"Quota of {type_name}", initial=0, widget=NumberInput()
        )
        form.fields[f"borrowing_{i}"] = forms.FloatField(
            required=False, label=f"{borrow_label} (instances of {type_name})", widget=NumberInput()
        )
        form.fields[f"lending_{i}"] = forms.FloatField(
            required=False, label=f"{lend_label} (instances of {type_name})", widget=NumberInput()
        )


def parent_choices(cohort_names: Sequence[str]) -> list[tuple[str, str]]:
    return [(ROOT, "the root")] + [(name, f"cohort {name}") for name in cohort_names]


def parse_flavor_order(text: str) -> list[str] | None:
    """Types separated by commas (or spaces); empty: the policy's order. The engine checks the names."""
    names = [name for name in text.replace(",", " ").split() if name]
    return names or None


class PerTypeFields:
    """The per-type boxes of a share's or cohort's form, as table cells and as error targets."""

    instance_types: list[str]

    def per_type_fields(self) -> dict[str, list[str]]:
        count = range(len(self.instance_types))
        return {
            "capacity": [f"quota_{i}" for i in count],
            "borrowing_limit": [f"borrowing_{i}" for i in count],
            "lending_limit": [f"lending_{i}" for i in count],
        }

    def type_rows(self) -> list[dict]:
        """Bound fields per instance type, for the table cells."""
        return [
            {
                "type": type_name,
                "quota": self[f"quota_{i}"],  # type: ignore[index]
                "borrowing": self[f"borrowing_{i}"],  # type: ignore[index]
                "lending": self[f"lending_{i}"],  # type: ignore[index]
            }
            for i, type_name in enumerate(self.instance_types)
        ]


def fair_weight_field(label: str, help_text: str) -> forms.FloatField:
    """A share's or a cohort's fair-sharing weight: optional, 1 when empty, held to the engine's rule."""
    return forms.FloatField(
        required=False,
        initial=1,
        validators=[validate_fair_weight],
        label=label,
        widget=NumberInput(),
        help_text=help_text,
    )


class ShareForm(PerTypeFields, forms.Form):
    """One share of a policy: a quota, a borrowing limit and a lending limit per instance type, its
    cohort, and (when the policy has several types) the order its jobs try them in and Kueue's
    flavorFungibility (section 12)."""

    name = forms.CharField(max_length=100, validators=[validate_name])
    strategy = forms.ChoiceField(choices=_choices(Strategy))
    borrow_limit_percent = forms.FloatField(
        required=False,
        label="Borrow limit (% of quota)",
        widget=NumberInput(),
        help_text="AWS borrowLimit; empty or -1 = unlimited",
    )
    in_share_preemption = forms.ChoiceField(choices=_choices(InSharePreemption), label="In-share preemption")
    reclaim = forms.ChoiceField(choices=_choices(Reclaim))
    fair_weight = fair_weight_field(
        "Fair-sharing weight",
        "Kueue fairSharing.weight: borrowed GPUs count divided by it (with fair sharing on); empty = 1",
    )
    cohort = forms.ChoiceField(label="Cohort", required=False)
    flavor_order = forms.CharField(
        required=False,
        label="Types in the order its jobs try them",
        help_text="separated by commas; empty: the policy's order",
    )
    when_can_borrow = forms.ChoiceField(choices=_choices(WhenCan), label="When it could borrow")
    when_can_preempt = forms.ChoiceField(choices=_choices(WhenCan), label="When it could preempt")
    preference = forms.ChoiceField(choices=_choices(FlavorPreference), label="Else prefer")

    FLAVOR_FIELDS = ("flavor_order", "when_can_borrow", "when_can_preempt", "preference")

    def __init__(
        self,
        *args,
        instance_types: Sequence[str],
        cohort_names: Sequence[str] = (),
        kept: ShareSpec | None = None,
        **kwargs,
    ):
        """``kept``: the stored share, whose flavor settings stay as they are when the policy has one
        type (the form then leaves them out)."""
        super().__init__(*args, **kwargs)
        self.instance_types = list(instance_types)
        self.kept = kept
        add_per_type_fields(self, "Borrow at most", "Lend at most")
        self.fields["cohort"].choices = parent_choices(cohort_names)
        self.has_flavors = len(self.instance_types) > 1
        if not self.has_flavors:
            for name in self.FLAVOR_FIELDS:
                del self.fields[name]

    @classmethod
    def initial_from(cls, spec: ShareSpec, instance_types: Sequence[str]) -> dict:
        initial = {
            "name": spec.name,
            "strategy": spec.strategy,
            "borrow_limit_percent": whole(spec.borrow_limit_percent),
            "in_share_preemption": spec.in_share_preemption,
            "reclaim": spec.reclaim,
            "fair_weight": whole(spec.fair_weight),
            "cohort": spec.cohort or ROOT,
            "flavor_order": ", ".join(spec.flavor_order or ()),
            **fungibility_initial(spec.flavor_fungibility),
        }
        for i, type_name in enumerate(instance_types):
            initial[f"quota_{i}"] = spec.capacity.get(type_name, 0)
            initial[f"borrowing_{i}"] = (spec.borrowing_limit or {}).get(type_name)
            initial[f"lending_{i}"] = (spec.lending_limit or {}).get(type_name)
        return initial

    def flavor_settings(self) -> tuple[list[str] | None, dict[str, str] | None]:
        """The flavor order and flavorFungibility typed (Kueue's defaults stored as None), or the
        stored ones when the form leaves them out."""
        if not self.has_flavors:
            kept = self.kept or ShareSpec(name="")
            return kept.flavor_order, kept.flavor_fungibility
        data = self.cleaned_data
        fungibility = {key: data[key] for key in ("when_can_borrow", "when_can_preempt", "preference")}
        return parse_flavor_order(data.get("flavor_order") or ""), (
            None if fungibility == fungibility_initial(None) else fungibility
        )

    def spec(self) -> ShareSpec:
        data = self.cleaned_data
        capacity, borrowing, lending = per_type_limits(self)
        flavor_order, fungibility = self.flavor_settings()
        return ShareSpec(
            name=data["name"].strip(),
            strategy=data["strategy"],
            borrow_limit_percent=whole(data.get("borrow_limit_percent")),
            in_share_preemption=data["in_share_preemption"],
            reclaim=data["reclaim"],
            capacity=capacity,
            borrowing_limit=borrowing or None,
            lending_limit=lending or None,
            fair_weight=1 if data.get("fair_weight") is None else whole(data["fair_weight"]),
            flavor_order=flavor_order,
            flavor_fungibility=fungibility,
            cohort=data.get("cohort") or None,
        )

    def place(self, error: ValidationError) -> None:
        place_errors(self, fungibility_on_its_box(error), self.per_type_fields())


def fungibility_on_its_box(error: ValidationError) -> ValidationError:
    """An error on ``flavor_fungibility`` ("preference: ...") moved to the form's box of that setting."""
    if not hasattr(error, "error_dict") or "flavor_fungibility" not in error.message_dict:
        return error
    moved: dict[str, list[str]] = {}
    for key, messages in error.message_dict.items():
        for message in messages:
            target, text = key, message
            if key == "flavor_fungibility":
                setting, _, rest = message.partition(": ")
                if setting in ("when_can_borrow", "when_can_preempt", "preference") and rest:
                    target, text = setting, rest
            moved.setdefault(target, []).append(text)
    return ValidationError(moved)


def fungibility_initial(fungibility: dict[str, str] | None) -> dict[str, str]:
    """A stored flavorFungibility as the form's three choices, Kueue's defaults for what it leaves out."""
    default = DEFAULT_FUNGIBILITY
    given = fungibility or {}
    return {
        "when_can_borrow": given.get("when_can_borrow", default.when_can_borrow.value),
        "when_can_preempt": given.get("when_can_preempt", default.when_can_preempt.value),
        "preference": given.get("preference", default.preference.value),
    }


class CohortForm(PerTypeFields, forms.Form):
    """One cohort of the tree (section 13): its name, parent, own quota, and limits per instance
    type on what its subtree borrows from its parent and lends to it, and its fair weight."""

    name = forms.CharField(max_length=100, validators=[validate_name])
    parent = forms.ChoiceField(label="Parent", required=False)
    fair_weight = fair_weight_field(
        "Fair weight", "Kueue fairSharing.weight of its subtree (with fair sharing on); empty = 1"
    )

    def __init__(self, *args, instance_types: Sequence[str], cohort_names: Sequence[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.instance_types = list(instance_types)
        add_per_type_fields(self, "Subtree borrows at most", "Subtree lends at most")
        self.fields["parent"].choices = parent_choices(cohort_names)

    @classmethod
    def initial_from(cls, spec: CohortSpec, instance_types: Sequence[str]) -> dict:
        initial = {"name": spec.name, "parent": spec.parent or ROOT, "fair_weight": whole(spec.fair_weight)}
        for i, type_name in enumerate(instance_types):
            initial[f"quota_{i}"] = spec.capacity.get(type_name, 0)
            initial[f"borrowing_{i}"] = (spec.borrowing_limit or {}).get(type_name)
            initial[f"lending_{i}"] = (spec.lending_limit or {}).get(type_name)
        return initial

    def spec(self) -> CohortSpec:
        data = self.cleaned_data
        capacity, borrowing, lending = per_type_limits(self)
        return CohortSpec(
            name=data["name"].strip(),
            parent=data.get("parent") or None,
            capacity=capacity,
            borrowing_limit=borrowing or None,
            lending_limit=lending or None,
            fair_weight=1 if data.get("fair_weight") is None else whole(data["fair_weight"]),
        )

    def place(self, error: ValidationError) -> None:
        place_errors(self, error, self.per_type_fields())


POOL_TARGET = ""  # the value of "the pool" among a calendar row's targets


class CalendarRowForm(forms.Form):
    """One dated change: from this time on, the pool (or a share) has this many instances of a type."""

    time = forms.CharField(
        label="From (seconds or ISO-8601)",
        help_text="as the trace's times: seconds, or a timestamp like 2024-05-01T09:00:00Z",
    )
    target = forms.ChoiceField(label="Applies to", required=False)
    instance_type = forms.ChoiceField(label="Instance type")
    count = forms.FloatField(label="Instances from then on", widget=NumberInput())

    def __init__(self, *args, share_names: Sequence[str], instance_types: Sequence[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["target"].choices = [(POOL_TARGET, "the pool's capacity")] + [
            (name, f"share {name}'s quota") for name in share_names
        ]
        self.fields["instance_type"].choices = [(name, name) for name in instance_types]

    @classmethod
    def initial_from(cls, spec: ChangeSpec) -> dict:
        return {
            "time": time_input_value(spec.time),
            "target": spec.share or POOL_TARGET,
            "instance_type": spec.instance_type,
            "count": whole(spec.count),
        }

    def clean_time(self) -> float:
        return parse_time_field(self.cleaned_data["time"], "time")

    def clean_count(self) -> int:
        count = self.cleaned_data["count"]
        if count < 0 or not float(count).is_integer():
            raise ValidationError(f"{whole(count)} is not a whole number of instances (0 or more)")
        return int(count)

    def spec(self) -> ChangeSpec:
        data = self.cleaned_data
        return ChangeSpec(data["time"], data["target"] or None, data["instance_type"], data["count"])


class TrainingPlanForm(forms.Form):
    """A training plan: more instances of a type for the pool and one share, for a while (four changes)."""

    instance_type = forms.ChoiceField(label="Instance type")
    instances = forms.IntegerField(min_value=1, label="Instances reserved", initial=1)
    share = forms.ChoiceField(label="For share")
    start = forms.CharField(label="From (seconds or ISO-8601)")
    end = forms.CharField(label="To (seconds or ISO-8601)", help_text="the instances go at this time")

    def __init__(self, *args, share_names: Sequence[str], instance_types: Sequence[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["share"].choices = [(name, name) for name in share_names]
        self.fields["instance_type"].choices = [(name, name) for name in instance_types]

    def clean_start(self) -> float:
        return parse_time_field(self.cleaned_data["start"], "start")

    def clean_end(self) -> float:
        return parse_time_field(self.cleaned_data["end"], "end")

    def plan(self) -> TrainingPlan:
        data = self.cleaned_data
        return TrainingPlan(
            data["instance_type"], data["instances"], data["share"], data["start"], data["end"]
        )


class CapacityForm(forms.Form):
    """The pool's capacity: instances per instance type."""

    def __init__(self, *args, instance_types: Sequence[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.instance_types = list(instance_types)
        for i, type_name in enumerate(self.instance_types):
            self.fields[f"count_{i}"] = forms.FloatField(
                label=f"Pool capacity of {type_name}", widget=NumberInput()
            )

    def capacity(self) -> dict[str, int | float]:
        return {t: whole(self.cleaned_data[f"count_{i}"]) for i, t in enumerate(self.instance_types)}

    def cells(self) -> list:
        return [self[f"count_{i}"] for i in range(len(self.instance_types))]

    def place(self, error: ValidationError) -> None:
        place_errors(self, error, {"capacity": [f"count_{i}" for i in range(len(self.instance_types))]})


class PolicySettingsForm(forms.ModelForm):
    """Name, description, queueing rules, fair sharing and the RUNNABLE limit; ``Policy.clean``
    validates with the stored shares and calendar."""

    class Meta:
        model = Policy
        fields = [
            "name",
            "description",
            "queueing",
            "startup_seconds",
            "fair_sharing",
            "fair_preemption_strategies",
            "runnable_timeout_seconds",
        ]
        widgets = {
            "description": forms.Textarea(attrs={"rows": 2}),
            "startup_seconds": NumberInput(),
            "runnable_timeout_seconds": NumberInput(),
        }
        labels = {
            "startup_seconds": "Start-up (seconds)",
            "fair_sharing": "Fair sharing (Kueue fairSharing)",
            "fair_preemption_strategies": "Fair-sharing preemption strategies",
            "runnable_timeout_seconds": "Cancel jobs RUNNABLE longer than (seconds)",
        }

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # Only read with fair sharing on: a form that leaves it out keeps Kueue's default list.
        self.fields["fair_preemption_strategies"].required = False

    def clean_fair_preemption_strategies(self) -> str:
        return self.cleaned_data.get("fair_preemption_strategies") or (
            self.instance.fair_preemption_strategies or DEFAULT_FAIR_STRATEGIES
        )


class VariantNameForm(forms.Form):
    name = forms.CharField(max_length=100, label="Name of the variant", validators=[validate_name])

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if Policy.objects.filter(name=name).exists():
            raise ValidationError(f"a policy named {name!r} already exists")
        return name
