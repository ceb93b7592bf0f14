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
    compare_reports,
    finance_report,
)
from planner.studies.attempts import silence_note
from planner.studies.models import Run, RunStatus, Study
from planner.studies.reaper import reap_stale_runs
from planner.web.access import finance_required, reader_required

PROGRESS_FIELDS = (
    "id", "study", "policy", "policy_name", "status", "progress", "error", "attempts", "worker", "heartbeat",
)  # fmt: skip


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
    return render(request, "reports/study.html", context)


def _comparison_context(request: HttpRequest, study: Study, columns: list[RunColumn]) -> dict[str, Any]:
    if not columns:
        return {"columns": []}
    shares = comparison.share_names(columns)
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
        "baseline": baseline,
        "baseline_missing": not any(c.is_baseline for c in columns),
        "cards": cards,
        "shares": shares,
        "usage_view": usage_view,
        "usage_figures": [
            (f"usage-{column.run_id}", fig)
            for column, fig in zip(columns, figures.usage_figures(columns, usage_view), strict=True)
        ],
        "cdf_figures": [
            (f"wait-cdf-{n}", fig) for n, fig in enumerate(figures.cdf_figures(columns, "wait"), 1)
        ],
        "wait_percentiles": figures.percentile_figure(columns, "wait"),
        "jct_percentiles": figures.percentile_figure(columns, "jct"),
        "preemption_figure": figures.preemption_figure(columns),
        "rerun_figure": figures.rerun_figure(columns),
        "wait_reason_figure": figures.wait_reason_figure(columns),
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
        "period": _choice(request, "period", PERIODS, "day"),
        "idle": _choice(request, "idle", IDLE_MODES, "separate"),
        "unit": _choice(request, "unit", ("usd", "hours"), "usd"),
        "runs": [],
        "run": None,
        "other": None,
    }
    if study is None:
        return selection
    runs = list(
        Run.objects.filter(study=study, status=RunStatus.SUCCEEDED).only(*PROGRESS_FIELDS).order_by("id")
    )
    by_id = {run.pk: run for run in runs}
    default = next((r for r in runs if r.policy_id is not None and r.policy_id == study.baseline_id), runs[0])
    run = by_id.get(_int(request, "run") or -1, default)
    other = by_id.get(_int(request, "compare") or -1)
    if other is not None and other.pk == run.pk:
        other = None
    selection.update(runs=runs, run=run, other=other)
    return selection


def _metrics(run: Run) -> dict[str, Any]:
    return Run.objects.values_list("metrics", flat=True).get(pk=run.pk)


def _money(value: float) -> str:
    return f"${value:,.0f}" if abs(value) >= 100 else f"${value:,.2f}"


def _hours(value: float) -> str:
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


def report_rows(report: FinanceReport, *, whole: bool = False) -> list[dict[str, Any]]:
    """Rows of the report table: per period, each line then the pool's total."""
    rows = []
    for period in [report.whole] if whole else report.periods:
        for name in [*report.line_names, TOTAL]:
            amounts = period.total if name == TOTAL else period.shares.get(name)
            if amounts is None:
                continue
            rows.append(
                {
                    "period": period.period.label,
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
        report = finance_report(_metrics(run), period=selection["period"], idle=selection["idle"])
        columns = report_columns(report)
        context.update(
            report=report,
            columns=[(c, COLUMN_LABELS[c]) for c in columns],
            whole_rows=report_rows(report, whole=True),
            rows=report_rows(report),
            checks=check_rows(report),
            all_hold=all(p.check.holds for p in [*report.periods, report.whole]),
            chart=figures.finance_figure(report, selection["unit"]),
            query=request.GET.urlencode(),
        )
        if other is not None:
            other_report = finance_report(_metrics(other), period=selection["period"], idle=selection["idle"])
            context.update(
                other_report=other_report,
                other_chart=figures.finance_figure(other_report, selection["unit"]),
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
