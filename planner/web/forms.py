"""Forms of the policy pages, and ``place_errors``, which the other apps' forms use too. They only
collect and parse what was typed: whether a policy is valid is decided by the engine's validator
through the models (``Share.check_in_policy``, ``Policy.validate_with``, ``Pool.check_capacity``),
and its errors are put back next to the field that caused them (``place_errors``)."""

from __future__ import annotations

from collections.abc import Sequence

from django import forms
from django.core.exceptions import ValidationError

from planner.capacity.models import DEFAULT_FAIR_STRATEGIES, ChangeSpec, Policy, ShareSpec
from planner.validators import validate_fair_weight, validate_name
from scheduling.capacity_plans import TrainingPlan
from scheduling.errors import InputError
from scheduling.model import InSharePreemption, Reclaim, Strategy
from scheduling.traces.fields import parse_time


def _choices(enum) -> list[tuple[str, str]]:
    return [(member.value, member.value) for member in enum]


def whole(value: float | None) -> float | int | None:
    """2.0 -> 2 (the engine decides whether a number of instances is valid, not the form)."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


class NumberInput(forms.NumberInput):
    """A number box that takes any number: the engine's validator says what is wrong with it."""

    def __init__(self, attrs: dict | None = None):
        super().__init__({"step": "any", **(attrs or {})})


def place_errors(form: forms.Form, error: ValidationError, per_type: dict[str, Sequence[str]]) -> None:
    """Attach a model ValidationError to the form's fields.

    ``per_type`` maps a model field holding per-instance-type numbers (``capacity``) to the
    form's fields for each type, in the order of ``form.instance_types``; the message goes to
    the field of the type it names (``gpu: 5 is below...``, ``quotas of gpu add up to...``)."""
    if not hasattr(error, "error_dict"):
        for message in error.messages:
            form.add_error(None, message)
        return
    for key, messages in error.message_dict.items():
        for message in messages:
            if key in per_type:
                names = per_type[key]
                target, text = names[0] if names else None, message
                for type_name, field_name in zip(getattr(form, "instance_types", []), names, strict=True):
                    if message.startswith(f"{type_name}: "):
                        target, text = field_name, message[len(type_name) + 2 :]
                        break
                    if f" {type_name} " in f" {message} ":
                        target = field_name
                form.add_error(target, text)
            elif key in form.fields:
                form.add_error(key, message)
            else:
                form.add_error(None, message)


class ShareForm(forms.Form):
    """One share of a policy, with a quota, a borrowing limit and a lending limit per instance type."""

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
    fair_weight = forms.FloatField(
        required=False,
        initial=1,
        validators=[validate_fair_weight],
        label="Fair-sharing weight",
        widget=NumberInput(),
        help_text="Kueue fairSharing.weight: borrowed GPUs count divided by it (with fair sharing on); "
        "empty = 1",
    )

    def __init__(self, *args, instance_types: Sequence[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.instance_types = list(instance_types)
        for i, type_name in enumerate(self.instance_types):
            self.fields[f"quota_{i}"] = forms.FloatField(
                label=f"Quota of {type_name}", initial=0, widget=NumberInput()
            )
            self.fields[f"borrowing_{i}"] = forms.FloatField(
                required=False, label=f"Borrow at most (instances of {type_name})", widget=NumberInput()
            )
            self.fields[f"lending_{i}"] = forms.FloatField(
                required=False, label=f"Lend at most (instances of {type_name})", widget=NumberInput()
            )

    @classmethod
    def initial_from(cls, spec: ShareSpec, instance_types: Sequence[str]) -> dict:
        initial = {
            "name": spec.name,
            "strategy": spec.strategy,
            "borrow_limit_percent": whole(spec.borrow_limit_percent),
            "in_share_preemption": spec.in_share_preemption,
            "reclaim": spec.reclaim,
            "fair_weight": whole(spec.fair_weight),
        }
        for i, type_name in enumerate(instance_types):
            initial[f"quota_{i}"] = spec.capacity.get(type_name, 0)
            initial[f"borrowing_{i}"] = (spec.borrowing_limit or {}).get(type_name)
            initial[f"lending_{i}"] = (spec.lending_limit or {}).get(type_name)
        return initial

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
                "quota": self[f"quota_{i}"],
                "borrowing": self[f"borrowing_{i}"],
                "lending": self[f"lending_{i}"],
            }
            for i, type_name in enumerate(self.instance_types)
        ]

    def spec(self) -> ShareSpec:
        data = self.cleaned_data
        capacity, borrowing, lending = {}, {}, {}
        for i, type_name in enumerate(self.instance_types):
            quota = whole(data.get(f"quota_{i}"))
            borrow = whole(data.get(f"borrowing_{i}"))
            lend = whole(data.get(f"lending_{i}"))
            if quota or borrow is not None or lend is not None:
                capacity[type_name] = quota or 0
            if borrow is not None:
                borrowing[type_name] = borrow
            if lend is not None:
                lending[type_name] = lend
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
        )

    def place(self, error: ValidationError) -> None:
        place_errors(self, error, self.per_type_fields())


def parse_time_field(value: str, label: str) -> float:
    """Seconds or an ISO-8601 timestamp, read as a trace's times are (``traces.fields.parse_time``)."""
    try:
        seconds, _ = parse_time(value, None, label)
    except InputError as error:
        raise ValidationError(error.reason) from None
    return seconds


def time_input_value(seconds: float) -> str:
    """A stored time as it is typed back: ISO-8601 for Unix times (see ``describe_time``)."""
    from datetime import UTC, datetime

    if seconds >= 1e9:
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return f"{whole(seconds)}"


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
