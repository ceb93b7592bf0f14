"""The calibration pages: the list (with the form that starts one, for admins) and one calibration:
per share, the recorded against the simulated wait-time CDF, the KS distance, p50/p95 ratios and the
verdict, so a user sees how far to trust the what-if."""

from __future__ import annotations

from django.shortcuts import get_object_or_404, render

from planner.calibration.demo import OPENB_TRACE
from planner.calibration.figures import share_figures
from planner.calibration.forms import CalibrationForm
from planner.calibration.launch import CalibrationLaunch, reap_stale_calibrations, start_calibration
from planner.calibration.models import Calibration
from planner.web.access import check_editor, reader_required
from planner.web.forms import place_launch_error, start_from_form


@reader_required
def calibration_list(request):
    form = CalibrationForm()
    status = 200
    if request.method == "POST":
        check_editor(request)
        form = CalibrationForm(request.POST)
        if form.is_valid():
            launch = CalibrationLaunch.from_data(form.cleaned_data, created_by=request.user)
            started = start_from_form(
                request,
                lambda: start_calibration(launch),
                lambda error: place_launch_error(form, error),
                lambda calibration: f"Calibration of {calibration.trace.name} started.",
                "calibration:detail",
            )
            if started:
                return started
        status = 400
    calibrations = Calibration.objects.select_related("trace", "created_by").defer(
        "metrics", "policy_snapshot", "trace__summary"
    )
    working = any(not c.finished for c in calibrations)
    openb_missing = not calibrations.filter(trace__name=OPENB_TRACE).exists()
    return render(
        request,
        "calibration/list.html",
        {
            "calibrations": calibrations,
            "form": form,
            "working": working,
            "openb_missing": openb_missing,
        },
        status=status,
    )


@reader_required
def calibration_detail(request, pk: int):
    reap_stale_calibrations(Calibration.objects.filter(pk=pk))
    calibration = get_object_or_404(
        Calibration.objects.select_related("trace", "policy", "created_by"), pk=pk
    )
    metrics = calibration.metrics or {}
    context = {
        "calibration": calibration,
        "overall": metrics.get("all"),
        "blocks": share_figures(metrics) if metrics else [],
        "thresholds": metrics.get("thresholds", {}),
    }
    return render(request, "calibration/detail.html", context)
