"""The advisor pages: the sweeps with the form that starts one (admins), and one sweep: its progress
while the variants replay, then the Pareto front chart and table with a "save as policy" button."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from planner.advisor.forms import SweepForm
from planner.advisor.front import front_figure, sweep_constraints, sweep_rows
from planner.advisor.launch import SweepLaunch, delete_sweep, keep_variant, start_sweep
from planner.advisor.models import Sweep, SweepVariant
from planner.studies.reaper import reap_stale_runs
from planner.web.access import check_editor, editor_required, reader_required
from planner.web.forms import place_launch_error, start_from_form


@reader_required
def sweep_list(request):
    form = SweepForm()
    status = 200
    if request.method == "POST":
        check_editor(request)
        form = SweepForm(request.POST)
        if form.is_valid():
            launch = SweepLaunch.from_data(
                form.cleaned_data, knobs=form.knobs(), urgent_shares=form.urgent(), created_by=request.user
            )
            started = start_from_form(
                request,
                lambda: start_sweep(launch),
                lambda error: place_launch_error(form, error, {"knobs": None, "policies": "base_policy"}),
                lambda sweep: f"Sweep {sweep.name} started: {sweep.variants.count()} variants.",
                "advisor:detail",
            )
            if started:
                return started
        status = 400
    sweeps = Sweep.objects.select_related("trace", "base_policy", "created_by", "study")
    working = any(not sweep.finished for sweep in sweeps)
    return render(
        request, "advisor/list.html", {"sweeps": sweeps, "form": form, "working": working}, status=status
    )


@reader_required
def sweep_detail(request, pk: int):
    sweep = get_object_or_404(
        Sweep.objects.select_related("trace", "base_policy", "created_by", "study"), pk=pk
    )
    if sweep.study_id:
        reap_stale_runs(runs=sweep.study.runs.all())
    rows = sweep_rows(sweep, request.user)
    front = [row for row in rows if row.assessment.on_front]
    context = {
        "sweep": sweep,
        "rows": rows,
        "front": front,
        "figure": front_figure(rows),
        "counts": sweep_counts(sweep),
        "constraint_text": [constraint.describe() for constraint in sweep_constraints(sweep)],
    }
    return render(request, "advisor/detail.html", context)


def sweep_counts(sweep: Sweep) -> dict[str, int]:
    """Runs of the sweep's study by status, and the total."""
    counts = {"queued": 0, "running": 0, "succeeded": 0, "failed": 0}
    if sweep.study_id:
        for status in sweep.study.runs.values_list("status", flat=True):
            counts[status] = counts.get(status, 0) + 1
    counts["total"] = sum(counts.values())
    return counts


@require_POST
@editor_required
def keep(request, pk: int, number: int):
    variant = get_object_or_404(SweepVariant.objects.select_related("policy"), sweep_id=pk, number=number)
    try:
        policy = keep_variant(variant, request.POST.get("name", ""))
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect("advisor:detail", pk=pk)
    messages.success(request, f"Saved as policy {policy.name}: it stays when the sweep is deleted.")
    return redirect("web:policy", pk=policy.pk)


@require_POST
@editor_required
def delete(request, pk: int):
    sweep = get_object_or_404(Sweep, pk=pk)
    name = sweep.name
    delete_sweep(sweep)
    messages.success(request, f"Sweep {name} deleted with its study and the variants not saved.")
    return redirect("advisor:list")
