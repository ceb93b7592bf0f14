"""The study form: a trace, the policies to replay it under (only those that fit the trace are
offered) and the baseline. Whether the study can start is decided by ``launch.launch_study``."""

from __future__ import annotations

from django import forms
from django.core.exceptions import ValidationError

from planner.capacity.models import Policy
from planner.studies.fit import split_by_fit
from planner.traces.models import Trace
from planner.validators import validate_long_name
from planner.web.forms import place_errors
from planner.web.listing import listed_policies


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
