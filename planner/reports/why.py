"""Why did a job wait? One job of one run of a study, its timeline drawn and tabled.

Unlike the comparison and finance pages this drill-down reads the run's stored job outcomes and
the trace's columns (for one job, on request): seconds for a million-job trace, not milliseconds.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from planner.reports import figures
from planner.reports.loops import loop_warnings
from planner.studies.models import RunStatus, Study
from planner.studies.timeline import NoTimeline, run_job_timeline
from planner.web.access import reader_required
from scheduling.errors import InputError


@reader_required
def job_wait(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("trace"), pk=pk)
    runs = list(study.runs.filter(status=RunStatus.SUCCEEDED).order_by("id"))
    run_id = request.GET.get("run", "")
    job_id = request.GET.get("job_id", "").strip()
    run = next((r for r in runs if str(r.pk) == run_id), runs[0] if runs else None)
    context: dict[str, Any] = {"study": study, "runs": runs, "run": run, "job_id": job_id}
    context["loop_warnings"] = loop_warnings([(run.policy_name, run.summary)] if run is not None else [])
    status = 200
    if run is not None and job_id:
        try:
            timeline = run_job_timeline(run, job_id)
        except (NoTimeline, InputError) as error:
            context["error"] = error.describe() if isinstance(error, InputError) else str(error)
            status = 404
        else:
            context["timeline"] = timeline
            submit = timeline["submit_time"]
            context["segments"] = [
                {
                    **s,
                    "label": label.split(":")[0],
                    "from_submit": s["start"] - submit,
                    "to_submit": s["end"] - submit,
                }  # fmt: skip
                for s, label in zip(
                    timeline["segments"], figures.segment_labels(timeline["segments"]), strict=True
                )
            ]
            context["timeline_figure"] = figures.job_timeline_figure(timeline)
    return render(request, "reports/why.html", context, status=status)
