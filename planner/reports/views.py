"""The study comparison page (any role) and the finance report (finance and admin roles).

Both read only ``Run.metrics`` (aggregates, downsampled series and CDFs, daily periods),
never a run's result file or the trace's jobs, so they answer in milliseconds for a study of
millions of jobs. Every choice on a page is a query-string parameter, so a view can be shared.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, F, Q
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.urls import reverse

from planner.accounts.money import for_user, is_money_unit, shows_money
from planner.reports import comparison, figures
from planner.reports.comparison import RunColumn, Table
from planner.reports.exports import csv_response
from planner.reports.finance import (
    COLUMNS,
    IDLE_LINE,
    IDLE_MODE_LABELS,
    IDLE_MODES,
    PERIODS,
    TOTAL,
    UNASSIGNED,
    FinanceReport,
    PeriodReport,
    compare_reports,
    default_period,
    finance_report,
)
from planner.reports.loops import loop_warnings
from planner.reports.window import window_note
from planner.studies.attempts import silence_note
from planner.studies.models import Run, RunStatus, Study
from planner.studies.reaper import reap_stale_runs
from planner.studies.window import ensure_study_window
from planner.web.access import finance_required, reader_required

PROGRESS_FIELDS = (
    "id", "study", "policy", "policy_name", "status", "progress", "error", "attempts", "worker", "heartbeat",
)  # fmt: skip
PROGRESS_FIELDS += ("summary",)  # the window check reads it (never the metrics)


# -- study page ------------------------------------------------------------------------------


def _study(pk: int) -> Study:
    return get_object_or_404(Study.objects.select_related("trace", "baseline", "created_by"), pk=pk)


def _progress_runs(study: Study) -> list[Run]:
    """The study's runs without their metrics, after putting back runs whose worker died."""
    runs = Run.objects.filter(study=study)
    if runs.filter(status=RunStatus.RUNNING).exists():
        reap_stale_runs(runs=runs)
    listed = list(runs.only(*PROGRESS_FIELDS).order_by("id"))
    for run in listed:
        run.note = silence_note(run)  # a worker that stopped answering, and when the run is retried
    if ensure_study_window(study, listed):  # finished, but not yet on one window
        listed = list(runs.only(*PROGRESS_FIELDS).order_by("id"))
    return listed


def run_columns(study: Study, runs: list[Run], user) -> list[RunColumn]:
    """The succeeded runs as comparison columns; a policy's index is its position in the study. Their
    metrics are as ``user`` may read them: without $ figures unless finance or admin."""
    columns = []
    for index, run in enumerate(runs):
        if run.status == RunStatus.SUCCEEDED and run.metrics:
            columns.append(
                RunColumn(
                    run_id=run.pk,
                    name=run.policy_name,
                    index=index,
                    is_baseline=run.policy_id is not None and run.policy_id == study.baseline_id,
                    metrics=for_user(user, run.metrics),
                )
            )
    return columns


def _sort_param(request: HttpRequest, table: Table) -> Table:
    """Tables sort in the browser; the server applies the same ``?sort=<table>:<column>:<dir>``
    so a shared link (and the CSV) comes back in the order it was shared."""
    state = request.GET.get("sort", "")
    parts = state.split(":")
    if len(parts) != 3 or parts[0] != table.slug:
        return table
    columns = table.keys + table.columns
    try:
        column = columns[int(parts[1])]
    except (ValueError, IndexError):
        return table
    return table.sorted(column.key, parts[2] == "desc")


def readable_table(table: Table, user) -> Table:
    """The table without its $ columns for a role that may not read them (``planner.accounts.money``)."""
    if shows_money(user):
        return table
    columns = [c for c in table.columns if not is_money_unit(c.unit)]
    return Table(table.slug, table.title, table.keys, columns, table.rows)


def _table_context(table: Table) -> dict[str, Any]:
    rows = []
    for row in table.rows:
        cells = [{"text": row[c.key].value, "value": row[c.key].value, "key": True} for c in table.keys]
        for column in table.columns:
            cell = row[column.key]
            cells.append(
                {
                    "text": comparison.format_value(cell, column),
                    "value": "" if cell.value is None else cell.value,
                    "delta": comparison.format_delta(cell, column),
                    "verdict": cell.verdict,
                }
            )
        rows.append(cells)
    return {
        "slug": table.slug,
        "title": table.title,
        "headings": [(c.heading, False) for c in table.keys] + [(c.heading, True) for c in table.columns],
        "rows": rows,
    }


@reader_required
def study_detail(request: HttpRequest, pk: int) -> HttpResponse:
    study = _study(pk)
    runs = _progress_runs(study)
    finished = bool(runs) and all(run.finished for run in runs)
    context: dict[str, Any] = {
        "study": study,
        "runs": runs,
        "finished": finished,
        "progress_url": reverse("reports:study-progress", args=[study.pk]),
        "failed": [run for run in runs if run.status == RunStatus.FAILED],
    }
    if finished:
        full = list(Run.objects.filter(study=study).order_by("id"))
        columns = run_columns(study, full, request.user)
        context.update(_comparison_context(request, study, columns))
        # (the columns' metrics are loaded already; their summary is the stored run's)
        context["loop_warnings"] = loop_warnings((c.name, c.metrics.get("summary")) for c in columns)
    return render(request, "reports/study.html", context)


MAX_CHART_SHARES = 6  # shares drawn by default; more make legends and chart lists unreadable


def chosen_shares(request: HttpRequest, columns: list[RunColumn], shares: list[str]) -> list[str]:
    """The shares the charts draw: ``?share=`` (repeated), else every share when there are few,
    else the MAX_CHART_SHARES whose baseline p95 wait is longest (in the policy's order)."""
    picked = [name for name in request.GET.getlist("share") if name in shares]
    if picked:
        return [name for name in shares if name in picked]
    if len(shares) <= MAX_CHART_SHARES:
        return shares
    baseline = comparison.baseline_of(columns)
    p95 = {
        s["name"]: (s.get("wait_seconds") or {}).get("p95") or 0.0
        for s in (baseline.metrics.get("shares", []) if baseline else [])
    }
    longest = set(sorted(shares, key=lambda name: -p95.get(name, 0.0))[:MAX_CHART_SHARES])
    return [name for name in shares if name in longest]


def _comparison_context(request: HttpRequest, study: Study, columns: list[RunColumn]) -> dict[str, Any]:
    if not columns:
        return {"columns": []}
    shares = comparison.share_names(columns)
    drawn = chosen_shares(request, columns, shares)
    usage_view = request.GET.get("usage", "")
    if usage_view not in shares:
        usage_view = ""
    baseline = comparison.baseline_of(columns)
    cards = []
    for card in comparison.verdict_cards(columns):
        cards.append(
            {
                "name": card.run.name,
                "is_baseline": card.run is baseline,
                "lines": [
                    {
                        "label": line.label,
                        "text": comparison.format_value(line.cell, line.column, with_unit=True),
                        "delta": comparison.format_delta(line.cell, line.column),
                        "verdict": line.cell.verdict,
                    }
                    for line in card.lines
                    if shows_money(request.user) or not is_money_unit(line.column.unit)
                ],
            }
        )
    tables = [
        readable_table(t, request.user)
        for t in (comparison.policy_table(columns), comparison.share_table(columns))
    ]
    return {
        "columns": columns,
        "window": window_note(columns),
        "baseline": baseline,
        "baseline_missing": not any(c.is_baseline for c in columns),
        "cards": cards,
        "shares": shares,
        "drawn_shares": drawn,
        "all_drawn": len(drawn) == len(shares),
        "usage_view": usage_view,
        "usage_figures": [
            (f"usage-{column.run_id}", fig)
            for column, fig in zip(columns, figures.usage_figures(columns, usage_view, drawn), strict=True)
        ],
        "cdf_figures": [
            (f"wait-cdf-{n}", fig) for n, fig in enumerate(figures.cdf_figures(columns, "wait", drawn), 1)
        ],
        "wait_percentiles": figures.percentile_figure(columns, "wait", drawn),
        "jct_percentiles": figures.percentile_figure(columns, "jct", drawn),
        "preemption_figure": figures.preemption_figure(columns),
        "rerun_figure": figures.rerun_figure(columns),
        "wait_reason_figure": figures.wait_reason_figure(columns, drawn),
        "tables": [
            {
                **_table_context(_sort_param(request, table)),
                "csv_url": reverse("reports:study-csv", args=[study.pk, table.slug]),
            }
            for table in tables
        ],
    }


@reader_required
def study_progress(request: HttpRequest, pk: int) -> JsonResponse:
    """Status and progress of each run, polled by the study page while runs are queued or running."""
    study = _study(pk)
    runs = _progress_runs(study)
    return JsonResponse(
        {
            "study": study.pk,
            "finished": bool(runs) and all(run.finished for run in runs),
            "runs": [
                {
                    "id": run.pk,
                    "policy": run.policy_name,
                    "status": run.status,
                    "progress": run.progress,
                    "error": run.error,
                    "note": run.note,
                }
                for run in runs
            ],
        }
    )


@reader_required
def study_csv(request: HttpRequest, pk: int, table: str) -> HttpResponse:
    """A table of the comparison as CSV: values and their difference to the baseline, unformatted."""
    study = _study(pk)
    builders = {"policies": comparison.policy_table, "shares": comparison.share_table}
    if table not in builders:
        raise Http404(f"no table {table!r}: the study has {', '.join(builders)}")
    columns = run_columns(study, list(Run.objects.filter(study=study).order_by("id")), request.user)
    if not columns:
        raise Http404("no run of this study has succeeded yet")
    data = _sort_param(request, readable_table(builders[table](columns), request.user))
    header = [c.heading for c in data.keys]
    for column in data.columns:
        header += [column.heading, f"{column.heading} vs baseline"]
    rows = []
    for row in data.rows:
        line: list[object] = [row[c.key].value for c in data.keys]
        for column in data.columns:
            line += [row[column.key].value, row[column.key].delta]
        rows.append(line)
    return csv_response(f"study-{study.pk}-{table}.csv", header, rows)


# -- finance report --------------------------------------------------------------------------


def _choice(request: HttpRequest, name: str, allowed: tuple[str, ...], default: str) -> str:
    value = request.GET.get(name, default)
    return value if value in allowed else default


def _int(request: HttpRequest, name: str) -> int | None:
    try:
        return int(request.GET.get(name, ""))
    except ValueError:
        return None


def finished_studies():
    """Studies with at least one succeeded run, newest first, with how many of their runs did."""
    return (
        Study.objects.annotate(
            run_count=Count("runs"),
            succeeded_count=Count("runs", filter=Q(runs__status=RunStatus.SUCCEEDED)),
        )
        .filter(succeeded_count__gt=0)
        .select_related("trace")
        .order_by("-created_at", "-id")
    )


def finance_selection(request: HttpRequest) -> dict[str, Any]:
    """The study, run, second run, period, idle mode and unit chosen in the query string, each
    falling back to a default: the latest study whose runs all succeeded, its baseline run."""
    studies = finished_studies()
    study_id = _int(request, "study")
    study = studies.filter(pk=study_id).first() if study_id else None
    if study is None:
        study = studies.filter(succeeded_count=F("run_count")).first() or studies.first()
    selection: dict[str, Any] = {
        "studies": studies,
        "study": study,
        "period": "day",
        "idle": _choice(request, "idle", IDLE_MODES, "separate"),
        "unit": _choice(request, "unit", ("usd", "hours"), "usd"),
        "runs": [],
        "run": None,
        "other": None,
    }
    if study is None:
        return selection
    ensure_study_window(study, list(Run.objects.filter(study=study).only("id", "status", "summary")))
    runs = list(
        Run.objects.filter(study=study, status=RunStatus.SUCCEEDED).only(*PROGRESS_FIELDS).order_by("id")
    )
    by_id = {run.pk: run for run in runs}
    default = next((r for r in runs if r.policy_id is not None and r.policy_id == study.baseline_id), runs[0])
    run = by_id.get(_int(request, "run") or -1, default)
    other = by_id.get(_int(request, "compare") or -1)
    if other is not None and other.pk == run.pk:
        other = None
    period = _choice(request, "period", PERIODS, default_period(run.summary))
    selection.update(runs=runs, run=run, other=other, period=period)
    return selection


def _metrics(run: Run) -> dict[str, Any]:
    return Run.objects.values_list("metrics", flat=True).get(pk=run.pk)


def _money(value: float) -> str:
    if abs(value) < 0.005:
        return "$0"
    sign = "−" if value < 0 else ""
    return f"{sign}${abs(value):,.0f}" if abs(value) >= 100 else f"{sign}${abs(value):,.2f}"


def _hours(value: float) -> str:
    if abs(value) < 0.005:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


COLUMN_LABELS = {
    "capacity": "Capacity",
    "own": "Own use",
    "lent": "Lent",
    "borrowed": "Borrowed",
    "idle": "Idle",
    "stranded": "Stranded",
    "rerun": "Rerun cost",
    "idle_share": "Idle shared out",
    "charge": "Charge",
}


def report_columns(report: FinanceReport) -> list[str]:
    return [c for c in COLUMNS if c != "idle_share" or report.idle_mode != "separate"]


def report_rows(
    report: FinanceReport, *, whole: bool = False, periods: list[PeriodReport] | None = None
) -> list[dict[str, Any]]:
    """Rows of the report table: per period (all, or ``periods``), each line then the pool's total."""
    rows = []
    for period in [report.whole] if whole else (report.periods if periods is None else periods):
        for name in [*report.line_names, TOTAL]:
            amounts = period.total if name == TOTAL else period.shares.get(name)
            if amounts is None:
                continue
            rows.append(
                {
                    "period": period.period.label,
                    "period_text": period_label(period.period),
                    "line": name,
                    "kind": "total"
                    if name == TOTAL
                    else ("extra" if name in (UNASSIGNED, IDLE_LINE) else "share"),
                    "cells": [
                        {
                            "hours": amounts.hours[c],
                            "usd": amounts.usd[c],
                            "hours_text": _hours(amounts.hours[c]),
                            "usd_text": _money(amounts.usd[c]),
                        }
                        for c in report_columns(report)
                    ],
                }
            )
    return rows


def _page_links(request: HttpRequest, page: int, pages: int) -> list[tuple[int, str, bool]]:
    """(page, its URL's query string, is the current one) for each page of the period table."""
    links = []
    for number in range(1, pages + 1):
        query = request.GET.copy()
        query["page"] = str(number)
        links.append((number, query.urlencode(), number == page))
    return links


def check_rows(report: FinanceReport) -> list[dict[str, Any]]:
    rows = []
    for period in [*report.periods, report.whole]:
        unassigned = period.shares.get(UNASSIGNED)
        unassigned_hours = unassigned.hours["lent"] + unassigned.hours["idle"] if unassigned else 0.0
        rows.append(
            {
                "period": period.period.label,
                "shares": period.check.accounted_hours - unassigned_hours,
                "unassigned": unassigned_hours,
                "accounted": period.check.accounted_hours,
                "capacity": period.check.capacity_hours,
                "difference": period.check.difference,
                "holds": period.check.holds,
            }
        )
    return rows


def comparison_rows(a: FinanceReport, b: FinanceReport, *, whole_only: bool) -> list[dict[str, Any]]:
    rows = []
    hours = compare_reports(a, b, "hours")
    usd = compare_reports(a, b, "usd")
    for row_h, row_d in zip(hours, usd, strict=True):
        if whole_only != (row_h["period"] == "whole trace"):
            continue
        rows.append(
            {
                "period": row_h["period"],
                "line": row_h["line"],
                "cells": [
                    {
                        "column": c,
                        "a_hours": row_h["cells"][c].a,
                        "b_hours": row_h["cells"][c].b,
                        "delta_hours": row_h["cells"][c].delta,
                        "a_usd": row_d["cells"][c].a,
                        "b_usd": row_d["cells"][c].b,
                        "delta_usd": row_d["cells"][c].delta,
                    }
                    for c in report_columns(a)
                ],
            }
        )
    return rows


PERIODS_PER_PAGE = 14
CHARGEBACK = ("charge", "own", "borrowed", "lent", "idle", "stranded")


def period_label(period) -> str:
    """A period's label, saying when it is not whole in the window."""
    if not period.partial:
        return period.label
    return f"{period.label} (partial: {period.covered_days:,.1f} of {period.nominal_days:,.0f} days)"


def headline(report: FinanceReport, chosen: PeriodReport) -> dict[str, Any]:
    """The answer first: what the pool cost over the chosen range, and how much of it was idle,
    stranded, lent and lost to reruns; then each share's chargeback, with the totals."""
    total = chosen.total
    capacity_usd = total.usd["capacity"]
    shares = []
    for name in report.share_names:
        line = chosen.shares.get(name)
        if line is None:
            continue
        shares.append({"name": name, "cells": [(line.usd[c], line.hours[c]) for c in CHARGEBACK]})
    totals = [(sum(row["cells"][i][0] for row in shares), sum(row["cells"][i][1] for row in shares))
              for i in range(len(CHARGEBACK))]  # fmt: skip
    return {
        "label": "the whole window" if chosen is report.whole else period_label(chosen.period),
        "capacity_usd": capacity_usd,
        "capacity_hours": total.hours["capacity"],
        "idle_usd": total.usd["idle"],
        "idle_hours": total.hours["idle"],
        "idle_fraction": total.usd["idle"] / capacity_usd if capacity_usd > 0 else 0.0,
        "stranded_usd": total.usd["stranded"],
        "lent_usd": total.usd["lent"],
        "rerun_usd": total.usd["rerun"],
        "shares": shares,
        "totals": totals,
        "charged_note": report.idle_mode != "separate",
    }


def _range(request: HttpRequest, report: FinanceReport) -> PeriodReport:
    index = _int(request, "range")
    if index is None or not 0 <= index < len(report.periods):
        return report.whole
    return report.periods[index]


def _page(request: HttpRequest, report: FinanceReport) -> tuple[int, int]:
    """(page, pages) of the per-period table, PERIODS_PER_PAGE periods a page."""
    pages = max(1, -(-len(report.periods) // PERIODS_PER_PAGE))
    page = _int(request, "page") or 1
    return min(max(page, 1), pages), pages


@finance_required
def finance(request: HttpRequest) -> HttpResponse:
    selection = finance_selection(request)
    context: dict[str, Any] = {
        **selection,
        "periods": PERIODS,
        "idle_modes": [(mode, IDLE_MODE_LABELS[mode]) for mode in IDLE_MODES],
    }
    run, other = selection["run"], selection["other"]
    if run is not None:
        metrics = _metrics(run)
        report = finance_report(metrics, period=selection["period"], idle=selection["idle"])
        columns = report_columns(report)
        page, pages = _page(request, report)
        shown = slice((page - 1) * PERIODS_PER_PAGE, page * PERIODS_PER_PAGE)
        chosen = _range(request, report)
        context.update(
            report=report,
            headline=headline(report, chosen),
            range_options=[(i, period_label(p.period)) for i, p in enumerate(report.periods)],
            range_index=report.periods.index(chosen) if chosen is not report.whole else None,
            window=window_note([RunColumn(run.pk, run.policy_name, 0, False, metrics)]),
            columns=[(c, COLUMN_LABELS[c]) for c in columns],
            whole_rows=report_rows(report, whole=True),
            rows=report_rows(report, periods=report.periods[shown]),
            page=page,
            pages=pages,
            page_links=_page_links(request, page, pages),
            checks=check_rows(report),
            all_hold=all(p.check.holds for p in [*report.periods, report.whole]),
            failing_checks=[c for c in check_rows(report) if not c["holds"]],
            chart=figures.finance_figure(report, selection["unit"], policy=run.policy_name),
            query=request.GET.urlencode(),
            measured_end=(run.summary or {}).get("horizon", {}).get("end", ""),
        )
        if other is not None:
            other_metrics = _metrics(other)
            other_report = finance_report(other_metrics, period=selection["period"], idle=selection["idle"])
            context.update(
                other_report=other_report,
                other_headline=headline(other_report, _range(request, other_report)),
                window=window_note(
                    [
                        RunColumn(run.pk, run.policy_name, 0, False, metrics),
                        RunColumn(other.pk, other.policy_name, 1, False, other_metrics),
                    ]
                ),
                other_chart=figures.finance_figure(other_report, selection["unit"], policy=other.policy_name),
                compare_whole=comparison_rows(report, other_report, whole_only=True),
                compare_periods=comparison_rows(report, other_report, whole_only=False),
            )
    return render(request, "reports/finance.html", context)


@finance_required
def finance_csv(request: HttpRequest, table: str) -> HttpResponse:
    """``report`` (per period and line), ``check`` (the capacity identity per period) or
    ``compare`` (the chosen run against the second one), for the same query string as the page."""
    selection = finance_selection(request)
    run, other = selection["run"], selection["other"]
    if run is None:
        raise Http404("no study has a succeeded run yet")
    report = finance_report(_metrics(run), period=selection["period"], idle=selection["idle"])
    columns = report_columns(report)
    name = f"finance-study-{selection['study'].pk}-run-{run.pk}-{selection['period']}-{selection['idle']}"
    if table == "report":
        header = ["period", "line"]
        for c in columns:
            header += [f"{COLUMN_LABELS[c]} (GPU-hours)", f"{COLUMN_LABELS[c]} ($)"]
        rows = []
        for row in report_rows(report, whole=True) + report_rows(report):
            line: list[object] = [row["period"], row["line"]]
            for cell in row["cells"]:
                line += [round(cell["hours"], 6), round(cell["usd"], 6)]
            rows.append(line)
        return csv_response(f"{name}.csv", header, rows)
    if table == "check":
        header = [
            "period",
            "shares own + lent + idle (GPU-hours)",
            "unassigned lent + idle (GPU-hours)",
            "sum (GPU-hours)",
            "pool capacity (GPU-hours)",
            "difference (GPU-hours)",
            "adds up",
        ]
        rows = [
            [
                r["period"],
                r["shares"],
                r["unassigned"],
                r["accounted"],
                r["capacity"],
                r["difference"],
                r["holds"],
            ]
            for r in check_rows(report)
        ]
        return csv_response(f"{name}-check.csv", header, rows)
    if table == "compare":
        if other is None:
            raise Http404("choose a second run to compare with (compare=<run id>)")
        other_report = finance_report(_metrics(other), period=selection["period"], idle=selection["idle"])
        header = ["period", "line", "column"]
        for unit in ("GPU-hours", "$"):
            header += [f"{run.policy_name} ({unit})", f"{other.policy_name} ({unit})", f"difference ({unit})"]
        rows = []
        for row in comparison_rows(report, other_report, whole_only=True) + comparison_rows(
            report, other_report, whole_only=False
        ):
            for cell in row["cells"]:
                rows.append(
                    [
                        row["period"],
                        row["line"],
                        COLUMN_LABELS[cell["column"]],
                        cell["a_hours"],
                        cell["b_hours"],
                        cell["delta_hours"],
                        cell["a_usd"],
                        cell["b_usd"],
                        cell["delta_usd"],
                    ]
                )
        return csv_response(f"{name}-vs-run-{other.pk}.csv", header, rows)
    raise Http404(f"no table {table!r}: report, check or compare")
