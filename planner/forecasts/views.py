"""The forecast pages, for every role: /forecasts/ (recent forecasts; paste or upload a snapshot,
or take "the demo pool now") and /forecasts/<id>/ (progress while the chunks replay, then each
share's queue, a page of the jobs as a table and a chart of their start bands, and a search for
"my job"). Pages read the stored quantiles and per-share aggregates a page at a time, never the
samples. $ only for finance and admin (``planner.accounts.money``)."""

from __future__ import annotations

from datetime import UTC, datetime
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.core.paginator import Paginator
from django.db.models import F, Q
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from planner.accounts.money import shows_money
from planner.forecasts.demo import demo_available, demo_pool
from planner.forecasts.figures import band_figure
from planner.forecasts.forms import DemoForm, SnapshotForm
from planner.forecasts.launch import ForecastLaunch, reap_forecasts, start_forecast
from planner.forecasts.models import Forecast, ForecastJob, Source
from planner.studies.attempts import silence_note
from planner.web.access import reader_required
from planner.web.forms import place_launch_error, start_from_form

LATEST = 30
PAGE_JOBS = 50  # a page of the table (and of the chart): the page stays small whatever the snapshot
QUEUE_FRONT = 3  # jobs shown at the front of each share's queue
# The table's orders (?order=): "who starts next" first, as the question is asked. RUNNABLE sorts
# before RUNNING, so the waiting jobs come first; a job not started within the horizon comes last.
ORDERS = {
    "start": ("soonest start first", ("state", F("start_p50").asc(nulls_last=True), "row")),
    "position": ("by share and queue position", ("share", F("position").asc(nulls_last=True), "row")),
    "snapshot": ("as in the snapshot (running first)", ("row",)),
}
EPOCH = 1e9  # seconds past this are Unix times (2001 on): shown as UTC dates


@reader_required
def forecast_list(request: HttpRequest) -> HttpResponse:
    form, demo_form, status = SnapshotForm(), DemoForm(), 200
    if request.method == "POST":
        form = SnapshotForm(request.POST, request.FILES)
        if form.is_valid():
            data = form.cleaned_data
            launch = ForecastLaunch.from_data(
                data,
                snapshot=data["snapshot_data"],
                arrivals=data["arrivals"] or None,
                source=Source.UPLOADED if data.get("snapshot_file") else Source.PASTED,
                created_by=request.user,
            )
            started = start_from_form(
                request,
                lambda: start_forecast(launch),
                lambda error: place_launch_error(form, error, {"demo": None}),
                lambda forecast: (
                    f"Forecast started: {forecast.samples:,} samples in {forecast.chunks} chunks."
                ),
                "forecasts:detail",
            )
            if started:
                return started
        status = 400
    return _list_page(request, form, demo_form, status)


def _list_page(request: HttpRequest, form: SnapshotForm, demo_form: DemoForm, status: int) -> HttpResponse:
    forecasts = list(
        Forecast.objects.select_related("created_by").defer(
            "snapshot", "policy_snapshot", "result", "shares"
        )[:LATEST]
    )
    return render(
        request,
        "forecasts/list.html",
        {
            "forecasts": forecasts,
            "working": any(not f.finished for f in forecasts),
            "form": form,
            "demo_form": demo_form,
            "demo_ready": demo_available(),
        },
        status=status,
    )


@require_POST
@reader_required
def forecast_demo(request: HttpRequest) -> HttpResponse:
    """ "The demo pool now": the ITP demo at its busiest instant, the week before as history."""
    demo_form = DemoForm(request.POST)
    if demo_form.is_valid():
        data = demo_form.cleaned_data
        try:
            pool = demo_pool()
            forecast = start_forecast(
                ForecastLaunch(
                    snapshot=pool.snapshot,
                    snapshot_format="planner",
                    policy=pool.policy,
                    history=pool.history,
                    samples=data["samples"],
                    seed=data["seed"],
                    horizon_days=data["horizon_days"],
                    name=f"The demo pool now (ITP 2021, day {pool.day:.1f})",
                    source=Source.DEMO,
                    created_by=request.user,
                ),
            )
        except ValidationError as error:
            place_launch_error(demo_form, error, {"demo": None})
        else:
            messages.success(request, f"Forecast of the demo pool started: {forecast.jobs:,} jobs.")
            return redirect("forecasts:detail", pk=forecast.pk)
    return _list_page(request, SnapshotForm(), demo_form, 400)


def when(seconds: float | None, t0: float) -> dict:
    """A forecast time for the table: ``rel`` in words from T0, ``at`` as a UTC date for Unix times."""
    if seconds is None:
        return {"rel": "", "at": "", "hours": None}
    after = seconds - t0
    if abs(after) < 60:
        rel = "now" if after >= 0 else "at T0"
    elif after < 0:
        rel = f"{-after / 3600:,.1f} h before"
    elif after < 2 * 86400:
        rel = f"in {after / 3600:,.1f} h"
    else:
        rel = f"in {after / 86400:,.1f} days"
    at = datetime.fromtimestamp(seconds, tz=UTC).strftime("%Y-%m-%d %H:%M UTC") if t0 > EPOCH else ""
    return {"rel": rel, "at": at, "hours": after / 3600}


def _job_view(job: ForecastJob, t0: float) -> dict:
    running = job.state == "RUNNING"
    return {
        "job": job,
        "running": running,
        "start": when(job.start_p50, t0),
        "start_low": when(job.start_p10, t0),
        "start_high": when(job.start_p90, t0),
        "end": when(job.end_p50, t0),
        "requested": when(job.baseline_requested_time, t0),
        "median_wait": when(job.baseline_share_median_wait, t0),
    }


def _queue_fronts(forecast: Forecast) -> dict[str, list[ForecastJob]]:
    """The first QUEUE_FRONT pending jobs of each share, in queue order (one query)."""
    fronts: dict[str, list[ForecastJob]] = {}
    front = ForecastJob.objects.filter(forecast=forecast, position__lte=QUEUE_FRONT)
    for job in front.order_by("share", "position"):
        fronts.setdefault(job.share, []).append(job)
    return fronts


@reader_required
def forecast_detail(request: HttpRequest, pk: int) -> HttpResponse:
    forecast = get_object_or_404(Forecast.objects.defer("snapshot", "result"), pk=pk)
    if not forecast.finished:
        reap_forecasts(Forecast.objects.filter(pk=forecast.pk))
        forecast = get_object_or_404(Forecast.objects.defer("snapshot", "result"), pk=pk)
    money = shows_money(request.user)
    search = request.GET.get("search", "").strip()[:200]
    share = request.GET.get("share", "")
    order = request.GET.get("order", "start")
    order = order if order in ORDERS else "start"
    context: dict = {
        "forecast": forecast, "money": money, "search": search, "share": share, "order": order,
        "orders": [(key, words) for key, (words, _) in ORDERS.items()],
    }  # fmt: skip
    if not forecast.finished:
        running = forecast.chunk_rows.filter(status="running").order_by("index").first()
        context["silence"] = silence_note(running) if running else ""
    if forecast.status == "succeeded":
        jobs = ForecastJob.objects.filter(forecast=forecast).order_by(*ORDERS[order][1])
        if search:
            jobs = jobs.filter(Q(job_id__icontains=search) | Q(user__icontains=search))
        if share:
            jobs = jobs.filter(share=share)
        page = Paginator(jobs, PAGE_JOBS).get_page(request.GET.get("page"))
        rows = list(page.object_list)
        t0 = forecast.snapshot_time
        shares = forecast.shares or []
        fronts = _queue_fronts(forecast)
        query = {key: value for key, value in (("search", search), ("share", share)) if value}
        if order != "start":
            query["order"] = order
        context.update(
            page=page,
            rows=[_job_view(job, t0) for job in rows],
            figure=band_figure(rows, t0, [s["share"] for s in shares]),
            shares=[
                {
                    **s,
                    "first": when(s["first_start_p50"], t0),
                    "last": when(s["last_start_p50"], t0),
                    "front": fronts.get(s["share"], []),
                }
                for s in shares
            ],  # fmt: skip
            share_names=[s["share"] for s in shares],
            page_query=urlencode(query),
            t0_at=when(t0, t0)["at"],
            pending_total=forecast.pending_jobs,
            not_started=sum(s["not_started"] for s in shares),
            last_start=when(
                max((s["last_start_p50"] for s in shares if s["last_start_p50"] is not None), default=None),
                t0,
            ),  # fmt: skip
        )
    return render(request, "forecasts/detail.html", context)
