"""Forms of the pages. They only collect and parse what was typed: whether a policy is valid is
decided by the engine's validator through the models (``Share.check_in_policy``,
``Policy.validate_with``, ``Pool.check_capacity``), and its errors are put back next to the field
that caused them (``place_errors``)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from django import forms
from django.core.exceptions import ValidationError

from planner.capacity.models import Policy
from planner.studies.fit import split_by_fit
from planner.traces.models import ParseStatus, Trace
from planner.validators import validate_long_name
from planner.web.listing import listed_policies
from scheduling.errors import InputError
from scheduling.traces import FORMATS
from scheduling.traces.fields import parse_time
from scheduling.traces.mapping import IMPORTERS, PriorityMode


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


FORMAT_CHOICES = [("auto", "auto: planner CSV or JSON, by name or content")] + [
    (name, f"{name} (importer: takes a mapping)" if name in IMPORTERS else name) for name in FORMATS
]


MAPPING_FIELDS = ("share_column", "priority_column", "priority_mode", "gpus_per_instance")


class TraceUploadForm(forms.Form):
    """A trace file and its name; parsing and row/field errors come from ``scheduling.traces``.

    For the importer formats, the common mapping settings have fields of their own; they are
    merged over the JSON mapping (which can say everything ``TraceMapping`` knows)."""

    file = forms.FileField(label="Trace file", help_text="CSV or JSON, gzip-compressed or not")
    name = forms.CharField(max_length=200, label="Name", validators=[validate_long_name])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    format = forms.ChoiceField(choices=FORMAT_CHOICES, initial="auto")
    share_column = forms.CharField(
        required=False,
        label="Share column",
        widget=forms.TextInput(attrs={"list": "trace-columns", "autocomplete": "off"}),
        help_text="the column whose values name the shares (Preview lists the columns)",
    )
    priority_column = forms.CharField(
        required=False,
        label="Priority column",
        widget=forms.TextInput(attrs={"list": "trace-columns", "autocomplete": "off"}),
    )
    priority_mode = forms.ChoiceField(
        required=False,
        label="Priorities",
        choices=[("", "the format's default")] + [(mode.value, mode.value) for mode in PriorityMode],
        help_text="value: 0..9999 as is; clamp: rounded into 0..9999; rank: any numbers, order kept; "
        "map: through priority_map in the JSON below",
    )
    gpus_per_instance = forms.IntegerField(
        required=False, label="GPUs per instance", help_text="e.g. 8 for a pool counted in 8-GPU machines"
    )
    mapping = forms.CharField(
        required=False,
        label="Other mapping settings (JSON)",
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false"}),
        help_text='e.g. {"share_names": {"vc1": "research"}, "share_default": "other"}; '
        "settings left out keep the format's defaults",
    )

    def __init__(self, *args, preview: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if preview:  # a preview reads the file only: no name needed yet
            self.fields["name"].required = False

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if name and Trace.objects.filter(name=name).exclude(status=ParseStatus.FAILED).exists():
            raise ValidationError(f"a trace named {name!r} already exists")
        return name

    def clean_mapping(self) -> dict | None:
        text = self.cleaned_data.get("mapping", "").strip()
        if not text:
            return None
        try:
            mapping = json.loads(text)
        except ValueError as error:
            raise ValidationError(f"not valid JSON: {error}") from None
        if not isinstance(mapping, dict):
            raise ValidationError("must be a JSON object")
        return mapping

    def clean(self) -> dict:
        data = super().clean()
        if "mapping" not in data:
            return data
        mapping = dict(data["mapping"] or {})
        for key in MAPPING_FIELDS:
            value = data.get(key)
            if value not in (None, ""):
                mapping[key] = value.strip() if isinstance(value, str) else value
        data["mapping"] = mapping or None
        return data


class StudyForm(forms.Form):
    """A study: a trace, the policies to replay it under, and the baseline they are compared with."""

    name = forms.CharField(max_length=200, validators=[validate_long_name])
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))
    trace = forms.ModelChoiceField(
        queryset=Trace.objects.ready().defer("summary"), empty_label="choose a trace"
    )
    policies = forms.ModelMultipleChoiceField(
        queryset=Policy.objects.select_related("pool"),
        widget=forms.CheckboxSelectMultiple,
        help_text="each is replayed over the trace, in parallel",
    )
    baseline = forms.ModelChoiceField(
        queryset=Policy.objects.all(),
        required=False,
        empty_label="the first policy chosen",
        help_text="the policy the others are compared with",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policies"].label_from_instance = lambda policy: (
            f"{policy.name} (pool {policy.pool.name})"
        )
        listed = listed_policies(Policy.objects.select_related("pool")).prefetch_related(
            "shares", "pool__capacities__instance_type"
        )
        # Whether any policy exists at all: "there is no policy yet" is a different dead end from
        # "no policy fits this trace" (which the policies field answers once a trace is chosen).
        self.has_policies = listed.exists()
        self.chosen_trace = self._chosen_trace()
        self.unfit: list[tuple[Policy, str]] = []
        if self.chosen_trace is not None:
            fitting, self.unfit = split_by_fit(listed, self.chosen_trace)
            chosen = Policy.objects.filter(pk__in=[p.pk for p in fitting]).select_related("pool")
        else:
            chosen = listed
        self.fields["policies"].queryset = chosen
        self.fields["baseline"].queryset = chosen

    def _chosen_trace(self) -> Trace | None:
        """The trace picked so far (posted, or in the initial data): the policies offered fit it."""
        value = self.data.get("trace") if self.is_bound else self.initial.get("trace")
        if isinstance(value, Trace):
            return value
        try:
            return Trace.objects.filter(pk=int(value)).first() if value not in (None, "") else None
        except (TypeError, ValueError):
            return None

    def place(self, error: ValidationError) -> None:
        place_errors(self, error, {})
