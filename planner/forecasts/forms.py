"""The forms of the forecast page: a snapshot pasted or uploaded (with its format, the policy, the
history and the sampling), or "the demo pool now" (only the sampling). Bounds and the snapshot's
records are checked by ``launch.start_forecast`` (one place, the API's too)."""

from __future__ import annotations

from django import forms

from planner.capacity.models import Policy
from planner.forecasts import bounds
from planner.forecasts.models import Arrivals, SnapshotFormat
from planner.traces.models import Trace

FORMATS = [
    (SnapshotFormat.AUTO.value, "detect the format"),
    (SnapshotFormat.PLANNER.value, "planner JSON"),
    (SnapshotFormat.KUEUE.value, "Kueue workloads (kubectl get workloads -A -o json)"),
    (SnapshotFormat.AWS_BATCH.value, "AWS Batch (list-service-jobs pages + describe-service-job)"),
]
ARRIVALS = [
    ("", "from the history when one is chosen, else none"),
    (Arrivals.HISTORY.value, "the previous week's, day by day"),
    (Arrivals.NONE.value, "no new jobs"),
]


DEMO_SAMPLES = 50
DEMO_HORIZON_DAYS = 7


class SamplingFields(forms.Form):
    samples = forms.IntegerField(
        initial=bounds.DEFAULT_SAMPLES,
        help_text=f"replays drawn from the history; 1 to {bounds.MAX_SAMPLES:,}, and samples × jobs at most "
        f"{bounds.DEFAULT_MAX_JOB_SAMPLES:,}",
    )
    seed = forms.IntegerField(initial=0, min_value=0, help_text="the same seed gives the same forecast")
    horizon_days = forms.FloatField(
        initial=30, label="Horizon (days)", help_text=f"at most {bounds.MAX_HORIZON_DAYS} days"
    )


class SnapshotForm(SamplingFields):
    name = forms.CharField(required=False, max_length=200)
    snapshot = forms.CharField(
        required=False,
        label="Snapshot (paste)",
        widget=forms.Textarea(attrs={"rows": 8, "cols": 60, "spellcheck": "false"}),
        help_text='JSON: {"time": T0, "running": [...], "pending": [...]}, or kubectl / AWS Batch output',
    )
    snapshot_file = forms.FileField(required=False, label="or upload a snapshot file")
    snapshot_format = forms.ChoiceField(choices=FORMATS, initial="auto", label="Format")
    policy = forms.ModelChoiceField(queryset=Policy.objects.none(), help_text="the pool's shares and rules")
    history = forms.ModelChoiceField(
        queryset=Trace.objects.none(),
        required=False,
        empty_label="none: every job gives its own duration",
        help_text="the trace durations and arrivals are drawn from",
    )
    arrivals = forms.ChoiceField(choices=ARRIVALS, required=False)

    field_order = [
        "name", "snapshot", "snapshot_file", "snapshot_format", "policy", "history", "samples", "seed",
        "arrivals", "horizon_days",
    ]  # fmt: skip

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["policy"].queryset = Policy.objects.exclude(sweep_variants__kept=False).order_by("name")
        self.fields["history"].queryset = Trace.objects.ready().order_by("name")

    def clean(self):
        data = super().clean()
        pasted, upload = (data.get("snapshot") or "").strip(), data.get("snapshot_file")
        if bool(pasted) == bool(upload):
            self.add_error("snapshot", "paste a snapshot or upload a file (one of the two)")
        elif upload is not None:
            limit = bounds.max_snapshot_bytes()
            if upload.size > limit:
                self.add_error(
                    "snapshot_file", f"{upload.size:,} bytes: at most {limit:,} (MAX_SNAPSHOT_BYTES)"
                )
            else:
                data["snapshot_data"] = upload.read()
        else:
            data["snapshot_data"] = pasted
        return data


class DemoForm(SamplingFields):
    """Fewer samples and a week's horizon by default: the demo pool holds about 2,000 jobs and a
    thousand arrivals a day, so a sample of it is seconds of a worker's time."""

    prefix = "demo"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["samples"].initial = DEMO_SAMPLES
        self.fields["horizon_days"].initial = DEMO_HORIZON_DAYS
