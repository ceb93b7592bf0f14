"""Bring your scheduler: one page that takes an AWS Batch or Kueue team from its own exports to a
decision. Five steps, each on the same page and each kept in the URL (``?scheduler=&policy=&trace=
&calibration=&study=``) so a reload or a shared link shows the same state:

1. the configuration export -> a policy (``scheduling.export.configuration``);
2. the job history -> a trace, previewed and mapped first, checked against that policy;
3. the calibration of the history under the policy (waits and preemptions, simulated against recorded);
4. a study of the imported policy and its presets (static split, full pooling, preemption off);
5. the export of the variant chosen, back to the scheduler (the export API's links).

Every step only calls what the rest of the planner uses (store_imported_policy, Trace.store,
start_calibration, make_variant, launch_study); errors are put next to the field that caused them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig, ValidationError
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.calibration.launch import CalibrationLaunch, start_calibration
from planner.calibration.models import Calibration
from planner.capacity.models import Policy
from planner.exports.importing import store_imported_policy
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Study
from planner.traces.forms import PreviewableUploadForm
from planner.traces.models import Trace
from planner.web.access import editor_required
from planner.web.query import query_id
from planner.web.variants import make_variant, study_presets
from planner.web.views.headline import study_url
from scheduling.errors import InputError
from scheduling.export.configuration import read_configuration_files
from scheduling.traces import read_trace
from scheduling.traces.mapping import trace_rows
from scheduling.traces.policy_fit import check_trace_fits_policy

SCHEDULERS = {
    "aws-batch": {
        "label": "AWS Batch",
        "history_format": "aws-batch-jobs",
        "configuration_help": "The outputs of aws batch describe-service-environments, "
        "describe-scheduling-policies, list-quota-shares --job-queue Q and describe-job-queues (JSON): "
        "one file each, or one file of them concatenated. The planner's own export bundle works too.",
        "history_help": "What aws batch describe-service-job prints, one object per job (concatenated, "
        "a JSON array or JSON lines); or list-service-jobs pages (they carry no priority); or "
        "EventBridge 'Batch Service Job State Change' events, JSON lines. gzip is fine.",
        "sample_configuration": "samples/aws-batch/configuration.json",
        "sample_history": "samples/aws-batch/describe-service-jobs.json",
    },
    "kueue": {
        "label": "Kueue",
        "history_format": "kueue-workloads",
        "configuration_help": "kubectl get clusterqueues,cohorts,resourceflavors,workloadpriorityclasses "
        "-o yaml (v1beta1 or v1beta2), and optionally the Kueue Configuration (fairSharing) as a second "
        "file. The planner's own Kueue export works too.",
        "history_help": "kubectl get workloads,localqueues -A -o json (the LocalQueues name the "
        "ClusterQueue of workloads never admitted). gzip is fine.",
        "sample_configuration": "samples/kueue/configuration.yaml",
        "sample_history": "samples/kueue/workloads.json",
    },
}
PREVIEW_ROWS = 10


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """One or more files (Django's FileField takes one)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("widget", MultipleFileInput())
        super().__init__(*args, **kwargs)

    def clean(self, data, initial=None):
        single = super().clean
        if isinstance(data, (list, tuple)):
            return [single(item, initial) for item in data]
        return [single(data, initial)]


class ConfigurationForm(forms.Form):
    scheduler = forms.ChoiceField(
        choices=[(key, spec["label"]) for key, spec in SCHEDULERS.items()], label="Scheduler"
    )
    files = MultipleFileField(label="Configuration export", help_text="one or more files")
    pool = forms.CharField(
        max_length=100,
        label="Pool",
        help_text="a new pool is created with the imported capacity; an existing one must have exactly it",
    )
    name = forms.CharField(
        max_length=100, required=False, label="Policy name", help_text="default: the imported name"
    )
    job_queue = forms.CharField(
        max_length=128, required=False, label="Job queue (AWS)", help_text="when several are described"
    )


class HistoryForm(PreviewableUploadForm):
    file = forms.FileField(label="Job history export")
    name = forms.CharField(max_length=200, label="Trace name")
    share_column = forms.CharField(
        required=False,
        label="Share field",
        help_text="default: quotaShareName (AWS) or the admitting ClusterQueue (Kueue); "
        "tags.<key> or labels.<key> name a tag or a label",
    )
    default_priority = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=9999,
        label="Priority of list-service-jobs summaries (AWS)",
        help_text="list pages carry no schedulingPriority: every job gets this one (default 0)",
    )

    def clean_name(self) -> str:
        name = self.cleaned_data["name"].strip()
        if name and Trace.objects.filter(name=name).exists():
            raise forms.ValidationError(f"a trace named {name!r} already exists")
        return name

    def mapping(self, scheduler: str) -> dict | None:
        data = self.cleaned_data
        mapping: dict = {}
        if data.get("share_column"):
            mapping["share_column"] = data["share_column"].strip()
        if scheduler == "aws-batch" and data.get("default_priority") is not None:
            mapping["default_priority"] = data["default_priority"]
        return mapping or None


# -- the state in the URL -----------------------------------------------------------------------


def _state(request) -> dict:
    """The flow's objects from the query string (a stale or foreign id is dropped)."""
    query = request.GET  # the forms post to the page's own URL, state included
    scheduler = query.get("scheduler")
    state: dict = {"scheduler": scheduler if scheduler in SCHEDULERS else None}
    for key, model in (("policy", Policy), ("trace", Trace), ("calibration", Calibration), ("study", Study)):
        value = query_id(query, key)
        state[key] = model.objects.filter(pk=value).first() if value else None
    if state["trace"] is None:
        state["calibration"] = state["study"] = None
    if state["policy"] is None:
        state["trace"] = state["calibration"] = state["study"] = None
    return state


def flow_url(state: dict, **changes) -> str:
    merged = {**state, **changes}
    params = {}
    for key in ("scheduler", "policy", "trace", "calibration", "study"):
        value = merged.get(key)
        if value is not None:
            params[key] = value if isinstance(value, str) else value.pk
    return reverse("web:byos") + ("?" + urlencode(params) if params else "")


# -- the page ------------------------------------------------------------------------------------


@editor_required
def byos(request):
    state = _state(request)
    forms_by_step = {
        "configuration": ConfigurationForm(initial={"scheduler": state["scheduler"] or "aws-batch"})
    }
    forms_by_step["history"] = HistoryForm()
    preview = None
    status = 200
    if request.method == "POST":
        too_big = _too_big(request)
        step = None if too_big else request.POST.get("step")
        handler = STEPS.get(step or "")
        outcome = None
        if too_big:
            messages.error(request, f"{too_big}: nothing was stored")
        elif handler is None:
            messages.error(request, "the form sent no step of this page: reload it and try again")
        else:
            try:
                outcome = handler(request, state, forms_by_step)
            except RequestDataTooBig as error:  # stopped while streaming in (planner.traces.uploads)
                form = HistoryForm() if step == "history" else ConfigurationForm()
                form.add_error(None, f"{error}: nothing was stored")
                forms_by_step[step if step in forms_by_step else "configuration"] = form
        if isinstance(outcome, str):
            return redirect(outcome)
        if isinstance(outcome, dict):
            preview = outcome
        status = 200 if preview is not None else 400
    return render(request, "web/byos.html", _context(request, state, forms_by_step, preview), status=status)


def _too_big(request) -> str:
    """Why the POST's fields cannot be read ('' when they can): an upload past the size limit is
    stopped while it streams in (planner.traces.uploads)."""
    try:
        request.POST  # noqa: B018 (parses the body)
    except RequestDataTooBig as error:
        return str(error)
    return ""


def _context(request, state: dict, forms_by_step: dict, preview: dict | None) -> dict:
    scheduler = state["scheduler"]
    calibration = state["calibration"]
    study = state["study"]
    runs = list(study.runs.select_related("policy").order_by("pk")) if study else []
    return {
        "state": state,
        "spec": SCHEDULERS.get(scheduler) if scheduler else None,
        "schedulers": SCHEDULERS,
        "configuration_form": forms_by_step["configuration"],
        "history_form": forms_by_step["history"],
        "preview": preview,
        "calibration_blocks": _calibration_blocks(calibration),
        "runs": runs,
        "study_link": study_url(study.pk) if study else None,
        "presets": study_presets(state["policy"], state["trace"]),
        "here": flow_url(state),
        "working": (calibration is not None and not calibration.finished)
        or any(run.status not in ("succeeded", "failed") for run in runs),
        "max_upload_bytes": settings.PLANNER_MAX_UPLOAD_BYTES,
    }


def _calibration_blocks(calibration: Calibration | None) -> list[dict]:
    if calibration is None or not calibration.summary:
        return []
    return calibration.summary.get("blocks", [])


# -- the steps -----------------------------------------------------------------------------------


def _configuration(request, state: dict, forms_by_step: dict):
    form = ConfigurationForm(request.POST, request.FILES)
    forms_by_step["configuration"] = form
    if not form.is_valid():
        return None
    data = form.cleaned_data
    limit = settings.PLANNER_MAX_UPLOAD_BYTES
    try:
        for upload in data["files"]:
            if upload.size > limit:
                raise InputError(
                    f"{upload.name} is {upload.size:,} bytes: the limit is {limit:,}", field="files"
                )
        files = [(upload.name or f"file {i + 1}", upload.read()) for i, upload in enumerate(data["files"])]
        imported = read_configuration_files(data["scheduler"], files, job_queue=data["job_queue"] or None)
        policy = store_imported_policy(imported, pool_name=data["pool"], name=data["name"] or None)
    except InputError as error:
        form.add_error(_configuration_field(error), error.describe())
        return None
    messages.success(request, f"Policy {policy.name} imported on pool {policy.pool.name}.")
    return flow_url({}, scheduler=data["scheduler"], policy=policy)


def _configuration_field(error: InputError) -> str:
    top = (error.field or "").split(".", 1)[0]
    if top in ("pool", "name", "job_queue"):
        return top
    return "files"


def _history(request, state: dict, forms_by_step: dict):
    form = HistoryForm(request.POST, request.FILES, preview=request.POST.get("action") == "preview")
    forms_by_step["history"] = form
    if state["policy"] is None or state["scheduler"] is None:
        form.add_error(None, "import the configuration first (step 1)")
        return None
    if not form.is_valid():
        return None
    upload = form.cleaned_data["file"]
    fmt = SCHEDULERS[state["scheduler"]]["history_format"]
    limit = settings.PLANNER_MAX_UPLOAD_BYTES
    stats: dict = {}
    try:
        if upload.size > limit:
            raise InputError(f"the file is {upload.size:,} bytes: the limit is {limit:,}", field="file")
        mapping = form.mapping(state["scheduler"])
        columns = read_trace(
            upload, format=fmt, mapping=mapping, stats=stats, max_rows=settings.PLANNER_MAX_TRACE_ROWS
        )
        engine_policy = state["policy"].engine_policy()
        check_trace_fits_policy(columns, engine_policy, fmt)
    except InputError as error:
        form.add_error(_history_field(error), error.describe())
        return None
    except ValidationError as error:
        form.add_error(None, f"{state['policy'].name}: {' '.join(error.messages)}")
        return None
    if request.POST.get("action") == "preview":
        rows = [_readable_times(row) for row in trace_rows(columns, PREVIEW_ROWS)]
        return {
            "rows": rows,
            "headers": list(rows[0]) if rows else [],
            "stats": stats,
            "jobs": len(columns),
            "shares": list(columns.share_names),
            "policy_shares": [share.name for share in engine_policy.shares],
        }
    trace = Trace.store(
        columns,
        name=form.cleaned_data["name"],
        description=import_summary(stats),
        format=fmt,
        source_name=upload.name or "",
        mapping=mapping,
        created_by=request.user,
    )
    messages.success(request, f"History {trace.name} stored: {trace.job_count:,} jobs.")
    return flow_url(state, trace=trace, calibration=None, study=None)


def _readable_times(row: dict) -> dict:
    """Epoch seconds of a preview row as UTC timestamps (a history's times are all epoch times)."""
    out = dict(row)
    for key in ("submit_time", "recorded_start"):
        if isinstance(out.get(key), float):
            out[key] = datetime.fromtimestamp(out[key], tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
    return out


def _history_field(error: InputError) -> str:
    top = (error.field or "").split(".", 1)[0]
    if top == "mapping":
        key = (error.field or "").split(".")[1] if "." in (error.field or "") else ""
        return {"share_column": "share_column", "default_priority": "default_priority"}.get(key, "file")
    return "name" if top == "name" else "file"


def import_summary(stats: dict) -> str:
    """The importer's counts in words, kept as the trace's description."""
    parts = [
        f"Imported from {stats.get('format')}: {stats.get('jobs', 0):,} jobs "
        f"of {stats.get('source_rows', 0):,} records."
    ]
    skipped = stats.get("skipped") or {}
    if skipped:
        parts.append(
            "Left out: "
            + ", ".join(f"{n:,} {reason.replace('_', ' ')}" for reason, n in skipped.items())
            + "."
        )
    notes = stats.get("notes") or {}
    if notes:
        parts.append(
            "Noted: " + ", ".join(f"{n:,} {what.replace('_', ' ')}" for what, n in notes.items()) + "."
        )
    if "default_priority" in stats:
        parts.append(
            "list-service-jobs summaries carry no priority: every job has priority "
            f"{stats['default_priority']}."
        )
    return " ".join(parts)


def _calibrate(request, state: dict, forms_by_step: dict):
    if state["trace"] is None:
        messages.error(request, "store the history first (step 2)")
        return flow_url(state)
    try:
        calibration = start_calibration(
            CalibrationLaunch(
                trace=state["trace"],
                policy=state["policy"],
                created_by=request.user,
                note=f"The configuration imported from {SCHEDULERS[state['scheduler']]['label']}.",
            ),
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return flow_url(state)
    return flow_url(state, calibration=calibration)


def _study(request, state: dict, forms_by_step: dict):
    if state["trace"] is None:
        messages.error(request, "store the history first (step 2)")
        return flow_url(state)
    base = state["policy"]
    try:
        presets = study_presets(base, state["trace"])
        variants = [make_variant(base, preset) for preset in presets]
        study = launch_study(
            StudyLaunch(
                name=f"{base.name}: as configured and its presets",
                trace=state["trace"],
                policies=[base, *variants],
                baseline=base,
                description=f"The policy imported from {SCHEDULERS[state['scheduler']]['label']} against "
                + ", ".join(preset.label for preset in presets)
                + ".",
                created_by=request.user,
            ),
        )
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return flow_url(state)
    return flow_url(state, study=study)


STEPS = {
    "configuration": _configuration,
    "history": _history,
    "calibrate": _calibrate,
    "study": _study,
}
