"""The forms that start a capacity curve and a worth search from the page. Lists of numbers and
share names are typed separated by commas; the rest is checked by ``launch`` (one place). The
curve form takes one training plan (the API takes several)."""

from __future__ import annotations

from django import forms
from django.db.models import Q

from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.web.forms import parse_time_field
from planner.web.query import parse_ids
from scheduling.capacity_curve import DEFAULT_FACTORS
from scheduling.capacity_plans import TrainingPlan
from scheduling.model import MAX_INSTANCES
from scheduling.scaling import SizeMode
from scheduling.worth import DEFAULT_PARALLEL, MAX_PARALLEL, Metric

MODES = [
    (SizeMode.PROPORTIONAL.value, "every type in proportion"),
    (SizeMode.ONE_TYPE.value, "one instance type only"),
]
METRICS = [
    (Metric.SHARE_P95.value, "every share's p95 wait"),
    (Metric.URGENT_P95.value, "the urgent shares' p95 wait"),
    (Metric.MEAN_WAIT.value, "mean wait"),
]
WIDE = forms.TextInput(attrs={"size": 40})


def policy_choices(also=()):
    """Policies a person made or kept (sweep variants not saved stay on their sweep's page), and
    the policies ``also`` names (the advisor page links here with variants of its front)."""
    kept = Policy.objects.exclude(sweep_variants__kept=False).values("pk")
    return Policy.objects.filter(Q(pk__in=kept) | Q(pk__in=list(also))).select_related("pool")


def _linked(data, initial, prefix: str) -> list[int]:
    """Policy ids the form was opened with (``initial``) or sent (``data``)."""
    ids = [*((initial or {}).get("policies") or [])]
    ids += [(initial or {}).get(key) for key in ("policy_a", "policy_b")]
    if data is not None and hasattr(data, "getlist"):
        for key in ("policies", "policy_a", "policy_b"):
            ids += data.getlist(f"{prefix}-{key}")
    return parse_ids(ids)


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.replace(";", ",").split(",") if part.strip()]


def _numbers(text: str, cast) -> list:
    values = []
    for part in _split(text):
        try:
            values.append(cast(part.replace("_", "")))
        except ValueError:
            kind = "a whole number" if cast is int else "a number"
            raise forms.ValidationError(f"{part!r} is not {kind}") from None
    return values


class CurveForm(forms.Form):
    prefix = "curve"  # the page holds both forms: their fields need ids of their own
    name = forms.CharField(max_length=200, required=False, help_text="default: the trace and the policies")
    trace = forms.ModelChoiceField(queryset=Trace.objects.defer("summary"), empty_label="choose a trace")
    policies = forms.ModelMultipleChoiceField(
        queryset=Policy.objects.none(),
        widget=forms.SelectMultiple(attrs={"size": 6}),
        help_text="one line each (up to 8); the first one's pool sets the sizes",
    )
    mode = forms.ChoiceField(choices=MODES, initial=SizeMode.PROPORTIONAL.value, label="Scale")
    instance_type = forms.CharField(
        max_length=100,
        required=False,
        help_text="the type whose instances count the size (blank: the one with most GPUs)",
    )
    factors = forms.CharField(
        widget=WIDE,
        required=False,
        help_text="sizes as multiples of today's, separated by commas (blank: "
        + ", ".join(f"{factor:g}" for factor in DEFAULT_FACTORS)
        + ")",
    )
    sizes = forms.CharField(
        widget=WIDE,
        required=False,
        help_text="or exact sizes in instances, separated by commas (replaces the factors)",
    )
    urgent_shares = forms.CharField(
        widget=WIDE, required=False, help_text="shares whose worst p95 wait is charted (blank: every share)"
    )

    plan_policy = forms.ModelChoiceField(
        queryset=Policy.objects.none(), required=False, empty_label="the first policy", label="Plan on",
        help_text="one of the policies above: the plan is replayed on it at today's size",
    )  # fmt: skip
    plan_instance_type = forms.CharField(max_length=100, required=False, label="Plan's instance type")
    plan_instances = forms.IntegerField(min_value=1, required=False, label="Instances reserved")
    plan_share = forms.CharField(max_length=100, required=False, label="For share")
    plan_start = forms.CharField(
        required=False, label="From (seconds or ISO-8601)", help_text="as in the trace"
    )
    plan_end = forms.CharField(required=False, label="To (seconds or ISO-8601)")

    PLAN_FIELDS = ("plan_instance_type", "plan_instances", "plan_share", "plan_start", "plan_end")

    def __init__(self, data=None, *args, **kwargs):
        linked = _linked(data, kwargs.get("initial"), self.prefix)
        super().__init__(data, *args, **kwargs)
        self.fields["policies"].queryset = policy_choices(linked)
        self.fields["plan_policy"].queryset = policy_choices(linked)

    def curve_fields(self) -> list:
        return [field for field in self if not field.name.startswith("plan_")]

    def plan_fields(self) -> list:
        return [field for field in self if field.name.startswith("plan_")]

    def clean_plan_start(self) -> float | None:
        text = self.cleaned_data["plan_start"].strip()
        return parse_time_field(text, "start") if text else None

    def clean_plan_end(self) -> float | None:
        text = self.cleaned_data["plan_end"].strip()
        return parse_time_field(text, "end") if text else None

    def clean(self) -> dict:
        data = super().clean()
        given = [name for name in self.PLAN_FIELDS if data.get(name) not in (None, "")]
        data["plans"] = []
        if given or data.get("plan_policy"):
            for name in self.PLAN_FIELDS:
                if name not in given and name not in self.errors:
                    self.add_error(name, "a training plan needs this too (or leave the plan's fields empty)")
            if not self.errors:
                plan = TrainingPlan(
                    data["plan_instance_type"].strip(), data["plan_instances"], data["plan_share"].strip(),
                    data["plan_start"], data["plan_end"],
                )  # fmt: skip
                data["plans"] = [(data.get("plan_policy"), plan)]
        return data

    def clean_factors(self) -> list[float]:
        return _numbers(self.cleaned_data["factors"], float)

    def clean_sizes(self) -> list[int]:
        return _numbers(self.cleaned_data["sizes"], int)

    def clean_urgent_shares(self) -> list[str]:
        return _split(self.cleaned_data["urgent_shares"])


class WorthForm(forms.Form):
    prefix = "worth"
    name = forms.CharField(
        max_length=200, required=False, help_text="default: the two policies and the trace"
    )
    trace = forms.ModelChoiceField(queryset=Trace.objects.defer("summary"), empty_label="choose a trace")
    policy_a = forms.ModelChoiceField(
        queryset=Policy.objects.none(), empty_label="choose a policy", label="Policy A",
        help_text="the policy whose pool is sized (say, the static split)",
    )  # fmt: skip
    policy_b = forms.ModelChoiceField(
        queryset=Policy.objects.none(), empty_label="choose a policy", label="Policy B",
        help_text="the policy to match, at today's size (say, lend and borrow)",
    )  # fmt: skip
    metric = forms.ChoiceField(choices=METRICS, initial=Metric.SHARE_P95.value, label="As good on")
    urgent_shares = forms.CharField(
        widget=WIDE, required=False, help_text="for the urgent shares' p95, separated by commas"
    )
    tolerance_seconds = forms.FloatField(
        min_value=0, initial=60, help_text="a wait this much longer still matches"
    )
    tolerance_percent = forms.FloatField(
        min_value=0, initial=2, help_text="or this much longer in %, whichever is more"
    )
    mode = forms.ChoiceField(choices=MODES, initial=SizeMode.PROPORTIONAL.value, label="Scale")
    instance_type = forms.CharField(
        max_length=100, required=False, help_text="blank: the type with most GPUs"
    )
    upper = forms.IntegerField(
        min_value=1,
        max_value=MAX_INSTANCES,
        required=False,
        help_text="the largest size to try, in instances (blank: 4x today's)",
    )
    parallel = forms.IntegerField(
        min_value=1, max_value=MAX_PARALLEL, initial=DEFAULT_PARALLEL,
        help_text="sizes replayed at once in each step (about one per worker)",
    )  # fmt: skip

    def __init__(self, data=None, *args, **kwargs):
        linked = _linked(data, kwargs.get("initial"), self.prefix)
        super().__init__(data, *args, **kwargs)
        self.fields["policy_a"].queryset = policy_choices(linked)
        self.fields["policy_b"].queryset = policy_choices(linked)

    def clean_urgent_shares(self) -> list[str]:
        return _split(self.cleaned_data["urgent_shares"])
