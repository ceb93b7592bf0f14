"""The trace upload form: a file, its name and how to read it. Parsing and the row/field errors
come from ``scheduling.traces``; the importers' common mapping settings have fields of their own."""

from __future__ import annotations

import json

from django import forms
from django.core.exceptions import ValidationError

from planner.traces.models import ParseStatus, Trace
from planner.validators import validate_long_name
from scheduling.traces import FORMATS
from scheduling.traces.mapping import IMPORTERS, PriorityMode

FORMAT_CHOICES = [("auto", "auto: planner CSV or JSON, by name or content")] + [
    (name, f"{name} (importer: takes a mapping)" if name in IMPORTERS else name) for name in FORMATS
]


MAPPING_FIELDS = ("share_column", "priority_column", "priority_mode", "gpus_per_instance")


class PreviewableUploadForm(forms.Form):
    """An upload form whose file can be previewed before it is named (``preview=True``): a preview
    reads the file only, so its ``name`` field is not required yet."""

    def __init__(self, *args, preview: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if preview:
            self.fields["name"].required = False


class TraceUploadForm(PreviewableUploadForm):
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
