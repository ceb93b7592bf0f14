"""The pages: curves and worth searches listed with the forms that start them (admins); a curve
(progress while its points replay, then its charts and table); a search (its sentence, its tries,
its chart); CSV of both. $ figures only for finance and admin (``planner.accounts.money``)."""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from planner.accounts.permissions import can_read_finance
from planner.capacity.models import Policy
from planner.curves.figures import (
    compared_figure,
    curve_figures,
    curve_window,
    line_headlines,
    line_style,
    plan_rows_of,
    plan_views,
    rows_of,
    search_view,
    share_names,
)
from planner.curves.forms import CurveForm, WorthForm
from planner.curves.launch import (
    CurveLaunch,
    SearchLaunch,
    reap_curves,
    reap_searches,
    start_curve,
    start_search,
)
from planner.curves.models import CapacityCurve, WorthSearch
from planner.reports.exports import csv_response
from planner.web.access import check_editor, editor_required, reader_or_token, reader_required
from planner.web.forms import start_from_form
from planner.web.query import query_id, query_ids
from scheduling.capacity_curve import curve_lines, p95_bought_per_dollar

LATEST = 50
CHART_IDS = ("curve-wait", "curve-utilization", "curve-rerun")


PLAN_ERROR = re.compile(r"plans\[\d+\]\.(\w+): ")


def _form_errors(form, error: ValidationError, renames: dict[str, str] | None = None) -> None:
    for field, problems in error.message_dict.items():
        target = (renames or {}).get(field, field)
        if field == "plans":  # "plans[0].share: ..." goes next to the plan's share field
            for problem in problems:
                found = PLAN_ERROR.match(problem)
                name = f"plan_{found.group(1)}" if found else ""
                form.add_error(name if name in form.fields else None, PLAN_ERROR.sub("", problem))
            continue
        form.add_error(target if target in form.fields else None, problems)


def _initial(request: HttpRequest) -> dict:
    """Fields filled in from the URL, as the study and advisor pages link here."""
    initial: dict = {}
    if query_id(request.GET, "trace"):
        initial["trace"] = query_id(request.GET, "trace")
    policies = query_ids(request.GET, "policies")
    if policies:
        initial["policies"] = policies
        initial["policy_a"], initial["policy_b"] = policies[0], policies[-1]
    for key in ("policy_a", "policy_b"):
        if query_id(request.GET, key):
            initial[key] = query_id(request.GET, key)
    if request.GET.get("urgent_shares"):
        initial["urgent_shares"] = request.GET["urgent_shares"]
    return initial


@reader_required
def curve_list(request: HttpRequest) -> HttpResponse:
    initial = _initial(request)
    curve_form, worth_form = CurveForm(initial=initial), WorthForm(initial=initial)
    status = 200
    if request.method == "POST":
        check_editor(request)
        started = None
        if request.POST.get("form") == "worth":
            worth_form = WorthForm(request.POST)
            if worth_form.is_valid():
                search_launch = SearchLaunch.from_data(worth_form.cleaned_data, created_by=request.user)
                started = start_from_form(
                    request,
                    lambda: start_search(search_launch),
                    lambda error: _form_errors(worth_form, error, {"today": "policy_b", "lower": "upper"}),
                    lambda search: f"Search {search.name} started.",
                    "curves:search",
                )
        else:
            curve_form = CurveForm(request.POST)
            if curve_form.is_valid():
                data = curve_form.cleaned_data
                curve_launch = CurveLaunch.from_data(
                    data, policies=list(data["policies"]), created_by=request.user
                )
                started = start_from_form(
                    request,
                    lambda: start_curve(curve_launch),
                    lambda error: _form_errors(curve_form, error),
                    lambda curve: f"Curve {curve.name} started: {curve.points.count()} replays.",
                    "curves:curve",
                )
        if started:
            return started
        status = 400
    curves = CapacityCurve.objects.select_related("trace", "created_by").defer("trace__summary")[:LATEST]
    searches = WorthSearch.objects.select_related("trace", "created_by").defer(
        "trace__summary", "policy_a_snapshot", "policy_b_snapshot"
    )[:LATEST]
    working = any(not c.finished for c in curves) or any(not s.finished for s in searches)
    return render(
        request,
        "curves/list.html",
        {
            "curves": curves,
            "searches": searches,
            "curve_form": curve_form,
            "worth_form": worth_form,
            "working": working,
            "open_form": request.POST.get("form", "curve") if request.method == "POST" else "",
        },
        status=status,
    )


def _curve(pk: int) -> CapacityCurve:
    curve = get_object_or_404(CapacityCurve.objects.select_related("trace", "created_by"), pk=pk)
    reap_curves(curve.points.all())  # points whose worker died are sent again
    return curve


@reader_required
def curve_detail(request: HttpRequest, pk: int) -> HttpResponse:
    curve = _curve(pk)
    money = can_read_finance(request.user)
    names = share_names(curve)
    share = request.GET.get("share", "")
    share = share if share in names else ""
    x = "usd" if money and request.GET.get("x") == "usd" else "gpus"
    window = curve_window(curve)
    rows = rows_of(curve, window)
    plans = plan_rows_of(curve, rows, window)
    counts = {"queued": 0, "running": 0, "succeeded": 0, "failed": 0}
    for status in curve.points.values_list("status", flat=True):
        counts[status] += 1
    failed = curve.points.filter(status="failed").values("policy_name", "gpus", "error")[:5]
    lines = curve_lines(rows)
    per_dollar = {name: p95_bought_per_dollar(line) for name, line in lines.items()} if money else {}
    table = []
    order = [line["name"] for line in curve.lines]
    for name, line in lines.items():
        style = line_style(order.index(name) if name in order else len(order))
        bought = per_dollar.get(name, [])
        for i, row in enumerate(line):
            table.append({"row": row, "style": style, "bought": bought[i - 1] if i and bought else None})
    context = {
        "curve": curve,
        "money": money,
        "figures": list(
            zip(
                CHART_IDS,
                curve_figures(curve, rows, share=share, money=money, x=x, plans=plans),
                strict=False,
            )
        )
        if rows
        else [],
        "plans": plan_views(curve, plans, share=share, money=money),
        "table": table,
        "headlines": line_headlines(curve, rows),
        "counts": counts,
        "total": sum(counts.values()),
        "failed": failed,
        "share_names": names,
        "share": share,
        "x": x,
    }
    return render(request, "curves/curve.html", context)


CURVE_COLUMNS = [
    ("policy", "policy", False),
    ("size", "size (instances)", False),
    ("gpus", "GPUs", False),
    ("monthly_price_usd", "pool $ a month at list price", True),
    ("utilization", "utilization", False),
    ("worst_p95_seconds", "worst p95 wait (s)", False),
    ("mean_wait_seconds", "mean wait (s)", False),
    ("rerun_gpu_hours_per_month", "rerun GPU-hours a month", False),
    ("rerun_usd_per_month", "rerun $ a month", True),
    ("unschedulable", "unschedulable jobs", False),
    ("jobs", "jobs", False),
]


@reader_or_token
def curve_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every point of the curve: one row per policy and size, each share's p95 wait at the end."""
    curve = _curve(pk)
    rows = rows_of(curve)
    if not rows:
        raise Http404("no point of this curve has been replayed yet")
    money = can_read_finance(request.user)
    columns = [(key, heading) for key, heading, dollars in CURVE_COLUMNS if money or not dollars]
    names = share_names(curve)
    header = [heading for _, heading in columns] + [f"{name} p95 wait (s)" for name in names]
    header += ["training plan", "plan GPU-hours in the window"] + (["plan $ in the window"] if money else [])

    def line(row, plan=None) -> list:
        out = [getattr(row, key) for key, _ in columns] + [row.share_p95_seconds.get(name) for name in names]
        out += [plan.label, plan.gpu_hours] if plan else ["", ""]
        return out + ([plan.cost_usd if plan else ""] if money else [])

    # a plan's row: its policy at its own size with the plan, at its average GPUs over the window
    body = [line(row) for row in rows] + [line(plan.row, plan) for _, plan in plan_rows_of(curve, rows)]
    return csv_response(f"curve-{curve.pk}.csv", header, body)


def _search(pk: int) -> WorthSearch:
    reap_searches(WorthSearch.objects.filter(pk=pk))
    return get_object_or_404(WorthSearch.objects.select_related("trace", "created_by"), pk=pk)


@reader_required
def search_detail(request: HttpRequest, pk: int) -> HttpResponse:
    search = _search(pk)
    money = can_read_finance(request.user)
    view = search_view(search, money=money)
    context = {
        "search": search,
        "money": money,
        "view": view,
        "figure": compared_figure(search, view),
        "steps": sorted({p.step for p in view.tries}),
    }
    return render(request, "curves/search.html", context)


@reader_or_token
def search_csv(request: HttpRequest, pk: int) -> HttpResponse:
    """Every replay of the search: B's target, then A at each size tried, with the verdict."""
    search = _search(pk)
    money = can_read_finance(request.user)
    points = list(search.points.all().order_by("step", "role", "size"))
    header = ["step", "policy", "role", "size (instances)", "GPUs", "matches", "verdict", "status",
              "worst p95 wait (s)", "mean wait (s)", "unschedulable jobs", "rerun GPU-hours"]  # fmt: skip
    if money:
        header += ["pool $ a month at list price", "rerun $"]
    body = []
    for point in points:
        summary = point.summary or {}
        policy = search.policy_b_name if point.role == "target" else search.policy_a_name
        line = [point.step, policy, point.role, point.size, point.gpus, point.matches, point.verdict,
                point.status, _worst(summary), (summary.get("wait") or {}).get("mean"),
                summary.get("unschedulable"), summary.get("rerun_gpu_hours")]  # fmt: skip
        if money:
            line += [summary.get("monthly_price_usd"), summary.get("rerun_cost_usd")]
        body.append(line)
    return csv_response(f"worth-search-{search.pk}.csv", header, body)


def _worst(summary: dict) -> float | None:
    values = [
        s["wait"]["p95"] for s in (summary.get("shares") or {}).values() if s["wait"]["p95"] is not None
    ]
    return max(values) if values else None


def _delete(
    request: HttpRequest, model: type[CapacityCurve | WorthSearch], pk: int, what: str
) -> HttpResponse:
    """Delete the curve or search (its points go with it), say so, and go back to the list."""
    row = get_object_or_404(model, pk=pk)
    name = row.name
    row.delete()
    messages.success(request, f"{what} {name} deleted.")
    return redirect("curves:list")


@require_POST
@editor_required
def curve_delete(request: HttpRequest, pk: int) -> HttpResponse:
    return _delete(request, CapacityCurve, pk, "Curve")


@require_POST
@editor_required
def search_delete(request: HttpRequest, pk: int) -> HttpResponse:
    return _delete(request, WorthSearch, pk, "Search")


@require_POST
@editor_required
def plan_policy(request: HttpRequest, pk: int, number: int) -> HttpResponse:
    """ "Make this plan a policy": a duplicate of the plan's policy (as it is now) with the plan in
    its calendar (``Policy.add_training_plan``, as the policy page's training-plan form), then the
    new-study form with both policies chosen."""
    curve = get_object_or_404(CapacityCurve, pk=pk)
    if not 0 <= number < len(curve.plans):
        raise Http404("this curve has no such training plan")
    entry = curve.plans[number]
    base = Policy.objects.filter(pk=entry["policy"]).first()
    if base is None:
        messages.error(request, f"The policy {curve.lines[entry['line']]['name']} no longer exists.")
        return redirect("curves:curve", pk=curve.pk)
    plan = curve.training_plan(number)
    try:
        with transaction.atomic():
            made = base.duplicate(
                _free_name(f"{base.name} + {plan.instances} x {plan.instance_type} for {plan.share}"),
                f"{base.name} with the training plan {entry['label']} (capacity curve {curve.name}).",
            )
            made.add_training_plan(plan)
    except ValidationError as error:
        messages.error(request, f"The plan no longer fits {base.name}: {' '.join(error.messages)}")
        return redirect("curves:curve", pk=curve.pk)
    messages.success(
        request, f"Policy {made.name} made: {base.name} with {entry['label']}. Compare them in a study."
    )
    study_name = f"{base.name} with and without {entry['label']}"
    query = urlencode(
        [("trace", curve.trace_id), ("policy", base.pk), ("policy", made.pk), ("name", study_name)]
    )
    return redirect(f"{reverse('web:study-new')}?{query}")


def _free_name(wanted: str) -> str:
    """``wanted`` (cut to a policy name's 100 characters), or with " (2)", " (3)"... when taken."""
    name, n = wanted[:100], 1
    while Policy.objects.filter(name=name).exists():
        n += 1
        suffix = f" ({n})"
        name = wanted[: 100 - len(suffix)] + suffix
    return name
