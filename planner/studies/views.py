"""Studies: the list with each run's progress (refreshed while runs are going), the form that
launches one through ``planner.studies.launch`` (the API's path), and the menu's "Find a job". The
comparison page itself is ``planner.reports`` at /studies/<id>/."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.shortcuts import redirect, render
from django.urls import reverse

from planner.capacity.models import Policy
from planner.studies.forms import StudyForm
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Study
from planner.web.access import editor_required, reader_required
from planner.web.listing import listed_studies, searchable_studies
from planner.web.query import query_id, query_ids
from planner.web.views.headline import headlines, study_url
from planner.worker_rows import FINISHED

STUDIES_PER_PAGE = 25
STUDIES_OFFERED = 50  # by Find a job


@reader_required
def study_list(request):
    studies = listed_studies(Study.objects.select_related("trace", "created_by").defer("trace__summary"))
    page = Paginator(studies, STUDIES_PER_PAGE).get_page(request.GET.get("page"))
    rows = headlines(page.object_list)
    working = any(policy.status not in FINISHED for item, _ in rows for policy in item.policies)
    return render(request, "studies/list.html", {"rows": rows, "working": working, "page": page})


@editor_required
def study_new(request):
    if request.method == "POST":
        form = StudyForm(request.POST)
        if form.is_valid():
            chosen = list(form.cleaned_data["policies"])
            launch = StudyLaunch.from_data(form.cleaned_data, policies=chosen, created_by=request.user)
            try:
                study = launch_study(launch)
            except ValidationError as error:
                form.place(error)
            else:
                messages.success(request, f"Study {study.name} started: {len(chosen)} replays queued.")
                return redirect(study_url(study.pk))
        return render(request, "studies/new.html", {"form": form}, status=400)
    initial: dict = {}
    if query_id(request.GET, "trace"):
        initial["trace"] = query_id(request.GET, "trace")
    if request.GET.get("name"):
        initial["name"] = request.GET["name"][:200]
    chosen = query_ids(request.GET, "policy")
    if chosen:
        family = Policy.objects.filter(pk__in=chosen).values_list("pk", "parent_id")
        # A policy's variants (and its parent's) are the usual alternatives to compare with it.
        related = set(chosen) | {parent for _, parent in family if parent}
        initial["policies"] = list(Policy.objects.filter(pk__in=related).values_list("pk", flat=True)) + list(
            Policy.objects.filter(parent_id__in=related).values_list("pk", flat=True)
        )
        initial["baseline"] = chosen[0]
    return render(request, "studies/new.html", {"form": StudyForm(initial=initial)})


# -- find a job --------------------------------------------------------------------------------
# Pick the study (the newest one with a finished replay is chosen) and type a job id, user or name;
# the study's own job finder (``reports:study-jobs``) answers. Without a study yet, the page says
# what to do instead of being a dead end.


@reader_required
def find_job(request):
    studies = list(searchable_studies()[:STUDIES_OFFERED])
    chosen = request.GET.get("study", "")
    query = request.GET.get("q", "").strip()[:200]
    if chosen.isdigit() and any(study.pk == int(chosen) for study in studies):
        target = reverse("reports:study-jobs", args=[int(chosen)])
        return redirect(f"{target}?{urlencode({'q': query})}" if query else target)
    return render(request, "studies/find_job.html", {"studies": studies, "q": query})
