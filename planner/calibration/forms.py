"""The form that starts a calibration from the page: a trace with recorded starts and a policy."""

from __future__ import annotations

from django import forms

from planner.capacity.models import Policy
from planner.traces.models import Trace


def traces_with_recorded_starts():
    return Trace.objects.ready().filter(summary__recorded_starts__gt=0).defer("summary")


class CalibrationForm(forms.Form):
    trace = forms.ModelChoiceField(
        queryset=Trace.objects.none(),
        help_text="only traces that record when each job started",
        empty_label="choose a trace",
    )
    policy = forms.ModelChoiceField(
        queryset=Policy.objects.all(),
        help_text="the policy that was in force when the trace was recorded",
        empty_label="choose a policy",
    )

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["trace"].queryset = traces_with_recorded_starts()
