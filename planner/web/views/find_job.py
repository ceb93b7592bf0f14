"""The menu's "Find a job": pick the study (the newest one with a finished replay is chosen) and
type a job id, user or name; the study's own job finder (``reports:study-jobs``) answers. Without
a study yet, the page says what to do instead of being a dead end."""

from __future__ import annotations

from urllib.parse import urlencode

from django.db.models import Exists, OuterRef
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.studies.models import Run, RunStatus, Study
from planner.web.access import reader_required
from planner.web.listing import listed_studies

STUDIES_OFFERED = 50


def searchable_studies():
    """Studies (not a sweep's) with at least one succeeded run, newest first."""
    done = Run.objects.filter(study=OuterRef("pk"), status=RunStatus.SUCCEEDED)
    return listed_studies(Study.objects.all()).filter(Exists(done)).select_related("trace").defer(
        "trace__summary"
    ).order_by("-created_at", "-id")


@reader_required
def find_job(request):
    studies = list(searchable_studies()[:STUDIES_OFFERED])
    chosen = request.GET.get("study", "")
    query = request.GET.get("q", "").strip()[:200]
    if chosen.isdigit() and any(study.pk == int(chosen) for study in studies):
        target = reverse("reports:study-jobs", args=[int(chosen)])
        return redirect(f"{target}?{urlencode({'q': query})}" if query else target)
    return render(request, "web/find_job.html", {"studies": studies, "q": query})
