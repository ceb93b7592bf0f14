"""The study comparison page (any role) and the finance report (finance and admin roles).

Both read only ``Run.metrics`` (aggregates, downsampled series and CDFs, daily periods),
never a run's result file or the trace's jobs, so they answer in milliseconds for a study of
millions of jobs. Every choice on a page is a query-string parameter, so a view can be shared.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from dataclasses import replace
from typing import Any

import orjson
from django.db.models import Count, Q
from django.db.models.fields.json import KeyTransform
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string
from django.urls import reverse

from planner.accounts.money import for_user, is_money_unit, shows_money
from planner.reports import comparison, figures, finance_policies
from planner.reports.comparison import RunColumn, Table
from planner.reports.decision import decide
from planner.reports.decision import priced as metrics_priced
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
from planner.reports.variant_effects import variant_effects
from planner.reports.window import window_note
from planner.studies.attempts import silence_note
from planner.studies.metrics_parts import metrics_parts
from planner.studies.models import Run, RunStatus, Study
from planner.studies.reaper import reap_stale_runs
from planner.studies.window import ensure_study_window
from planner.web import page_cache
from planner.web.access import finance_or_token, finance_required, reader_or_token, reader_required
from planner.web.charts import is_empty
from planner.web.listing import listed_studies
from planner.web.palette import share_colors
from planner.web.query import query_id
from planner.worker_rows import WORKER_FIELDS

PROGRESS_FIELDS = ("id", "study", "policy", "policy_name", *WORKER_FIELDS)
PROGRESS_FIELDS += ("summary",)  # the window check reads it (never the metrics)
PROGRESS_FIELDS += ("finished_at", "metrics_digest")  # what the page cache keys on


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
        parts = page_cache.cached(study_parts_key(request, study, runs))
        if parts is None:
            screen = first_screen_runs(study)
            parts = comparison_parts(request, study, screen)
            page_cache.keep(study_parts_key(request, study, screen), parts)  # the key of what was read
        context.update(parts)
    return render(request, "reports/study.html", context)


def comparison_parts(request: HttpRequest, study: Study, screen: list[Run]) -> dict[str, Any]:
    """The study page's parts made from its runs' figures: the verdict sentences and the comparison
    (cards, tables, charts), rendered without the request (nothing of the user's but $ or not)."""
    columns = run_columns(study, screen, request.user)
    failed = [run for run in screen if run.status == RunStatus.FAILED]
    context = {"study": study, **_comparison_context(request, study, columns, failed)}
    context["variant_effects"] = variant_effects(columns, {run.pk: run.policy_snapshot for run in screen})
    context["loop_warnings"] = loop_warnings((c.name, c.metrics.get("summary")) for c in columns)
    return {
        "compared": bool(columns),
        "verdict_html": render_to_string("reports/study_verdict.html", context),
        "comparison_html": render_to_string("reports/study_comparison.html", context),
    }


def study_parts_key(request: HttpRequest, study: Study, runs: list[Run]) -> str | None:
    """What the study page's cached parts are made from: the study, each run's state and figures
    (their digest), the query string, the reader's $ and the shares' colours. None (not cached) when
    a finished run's figures have no digest."""
    if any(run.status == RunStatus.SUCCEEDED and not run.metrics_digest for run in runs):
        return page_cache.UNCACHEABLE
    shares = {share.get("name") for run in runs for share in (run.summary or {}).get("shares", [])}
    return page_cache.page_key(
        "study",
        study.pk,
        study.name,
        study.baseline_id,
        [(r.pk, r.policy_id, r.policy_name, r.status, r.finished_at, r.metrics_digest) for r in runs],
        list(request.GET.lists()),
        shows_money(request.user),
        share_colors(str(name) for name in shares if name is not None),
    )


# What the study page's first screen reads of each run's metrics: the CDFs, series and periods
# (nine tenths of the bytes) stay in the database until a folded section asks for them.
FIRST_SCREEN_KEYS = ("summary", "shares", "pool", "types")


def first_screen_runs(study: Study) -> list[Run]:
    """The study's runs, each with ``metrics`` holding only FIRST_SCREEN_KEYS (None for a run
    without metrics), read out of the JSON by the database (``planner.studies.metrics_parts``)."""
    runs = list(Run.objects.filter(study=study).order_by("id").defer("metrics"))
    parts = metrics_parts([run.pk for run in runs], FIRST_SCREEN_KEYS)
    for run in runs:
        read = parts.get(run.pk)
        run.metrics = None if read is None or read["summary"] is None else read
    return runs


def with_share_cdf(columns: list[RunColumn], share: str) -> list[RunColumn]:
    """The columns with the wait CDF of ``share`` under each run (what the share's chart draws)."""
    curve = KeyTransform(share, KeyTransform("shares", KeyTransform("wait", KeyTransform("cdfs", "metrics"))))
    runs = Run.objects.filter(pk__in=[c.run_id for c in columns])
    curves = dict(runs.annotate(curve=curve).values_list("id", "curve"))
    return [
        replace(c, metrics={**c.metrics, "cdfs": {"wait": {"shares": {share: curves.get(c.run_id)}}}})
        for c in columns
    ]


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


def _card_context(request: HttpRequest, columns: list[RunColumn], shares: list[str]) -> list[dict[str, Any]]:
    baseline = comparison.baseline_of(columns)
    money = shows_money(request.user)
    built = comparison.verdict_cards(columns, shares, pool=True)
    # A line that reads 0 under every policy (no job cancelled anywhere) says nothing; idle and
    # stranded capacity come in $ to a reader of $ figures, in GPU-hours to the others.
    silent = {
        i for i in range(len(built[0].lines))
        if built[0].lines[i].column.key in ("cancelled",) and not any(c.lines[i].cell.value for c in built)
    }  # fmt: skip
    # On a pool without prices every $ is 0: GPU-hours only, whoever reads.
    priced_pool = baseline is not None and metrics_priced(baseline.metrics)
    if money and priced_pool:
        hidden = {"idle_gpu_hours", "stranded_gpu_hours"}
    else:
        hidden = {"idle_usd", "stranded_usd", "rerun_usd"} if money else set()
    cards = []
    for card in built:
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
                    for i, line in enumerate(card.lines)
                    if (money or not is_money_unit(line.column.unit))
                    and i not in silent
                    and line.column.key not in hidden
                ],
            }
        )
    return cards


def share_waits(columns: list[RunColumn], shares: list[str]) -> list[dict[str, Any]]:
    """Each share's p95 wait under every policy (the baseline's first), with the difference: the
    one table that holds every share at a glance."""
    wait_p95 = comparison.Column("wait_p95", "p95 wait", "h", "lower")
    baseline = comparison.baseline_of(columns)
    base_shares = baseline.metrics.get("shares", []) if baseline else []
    base = {s["name"]: comparison.share_values(s) for s in base_shares}
    rows = []
    for name in shares:
        cells = []
        for column in columns:
            share = next((s for s in column.metrics.get("shares", []) if s["name"] == name), None)
            value = comparison.share_values(share)["wait_p95"] if share else None
            before = base.get(name, {}).get("wait_p95")
            cell = comparison.compared(value, before, wait_p95, column is baseline)
            cells.append(
                {
                    "text": comparison.format_value(cell, wait_p95, with_unit=True),
                    "value": "" if value is None else value,
                    "delta": comparison.format_delta(cell, wait_p95),
                    "verdict": cell.verdict,
                }
            )
        rows.append({"name": name, "cells": cells})
    return rows


def _with(request: HttpRequest, **changes: str) -> str:
    """The page's query string with ``changes`` (every value of a repeated parameter kept)."""
    query = request.GET.copy()
    for key, value in changes.items():
        query[key] = value
    return query.urlencode()


def focus_share(request: HttpRequest, shares: list[str], default: str | None) -> str:
    """The share whose detail the page shows: ``?focus=``, else the longest-waiting one."""
    chosen = request.GET.get("focus", "")
    if chosen in shares:
        return chosen
    return default if default in shares else shares[0]


# The charts below the first screen, by the folded section that holds them: a section's charts
# come in one request when it is first opened (study_charts), so the page carries no figure it
# does not draw and the runs' metrics are read once per section, not once per chart.
SECTIONS = ("usage", "waits", "reasons", "preemptions")


def _lazy_charts(study: Study, request: HttpRequest, columns: list[RunColumn], drawn: list[str]):
    """(element id, its section's URL, title) of every folded chart, by section."""
    query = request.GET.copy()
    for key in ("focus", "sort"):
        query.pop(key, None)
    suffix = f"?{query.urlencode()}" if query else ""

    def url(section: str) -> str:
        return reverse("reports:study-charts", args=[study.pk, section]) + suffix

    waits, reasons, preemptions = url("waits"), url("reasons"), url("preemptions")
    return {
        "usage": [(f"usage-{c.run_id}", url("usage"), f"Usage under {c.name}") for c in columns],
        "cdfs": [
            (f"wait-cdf-{n}", waits, f"Wait time of {name or 'all jobs'}, by policy")
            for n, name in enumerate([*drawn, ""], 1)
        ],
        "wait_percentiles": ("wait-percentiles", waits, "Wait time percentiles by share"),
        "jct_percentiles": ("jct-percentiles", waits, "Job completion time percentiles"),
        "wait_reasons": ("wait-reasons", reasons, "Why jobs waited, by share and policy"),
        "preemptions": ("preemptions", preemptions, "Preemptions by share and cause"),
        "rerun": ("rerun-cost", preemptions, "Rerun cost by share"),
    }


def section_figures(
    section: str, columns: list[RunColumn], drawn: list[str], usage_view: str
) -> dict[str, dict[str, Any]]:
    """The figures of one folded section of the study page by element id (as ``_lazy_charts``
    names them); KeyError for a section the page does not have."""
    if section == "usage":
        figs = figures.usage_figures(columns, usage_view, drawn)
        return {f"usage-{c.run_id}": fig for c, fig in zip(columns, figs, strict=True)}
    if section == "waits":
        curves = figures.cdf_figures(columns, "wait", drawn)
        cdfs = {f"wait-cdf-{n}": fig for n, fig in enumerate(curves, 1)}
        return {
            **cdfs,
            "wait-percentiles": figures.percentile_figure(columns, "wait", drawn),
            "jct-percentiles": figures.percentile_figure(columns, "jct", drawn),
        }
    if section == "reasons":
        return {"wait-reasons": figures.wait_reason_figure(columns, drawn)}
    if section == "preemptions":
        return {
            "preemptions": figures.preemption_figure(columns),
            "rerun-cost": figures.rerun_figure(columns),
        }
    raise KeyError(section)


def _comparison_context(
    request: HttpRequest, study: Study, columns: list[RunColumn], failed: list[Run]
) -> dict[str, Any]:
    if not columns:
        return {"columns": []}
    shares = comparison.share_names(columns)
    drawn = chosen_shares(request, columns, shares)
    usage_view = request.GET.get("usage", "")
    if usage_view not in shares:
        usage_view = ""
    baseline = comparison.baseline_of(columns)
    verdict = decide(columns, failed=[run.policy_name for run in failed], money=shows_money(request.user))
    longest = verdict.share if verdict else None
    focus = focus_share(request, shares, longest)
    tables = [
        readable_table(t, request.user)
        for t in (comparison.policy_table(columns), comparison.share_table(columns))
    ]
    focus_rows = share_detail(tables[1], focus, columns)
    return {
        "columns": columns,
        "window": window_note(columns),
        "baseline": baseline,
        "baseline_missing": not any(c.is_baseline for c in columns),
        "decision": verdict,
        "longest_share": longest,
        "cards": _card_context(request, columns, [longest] if longest else []),
        "shares": shares,
        "share_waits": [
            {**row, "query": _with(request, focus=row["name"])} for row in share_waits(columns, shares)
        ],
        # every value of a repeated parameter (?share=a&share=b), for the forms' hidden fields
        "query_pairs": [(key, value) for key, values in request.GET.lists() for value in values],
        "focus": focus,
        "focus_rows": focus_rows,
        "focus_figure": figures.cdf_figures(with_share_cdf(columns, focus), "wait", [focus])[0],
        "drawn_shares": drawn,
        "all_drawn": len(drawn) == len(shares),
        "usage_view": usage_view,
        "lazy": _lazy_charts(study, request, columns, drawn),
        "open_usage": bool(usage_view),
        "open_waits": bool(request.GET.getlist("share")),
        # The two long tables (a row per policy, a row per share and policy: some 20,000 template
        # nodes for ITP's 30 rows) are the page's slowest part. A finished study's tables change
        # only with its runs' figures, the sort and the reader's $: their HTML is cached on that,
        # and the cells are formatted only when it is not (a callable the template calls).
        "tables_key": tables_key(columns, request),
        "tables": lambda: [
            {
                **_table_context(_sort_param(request, table)),
                "csv_url": reverse("reports:study-csv", args=[study.pk, table.slug]),
                "sorted": request.GET.get("sort", "").startswith(f"{table.slug}:"),
            }
            for table in tables
        ],
    }


def tables_key(columns: list[RunColumn], request: HttpRequest) -> str:
    """What the study page's tables depend on: each run's figures as the page read them, the
    ``?sort=`` and whether the reader sees $."""
    runs = [(c.run_id, c.name, c.is_baseline, c.metrics) for c in columns]
    state = [runs, request.GET.get("sort", ""), shows_money(request.user)]
    return hashlib.sha256(orjson.dumps(state, option=orjson.OPT_SORT_KEYS)).hexdigest()


FOCUS_COLUMNS = (
    "wait_p50", "wait_p95", "wait_p99", "own_gpu_hours", "borrowed_gpu_hours", "lent_gpu_hours",
    "idle_gpu_hours", "stranded_gpu_hours", "rerun_gpu_hours", "rerun_usd", "preempt_cross", "preempt_in",
)  # fmt: skip


def share_detail(table: Table, share: str, columns: list[RunColumn]) -> list[dict[str, Any]]:
    """One share under each policy, a measure a row and a policy a column (three policies read
    side by side in half the page's width); the measures of ``FOCUS_COLUMNS`` the table has."""
    rows = {row["policy"].value: row for row in table.rows if row["share"].value == share}
    detail = []
    for column in table.columns:
        if column.key not in FOCUS_COLUMNS:
            continue
        cells = []
        for run in columns:
            cell = rows[run.name][column.key] if run.name in rows else comparison.Cell(None)
            cells.append(
                {
                    "text": comparison.format_value(cell, column, with_unit=True),
                    "delta": comparison.format_delta(cell, column),
                    "verdict": cell.verdict,
                }
            )
        detail.append({"label": column.label if column.unit in ("h", "") else column.heading, "cells": cells})
    return detail


@reader_required
def study_charts(request: HttpRequest, pk: int, section: str) -> JsonResponse:
    """The charts of one folded section of the study page as JSON, ``{"charts": {<element id>:
    {"figure": ..., "empty": bool}}}``, for the same query string as the page (``share``,
    ``usage``), as the user may read them: fetched once, when the section is first opened."""
    study = _study(pk)
    columns = run_columns(study, list(Run.objects.filter(study=study).order_by("id")), request.user)
    if not columns:
        raise Http404("no run of this study has succeeded yet")
    shares = comparison.share_names(columns)
    usage_view = request.GET.get("usage", "")
    try:
        built = section_figures(section, columns, chosen_shares(request, columns, shares),
                                usage_view if usage_view in shares else "")  # fmt: skip
    except KeyError:
        raise Http404(f"no chart section {section!r}: the study page has {', '.join(SECTIONS)}") from None
    charts = {key: {"figure": fig, "empty": is_empty(fig)} for key, fig in built.items()}
    return JsonResponse({"charts": charts})


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


@reader_or_token
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
    """Studies with at least one succeeded run, newest first, with how many of their runs did;
    not the studies advisor sweeps run (work in progress: their sweep's page shows them)."""
    return (
        listed_studies(Study.objects.all())
        .annotate(
            run_count=Count("runs"),
            succeeded_count=Count("runs", filter=Q(runs__status=RunStatus.SUCCEEDED)),
        )
        .filter(succeeded_count__gt=0)
        .select_related("trace")
        .order_by("-created_at", "-id")
    )


def types_priced(instance_types: dict[str, Any] | None) -> bool:
    """Whether a run's policy had any instance type with an hourly price (else its $ are $0)."""
    types = instance_types if isinstance(instance_types, dict) else {}
    return any(isinstance(t, dict) and float(t.get("hourly_price") or 0) > 0 for t in types.values())


def priced_study_ids(study_ids: list[int]) -> set[int]:
    """The studies among ``study_ids`` with a succeeded run that was priced."""
    runs = Run.objects.filter(study_id__in=study_ids, status=RunStatus.SUCCEEDED)
    listed = runs.annotate(types=KeyTransform("instance_types", "policy_snapshot"))
    return {study_id for study_id, types in listed.values_list("study_id", "types") if types_priced(types)}


def default_study(studies: list[Study], priced: set[int]) -> Study | None:
    """What finance opens on: the newest priced study whose runs all succeeded, else the newest
    priced one, else the newest whose runs all succeeded, else the newest (newest first)."""
    complete = [s for s in studies if s.succeeded_count == s.run_count]
    for candidates in (
        [s for s in complete if s.pk in priced],
        [s for s in studies if s.pk in priced],
        complete,
        studies,
    ):
        if candidates:
            return candidates[0]
    return None


def finance_selection(request: HttpRequest) -> dict[str, Any]:
    """The study, run, second run, period, idle mode and unit chosen in the query string, each
    falling back to a default: the newest priced study whose runs all succeeded, its baseline run."""
    studies = list(finished_studies())
    priced = priced_study_ids([s.pk for s in studies])
    for listed in studies:
        listed.priced = listed.pk in priced
    study_id = query_id(request.GET, "study")
    study = next((s for s in studies if s.pk == study_id), None) if study_id else None
    if study is None:
        study = default_study(studies, priced)
    selection: dict[str, Any] = {
        "studies": studies,
        "study": study,
        "priced": study is not None and study.pk in priced,
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


# What the finance report reads of a run's metrics (``planner.reports.finance``): not the CDFs nor
# the usage series (nine tenths of the bytes), only the pool's capacity out of the series.
FINANCE_KEYS = ("summary", "shares", "pool", "types", "periods")


def finance_metrics(run_ids: list[int], digests: dict[int, str] | None = None) -> dict[int, dict[str, Any]]:
    """Each run's metrics as the finance report reads them, read out of the JSON by the database
    (and the digest of each run's figures into ``digests``, when given: read after the figures, so
    figures rewritten meanwhile show as a digest the caller did not choose)."""
    metrics = {}
    for run_id, parts in metrics_parts(run_ids, FINANCE_KEYS, nested={"series": "pool_capacity"}).items():
        parts = parts or dict.fromkeys(FINANCE_KEYS)
        capacity = (parts.get("series") or {}).get("pool_capacity") or 0.0
        metrics[run_id] = {**{key: parts[key] for key in FINANCE_KEYS}, "series": {"pool_capacity": capacity}}
    if digests is not None:
        digests.update(Run.objects.filter(pk__in=run_ids).values_list("id", "metrics_digest"))
    return metrics


_REPORTS: OrderedDict[str, FinanceReport] = OrderedDict()
_REPORTS_LOCK = threading.Lock()
REMEMBERED_REPORTS = 64  # per process; a report of a year of days is some hundreds of KB


def remembered_finance_report(metrics: dict[str, Any], *, period: str, idle: str) -> FinanceReport:
    """``finance_report`` of figures this process has reported before, without building it again
    (two thirds of the finance page: every period of every share of each of the study's runs).
    Keyed by a digest of the figures themselves, so new figures (a rerun, a window) miss."""
    key = hashlib.sha256(orjson.dumps([metrics, period, idle], option=orjson.OPT_SORT_KEYS)).hexdigest()
    with _REPORTS_LOCK:
        report = _REPORTS.get(key)
        if report is not None:
            _REPORTS.move_to_end(key)
            return report
    report = finance_report(metrics, period=period, idle=idle)
    with _REPORTS_LOCK:
        _REPORTS[key] = report
        while len(_REPORTS) > REMEMBERED_REPORTS:
            _REPORTS.popitem(last=False)
    return report


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
        "idle_hours_fraction": (
            total.hours["idle"] / total.hours["capacity"] if total.hours["capacity"] > 0 else 0.0
        ),
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


def policy_totals(
    study: Study, runs: list[Run], reports: dict[int, FinanceReport], request: HttpRequest
) -> list[finance_policies.PolicyTotals]:
    """Each run's pool totals over the chosen range (the same hours for every run: one window
    per study), the baseline's first."""
    totals = []
    for r in runs:
        total = _range(request, reports[r.pk]).total
        totals.append(
            finance_policies.PolicyTotals(
                run_id=r.pk,
                name=r.policy_name,
                is_baseline=r.policy_id is not None and r.policy_id == study.baseline_id,
                usd={c: total.usd[c] for c in finance_policies.COLUMNS},
                hours={c: total.hours[c] for c in finance_policies.COLUMNS},
            )
        )
    return sorted(totals, key=lambda t: not t.is_baseline)


@finance_required
def finance(request: HttpRequest) -> HttpResponse:
    selection = finance_selection(request)
    key = finance_key(request, selection)
    body = page_cache.cached(key)
    if body is None:
        context, read = finance_context(request, selection)
        body = render_to_string("reports/finance_body.html", context)
        chosen = {run.pk: run.metrics_digest for run in selection["runs"]}
        page_cache.keep(key if read == chosen else None, body)  # figures rewritten meanwhile: not kept
    return render(request, "reports/finance.html", {"finance_html": body})


def finance_key(request: HttpRequest, selection: dict[str, Any]) -> str | None:
    """What the finance page's body is made from: the studies offered, the chosen study and its runs'
    state and figures (their digest), the query string, the reader's $ and the shares' colours."""
    runs = selection["runs"]
    if any(not run.metrics_digest for run in runs):
        return page_cache.UNCACHEABLE
    study = selection["study"]
    shares = {share.get("name") for run in runs for share in (run.summary or {}).get("shares", [])}
    return page_cache.page_key(
        "finance",
        [(s.pk, s.name, s.trace.name, s.priced) for s in selection["studies"]],
        study and (study.pk, study.name, study.baseline_id),
        [(r.pk, r.policy_id, r.policy_name, r.finished_at, r.metrics_digest) for r in runs],
        [selection[name] and getattr(selection[name], "pk", None) for name in ("run", "other")],
        [selection[name] for name in ("priced", "period", "idle", "unit")],
        list(request.GET.lists()),
        shows_money(request.user),
        share_colors(str(name) for name in shares if name is not None),
    )


def finance_context(request: HttpRequest, selection: dict[str, Any]) -> tuple[dict[str, Any], dict[int, str]]:
    """The finance page's context, and the digest of each run's figures it read."""
    context: dict[str, Any] = {
        **selection,
        "periods": PERIODS,
        "idle_modes": [(mode, IDLE_MODE_LABELS[mode]) for mode in IDLE_MODES],
    }
    read: dict[int, str] = {}
    run, other = selection["run"], selection["other"]
    if run is not None:
        every_metrics = finance_metrics([r.pk for r in selection["runs"]], digests=read)
        reports = {
            pk: remembered_finance_report(m, period=selection["period"], idle=selection["idle"])
            for pk, m in every_metrics.items()
        }
        report = reports[run.pk]
        columns = report_columns(report)
        page, pages = _page(request, report)
        shown = slice((page - 1) * PERIODS_PER_PAGE, page * PERIODS_PER_PAGE)
        chosen = _range(request, report)
        totals = policy_totals(selection["study"], selection["runs"], reports, request)
        context.update(
            policy_rows=finance_policies.policy_rows(totals),
            switch=finance_policies.switch_sentence(totals, priced=selection["priced"]),
            policy_labels=[finance_policies.LABELS[c] for c in finance_policies.COLUMNS],
            report=report,
            headline=headline(report, chosen),
            range_options=[(i, period_label(p.period)) for i, p in enumerate(report.periods)],
            range_index=report.periods.index(chosen) if chosen is not report.whole else None,
            window=window_note(
                [
                    RunColumn(r.pk, r.policy_name, i, False, every_metrics[r.pk])
                    for i, r in enumerate(selection["runs"])
                ]
            ),
            columns=[(c, COLUMN_LABELS[c]) for c in columns],
            whole_rows=report_rows(report, whole=True),
            rows=report_rows(report, periods=report.periods[shown]),
            page=page,
            pages=pages,
            page_links=_page_links(request, page, pages),
            periods_open="page" in request.GET,
            checks=check_rows(report),
            all_hold=all(p.check.holds for p in [*report.periods, report.whole]),
            failing_checks=[c for c in check_rows(report) if not c["holds"]],
            chart=figures.finance_figure(report, selection["unit"], policy=run.policy_name),
            query=request.GET.urlencode(),
            measured_end=(run.summary or {}).get("horizon", {}).get("end", ""),
        )
        if other is not None:
            other_report = reports[other.pk]
            context.update(
                other_report=other_report,
                other_headline=headline(other_report, _range(request, other_report)),
                other_chart=figures.finance_figure(other_report, selection["unit"], policy=other.policy_name),
                compare_whole=comparison_rows(report, other_report, whole_only=True),
                compare_periods=comparison_rows(report, other_report, whole_only=False),
            )
    return context, read


@finance_or_token
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
