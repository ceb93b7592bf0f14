"""The job finder of a study: find a job by id, user or name, or from each share's longest waits
and most preempted jobs, under any policy of the study; every row links to the job's timeline.

It reads the run's memory-mapped job indexes (``planner.studies.jobs``): a few binary searches
and the rows it shows, never the trace or the outcomes whole, so it answers as fast for a
million jobs as for a hundred.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.template.loader import render_to_string

from planner.accounts.money import shows_money
from planner.reports.loops import loop_warnings
from planner.studies.jobs import NoJobIndex, job_finder
from planner.studies.models import RunStatus, Study
from planner.web import page_cache
from planner.web.access import reader_required
from planner.web.palette import share_colors
from scheduling.finder import JobFinder, JobRow

RESULTS = 50  # search results shown
PER_SHARE_ALL = 3  # jobs per share in each list when no share is chosen
PER_SHARE_ONE = 20  # jobs in each list of the chosen share


def _row(row: JobRow) -> dict[str, Any]:
    return {
        "job_id": row.job_id,
        "share": row.share,
        "user": row.user,
        "name": row.name,
        "state": row.state,
        "wait": row.wait_seconds,
        "queued": row.queued_seconds,
        "preemptions": row.preemptions,
        "instance_type": row.instance_type,
    }


def _lists(finder: JobFinder, share: str) -> dict[str, list[dict[str, Any]]]:
    """The longest waits and the most preempted jobs of one share, or the first few of every share."""
    names = [share] if share else finder.share_names
    count = PER_SHARE_ONE if share else PER_SHARE_ALL
    lists: dict[str, list[dict[str, Any]]] = {"longest_waits": [], "most_preempted": []}
    for name in names:
        top = finder.top.get(name, {})
        for key in lists:
            lists[key] += [_row(r) for r in finder.rows(top.get(key, [])[:count])]
    return lists


def search_payload(finder: JobFinder, query: str, share: str, limit: int = RESULTS) -> dict[str, Any]:
    """What the API answers for a search (or, without a query, each share's longest waits and
    most preempted jobs): the same rows the page shows, waits and queued time in seconds."""
    share = share if share in finder.share_names else ""
    payload: dict[str, Any] = {"shares": finder.share_names, "share": share or None, "search": query or None}
    if query:
        jobs, more = finder.search(query, limit=limit, share=share or None)
        payload.update(results=[_row(r) for r in finder.rows(jobs)], more=more, limit=limit)
    else:
        payload.update(_lists(finder, share))
    return payload


@reader_required
def job_finder_page(request: HttpRequest, pk: int) -> HttpResponse:
    study = get_object_or_404(Study.objects.select_related("trace"), pk=pk)
    runs = list(study.runs.filter(status=RunStatus.SUCCEEDED).defer("metrics").order_by("id"))
    run_id = request.GET.get("run", "")
    run = next((r for r in runs if str(r.pk) == run_id), None)
    if run is None and runs:
        run = next((r for r in runs if r.policy_id == study.baseline_id), runs[0])
    query = request.GET.get("q", "").strip()[:200]
    share = request.GET.get("share", "")
    key = finder_key(request, study, runs, run, query, share)
    kept = page_cache.cached(key)
    if kept is None:
        kept = finder_body(study, runs, run, query, share)
        page_cache.keep(key if kept[1] == 200 else None, kept)
    body, status = kept
    return render(request, "reports/jobs.html", {"study": study, "jobs_html": body}, status=status)


def finder_key(request: HttpRequest, study: Study, runs: list, run, query: str, share: str) -> str | None:
    """What the job finder's body is made from: the study and its trace (its file), the succeeded
    runs (each one's finish time, figures and outcomes file), the run, search and share chosen, the
    reader's $ and the shares' colours."""
    if run is None:
        return page_cache.UNCACHEABLE
    trace = study.trace
    shares = {str(row.get("name")) for row in (run.summary or {}).get("shares", [])}
    return page_cache.page_key(
        "job-finder",
        (study.pk, study.name, study.baseline_id),
        (trace.pk, trace.name, trace.job_count, trace.jobs_file.name),
        [(r.pk, r.policy_id, r.policy_name, r.finished_at, r.result_file.name) for r in runs],
        run.pk,
        query,
        share,
        shows_money(request.user),
        share_colors(shares | set(trace.share_names())),
    )


def finder_body(study: Study, runs: list, run, query: str, share: str) -> tuple[str, int]:
    """The job finder's body, rendered without the request, and its status (404 without an index)."""
    context: dict[str, Any] = {"study": study, "runs": runs, "run": run, "q": query, "share": share}
    context["loop_warnings"] = loop_warnings([(run.policy_name, run.summary)] if run is not None else [])
    status = 200
    if run is not None:
        try:
            finder = job_finder(run)
        except NoJobIndex as error:
            context["error"] = str(error)
            status = 404
        else:
            if share not in finder.share_names:
                share = ""
            context.update(
                share=share,
                shares=finder.share_names,
                has_users=finder.has("user"),
                has_names=finder.has("name"),
                per_share=PER_SHARE_ONE if share else PER_SHARE_ALL,
                **_lists(finder, share),
            )
            if query:
                jobs, more = finder.search(query, limit=RESULTS, share=share or None)
                context.update(results=[_row(r) for r in finder.rows(jobs)], more=more, limit=RESULTS)
    return render_to_string("reports/jobs_body.html", context), status
