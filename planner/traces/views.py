"""Traces: the list, the upload (with a preview of the first jobs before anything is stored) and
the trace page drawn from its stored summary (``scheduling.traces.summary``), never from jobs."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import RequestDataTooBig
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse

from planner.accounts.permissions import can_edit
from planner.studies.models import Study
from planner.traces.forms import MAPPING_FIELDS, TraceUploadForm
from planner.traces.models import ParseStatus, Trace, check_options, read_upload
from planner.traces.receive import receive_upload_form
from planner.traces.tasks import reap_stale_parses
from planner.web import charts
from planner.web.access import editor_required, reader_required
from planner.web.views.headline import study_url
from scheduling.errors import InputError
from scheduling.traces.mapping import IMPORTERS, columns, importer, preview, trace_rows

PREVIEW_ROWS = 10
# Where an upload error goes on the form: the reader's field names that are the form's own.
FORM_FIELDS = {"format": "format", "mapping": "mapping", "name": "name"}


@reader_required
def trace_list(request):
    traces = Trace.objects.ready().select_related("created_by").defer("summary")
    # uploads still parsing, or failed, are listed apart and only for those who upload
    uploads = Trace.objects.exclude(status=ParseStatus.SUCCEEDED).defer("summary")
    if not can_edit(request.user):
        uploads = uploads.none()
    return render(request, "traces/list.html", {"traces": traces, "uploads": uploads})


def error_field(error: InputError) -> str:
    """The form field an InputError belongs next to: format, a mapping setting, the mapping, or
    (a row or a column of the file) the file."""
    if error.row is not None:
        return "file"
    top, _, rest = (error.field or "").partition(".")
    if top == "mapping" and rest.split(".", 1)[0] in MAPPING_FIELDS:
        return rest.split(".", 1)[0]
    return FORM_FIELDS.get(top, "file")


class TooLarge(InputError):
    """A body or file past PLANNER_MAX_UPLOAD_BYTES: HTTP 413."""


def size_error(upload) -> InputError | None:
    limit = settings.PLANNER_MAX_UPLOAD_BYTES
    if upload.size > limit:
        return TooLarge(f"the file is {upload.size:,} bytes: the limit is {limit:,}", field="file")
    return None


def refused_form(message: str, status: int):
    """The upload form showing only why the request was refused (its fields were not read)."""
    form = TraceUploadForm(data={}, files={})
    form.is_valid()
    form.errors.clear()
    form.add_error("file", f"{message}: nothing was stored")
    return form


def preview_of(upload, fmt: str, mapping: dict | None) -> dict:
    """The file's first jobs as they would be imported (and, for importers, its columns)."""
    out: dict = {"format": fmt, "columns": None, "default_mapping": None}
    if fmt in IMPORTERS:
        out["columns"] = columns(upload, fmt)
        upload.seek(0)
        out["default_mapping"] = json.dumps(importer(fmt).DEFAULT_MAPPING.to_dict())
        out["rows"] = preview(upload, fmt, mapping, rows=PREVIEW_ROWS)
    else:
        trace = read_upload(upload, format=fmt, mapping=mapping)
        out["rows"] = trace_rows(trace, PREVIEW_ROWS)
        out["job_count"] = len(trace)
    out["headers"] = list(out["rows"][0]) if out["rows"] else []
    return out


@editor_required
def trace_upload(request):
    preview_result = None
    if request.method != "POST":
        form = TraceUploadForm()
        return render(request, "traces/upload.html", {"form": form, "importers": IMPORTERS})
    limit = settings.PLANNER_MAX_UPLOAD_BYTES
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > limit + 64 * 1024:  # refused before reading the body
        form = refused_form(f"the upload is {declared:,} bytes: the limit is {limit:,}", 413)
        return render(request, "traces/upload.html", {"form": form, "importers": IMPORTERS}, status=413)
    try:
        wants_preview = request.POST.get("action") == "preview"
        form = TraceUploadForm(request.POST, request.FILES, preview=wants_preview)
    except RequestDataTooBig as error:  # stopped while streaming in (planner.traces.uploads)
        form = refused_form(str(error), 413)
        return render(request, "traces/upload.html", {"form": form, "importers": IMPORTERS}, status=413)
    too_large = False
    if form.is_valid():
        upload = form.cleaned_data["file"]
        fmt = form.cleaned_data["format"]
        mapping = form.cleaned_data["mapping"]
        try:
            problem = size_error(upload)
            if problem:
                raise problem
            if wants_preview:
                preview_result = preview_of(upload, fmt, mapping)
            else:
                check_options(fmt, mapping)
                trace = receive_upload_form(form.cleaned_data, request.user)
                messages.success(
                    request, f"Trace {trace.name} uploaded: a worker is reading it; this page follows it."
                )
                return redirect("web:trace", pk=trace.pk)
        except InputError as error:
            too_large = isinstance(error, TooLarge)
            form.add_error(error_field(error), error.describe())
    status = 200 if form.is_valid() else (413 if too_large else 400)
    return render(
        request,
        "traces/upload.html",
        {"form": form, "importers": IMPORTERS, "preview": preview_result, "previewed": wants_preview},
        status=status,
    )


# -- the trace page ---------------------------------------------------------------------------


def share_names(summary: dict) -> list[str]:
    return [share["name"] for share in summary.get("shares", [])]


def colors_of(summary: dict) -> dict[str, str]:
    return charts.share_colors(share_names(summary))


def _by_share_figure(
    summary: dict, key: str, draw: Callable, unit: str, values: Callable[[dict, str], list], **figure: Any
) -> dict:
    """One series a share over the time axis of the summary's ``key`` part (arrivals, demand):
    ``values(part, share)`` drawn with ``draw`` (a bar, an area) in the share's colour."""
    part = summary.get(key, {})
    epoch = bool(summary.get("span", {}).get("epoch_times"))
    x, x_title = charts.time_axis(part.get("t", []), epoch_times=epoch)
    colors = colors_of(summary)
    traces = [
        draw(x, values(part, name), name=name, color=colors[name], unit=unit) for name in share_names(summary)
    ]
    return charts.figure(traces, x_title=x_title, **figure)


def arrivals_figure(summary: dict) -> dict:
    width_hours = summary.get("arrivals", {}).get("width", 0) / 3600
    return _by_share_figure(
        summary,
        "arrivals",
        charts.bar,
        "jobs",
        lambda part, name: part.get("shares", {}).get(name, []),
        title="Job arrivals by share",
        y_title=f"jobs submitted per {width_hours:,.2f} h",
        barmode="stack",
        extra_layout={"bargap": 0},
    )


def demand_figure(summary: dict) -> dict:
    width = summary.get("demand", {}).get("width") or 1
    return _by_share_figure(
        summary,
        "demand",
        charts.area,
        "GPUs",
        lambda part, name: [
            seconds / width for seconds in part.get("shares", {}).get(name, {}).get("gpu_seconds", [])
        ],
        title="GPU demand by share (each job run from its submission)",
        y_title="GPUs in use on average",
    )


def _jobs_histogram(bins: dict, *, title: str, x_title: str) -> dict:
    """Jobs per bin, the bins labelled (categories, not numbers on a scale)."""
    fig = charts.figure([bins], title=title, x_title=x_title, y_title="jobs", show_legend=False)
    fig["layout"]["xaxis"]["type"] = "category"
    return fig


def size_figure(summary: dict) -> dict:
    sizes = summary.get("sizes", {"values": [], "jobs": []})
    if sizes.get("binned"):
        labels = [f"{low:,}–{high - 1:,}" for low, high in zip(sizes["values"], sizes["upper"], strict=True)]
    else:
        labels = [f"{value:,}" for value in sizes.get("values", [])]
    bins = charts.bar(labels, sizes.get("jobs", []), name="jobs", color="#4477AA", unit="jobs")
    return _jobs_histogram(bins, title="Job size: instances per job", x_title="instances per job")


def duration_label(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:,.3g} s"
    if seconds < 3600:
        return f"{seconds / 60:,.3g} min"
    if seconds < 86400:
        return f"{seconds / 3600:,.3g} h"
    return f"{seconds / 86400:,.3g} d"


def duration_figure(summary: dict) -> dict:
    durations = summary.get("durations", {"edges": [0, 1], "jobs": []})
    edges, jobs = durations.get("edges", []), durations.get("jobs", [])
    # Drop the empty bins at both ends so the bars show the part of the range that has jobs.
    used = [i for i, n in enumerate(jobs) if n]
    first, last = (used[0], used[-1]) if used else (0, -1)
    labels = [f"≥ {duration_label(edges[i])}" for i in range(first, last + 1)]
    bins = charts.bar(labels, jobs[first : last + 1], name="jobs", color="#228833", unit="jobs")
    bins["customdata"] = [
        f"{duration_label(edges[i])} to {duration_label(edges[i + 1])}" for i in range(first, last + 1)
    ]
    bins["hovertemplate"] = "%{customdata}: %{y:,} jobs<extra></extra>"
    return _jobs_histogram(bins, title="Job duration (log-spaced bins)", x_title="duration")


def span_text(summary: dict) -> str:
    """How long the trace lasts, with its dates when its times are real (epoch) times."""
    span = summary.get("span", {})
    seconds = span.get("seconds") or 0
    days = seconds / 86400
    length = f"{days:,.1f} days" if days >= 2 else f"{seconds / 3600:,.1f} hours"
    if not span.get("epoch_times"):
        return length
    start, end = (
        datetime.fromtimestamp(span.get(key, 0), tz=UTC).strftime("%Y-%m-%d") for key in ("start", "end")
    )
    return f"{length} ({start} to {end} UTC)"


@reader_required
def trace_detail(request, pk: int):
    trace = get_object_or_404(Trace.objects.select_related("created_by"), pk=pk)
    if not trace.finished:
        reap_stale_parses(Trace.objects.filter(pk=trace.pk))  # its worker may have died
        trace.refresh_from_db()
    if not trace.ready:
        return render(
            request,
            "traces/parsing.html",
            {"trace": trace, "api_url": reverse("trace-detail", args=[trace.pk])},
        )
    summary = trace.summary or {}
    studies = Study.objects.filter(trace=trace).order_by("-created_at")
    share_rows = sorted(summary.get("shares", []), key=lambda share: -share.get("gpu_hours", 0))
    total_hours = summary.get("gpu_hours") or 0
    colors = colors_of(summary)
    for share in share_rows:
        share["gpu_hours_fraction"] = share.get("gpu_hours", 0) / total_hours if total_hours else None
        share["color"] = colors[share["name"]]
    return render(
        request,
        "traces/detail.html",
        {
            "trace": trace,
            "summary": summary,
            "span": span_text(summary),
            "shares": share_rows,
            "instance_types": sorted(summary.get("instance_types", {}).items(), key=lambda item: -item[1]),
            "arrivals_chart": arrivals_figure(summary),
            "demand_chart": demand_figure(summary),
            "size_chart": size_figure(summary),
            "duration_chart": duration_figure(summary),
            "studies": [(study, study_url(study.pk)) for study in studies],
        },
    )
