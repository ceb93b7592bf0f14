"""The form that starts a sweep from the page: trace, base policy, knobs to sweep, size, and the
constraints in words ("prod-training p95 wait <= 1 h", "utilization >= 70%")."""

from __future__ import annotations

import re

from django import forms

from planner.advisor.models import SweepMode
from planner.capacity.models import Policy
from planner.traces.models import Trace
from planner.validators import validate_name
from scheduling.advisor import DEFAULT_KNOBS, MAX_VARIANTS

CONSTRAINT_HELP = (
    'one per line: "SHARE p95 wait <= 1 h", "urgent p95 wait <= 2 h", "utilization >= 70%", '
    '"rerun <= 50 GPU-hours"'
)
NUMBER = r"(\d+(?:\.\d+)?)"
CONSTRAINT_PATTERNS = [
    (re.compile(rf"^urgent p95 wait\s*<=\s*{NUMBER}\s*h$", re.I), "urgent_p95_wait_seconds", "max", 3600),
    (re.compile(rf"^(\S+) p95 wait\s*<=\s*{NUMBER}\s*h$", re.I), "p95_wait_seconds", "max", 3600),
    (re.compile(rf"^utilization\s*>=\s*{NUMBER}\s*%$", re.I), "utilization", "min", 0.01),
    (re.compile(rf"^rerun\s*<=\s*{NUMBER}\s*gpu-hours$", re.I), "rerun_gpu_hours", "max", 1),
]


def parse_constraint_lines(text: str) -> list[dict]:
    """The constraints written one per line, as the JSON the API takes; ValueError naming the line."""
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = " ".join(line.split())
        if not line:
            continue
        for pattern, metric, bound, scale in CONSTRAINT_PATTERNS:
            found = pattern.match(line)
            if found:
                *share, value = found.groups()
                item = {"metric": metric, bound: round(float(value) * scale, 9)}
                if share:
                    item["share"] = share[0]
                out.append(item)
                break
        else:
            raise ValueError(f"line {number}: {line!r} is not a constraint ({CONSTRAINT_HELP})")
    return out


def _numbers(text: str, *, words: dict[str, object]) -> list:
    values = []
    for part in text.replace(";", ",").split(","):
        part = part.strip().lower().rstrip("%")
        if not part:
            continue
        if part in words:
            values.append(words[part])
            continue
        try:
            number = float(part)
        except ValueError:
            raise forms.ValidationError(f"{part!r} is not a number") from None
        values.append(int(number) if number.is_integer() else number)
    if not values:
        raise forms.ValidationError("give at least one value")
    return values


WIDE = forms.TextInput(attrs={"size": 40})


def knob_checkboxes(knob: str, label: str) -> forms.MultipleChoiceField:
    """A knob whose values are a fixed set: one checkbox each, all ticked (the engine's defaults)."""
    return forms.MultipleChoiceField(
        choices=[(value, value) for value in DEFAULT_KNOBS[knob]],
        initial=DEFAULT_KNOBS[knob],
        widget=forms.CheckboxSelectMultiple,
        label=label,
    )


class SweepForm(forms.Form):
    name = forms.CharField(
        max_length=100,
        required=False,
        validators=[validate_name],
        help_text="default: the base policy's name on the trace's",
    )
    trace = forms.ModelChoiceField(
        queryset=Trace.objects.ready().defer("summary"), empty_label="choose a trace"
    )
    base_policy = forms.ModelChoiceField(
        queryset=Policy.objects.all(), empty_label="choose a policy", help_text="the variants start from it"
    )
    shares = forms.CharField(
        widget=WIDE, required=False, help_text="shares to vary, separated by commas (blank: all of them)"
    )
    strategy = knob_checkboxes("strategy", "Strategies")
    borrow_limit_percent = forms.CharField(
        widget=WIDE,
        initial="unlimited, 0, 50, 100, 200",
        label="Borrow limits (%)",
        help_text="percent of quota, for LEND_AND_BORROW; 'unlimited' or -1 for no limit",
    )
    lending_limit = forms.CharField(
        widget=WIDE,
        initial="all, 0, 50",
        label="Lending limits (% of quota)",
        help_text="how much idle quota a share may lend; 'all' for no limit",
    )
    in_share_preemption = knob_checkboxes("in_share_preemption", "In-share preemption")
    fair_weight = forms.CharField(
        widget=WIDE,
        required=False,
        label="Fair-sharing weights",
        help_text="weights to try per share, e.g. 0.5, 1, 2 (blank: keep each share's weight)",
    )
    fair_sharing = forms.ChoiceField(
        choices=[("", "as in the base policy"), ("both", "try off and on"), ("on", "on"), ("off", "off")],
        required=False,
        label="Fair sharing",
        help_text="Kueue fairSharing for the whole policy (with Kueue's default strategies when turned on)",
    )
    mode = forms.ChoiceField(
        choices=SweepMode.choices, initial=SweepMode.GRID, help_text="the grid, or a random sample of it"
    )
    size = forms.IntegerField(
        min_value=1, max_value=MAX_VARIANTS, initial=50, label="Variants", help_text="at most this many"
    )
    seed = forms.IntegerField(initial=0, help_text="the same seed gives the same random sample")
    urgent_shares = forms.CharField(
        widget=WIDE,
        required=False,
        help_text="shares whose p95 wait is an objective, by commas (blank: all shares)",
    )
    constraints = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), required=False, help_text=CONSTRAINT_HELP
    )

    def clean_borrow_limit_percent(self) -> list:
        return _numbers(self.cleaned_data["borrow_limit_percent"], words={"unlimited": -1, "none": -1})

    def clean_lending_limit(self) -> list:
        values = _numbers(self.cleaned_data["lending_limit"], words={"all": None, "none": None})
        return [None if v is None else round(v / 100, 9) for v in values]

    def clean_fair_weight(self) -> list | None:
        text = self.cleaned_data["fair_weight"].strip()
        return _numbers(text, words={}) if text else None

    def clean_constraints(self) -> list[dict]:
        try:
            return parse_constraint_lines(self.cleaned_data["constraints"])
        except ValueError as error:
            raise forms.ValidationError(str(error)) from None

    @staticmethod
    def _names(text: str) -> list[str]:
        return [name.strip() for name in text.split(",") if name.strip()]

    def knobs(self) -> dict:
        data = self.cleaned_data
        knobs = {
            "strategy": data["strategy"],
            "borrow_limit_percent": data["borrow_limit_percent"],
            "lending_limit": data["lending_limit"],
            "in_share_preemption": data["in_share_preemption"],
        }
        shares = self._names(data["shares"])
        if shares:
            knobs["shares"] = shares
        if data.get("fair_weight"):
            knobs["fair_weight"] = data["fair_weight"]
        fair = {"both": [False, True], "on": [True], "off": [False]}.get(data.get("fair_sharing") or "")
        if fair:
            knobs["fair_sharing"] = fair
        return knobs

    def urgent(self) -> list[str]:
        return self._names(self.cleaned_data["urgent_shares"])
