"""The commons-games report of a trace, and of a run replayed on it: the trace's figures come from
its columns once and are kept in ``CommonsReport``; RESERVE hoarding is read from ``Run.metrics``
(aggregates only). The page and the API both call ``commons_report``."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from django.db.models import QuerySet

from planner.capacity.models import InstanceType
from planner.commons.models import CommonsReport
from planner.strict_json import strict_json
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace
from scheduling.commons import job_splitting, priority_inflation, reserve_hoarding

# Bump when scheduling.commons computes something different: stored reports are then redone.
VERSION = 1
RUN_FIELDS = ("id", "study", "policy", "policy_name", "policy_snapshot", "status")


def gpus_per_type(names: Iterable[str]) -> dict[str, int]:
    """GPUs per instance of each named type, from the database (1 for a type it does not know)."""
    names = list(names)
    known = dict(InstanceType.objects.filter(name__in=names).values_list("name", "gpus"))
    return {name: int(known.get(name, 1)) for name in names}


def trace_games(trace: Trace) -> dict[str, Any]:
    """``{"priority_inflation": ..., "job_splitting": ...}`` of the trace: stored, or computed
    from its columns (and stored) when missing or computed with other parameters."""
    stored = CommonsReport.objects.filter(trace=trace).only("params", "games").first()
    if stored is not None and stored.params.get("version") == VERSION:
        gpus = stored.params.get("gpus", {})
        if gpus_per_type(gpus) == gpus:
            return stored.games
    began = time.perf_counter()
    columns = trace.load_jobs()
    gpus = gpus_per_type(columns.type_names)
    games = strict_json(
        {
            "priority_inflation": priority_inflation(columns),
            "job_splitting": job_splitting(columns, gpus_per_type=gpus),
        }
    )
    CommonsReport.objects.update_or_create(
        trace=trace,
        defaults={
            "params": {"version": VERSION, "gpus": gpus},
            "games": games,
            "seconds": time.perf_counter() - began,
        },
    )
    return games


def runs_of(trace: Trace) -> QuerySet[Run]:
    """The succeeded runs of every study on the trace, newest study first, without their metrics;
    not the runs of advisor sweeps (their variants are work in progress, on the sweep's page)."""
    return (
        Run.objects.filter(study__trace=trace, status=RunStatus.SUCCEEDED, study__sweep__isnull=True)
        .select_related("study")
        .only(*RUN_FIELDS, "study__name", "study__baseline")
        .order_by("-study__created_at", "-study_id", "id")
    )


def has_reserve(run: Run) -> bool:
    shares = (run.policy_snapshot or {}).get("shares") or []
    return any(isinstance(share, dict) and share.get("strategy") == "RESERVE" for share in shares)


def default_run(runs: list[Run]) -> Run | None:
    """The newest study's run of a policy with a RESERVE share, else the newest study's baseline."""
    for run in runs:
        if has_reserve(run):
            return run
    for run in runs:
        if run.policy_id is not None and run.policy_id == run.study.baseline_id:
            return run
    return runs[0] if runs else None


def run_hoarding(run: Run) -> dict[str, Any]:
    """``scheduling.commons.reserve_hoarding`` of the run's metrics."""
    metrics = Run.objects.values_list("metrics", flat=True).get(pk=run.pk) or {}
    return strict_json(reserve_hoarding(metrics))


def commons_report(trace: Trace, run: Run | None) -> dict[str, Any]:
    """The whole report as JSON: the trace, the run (or None), and the three games."""
    games = trace_games(trace)
    return {
        "trace": {"id": trace.pk, "name": trace.name},
        "run": None if run is None else {"id": run.pk, "study": run.study_id, "policy_name": run.policy_name},
        "priority_inflation": games["priority_inflation"],
        "job_splitting": games["job_splitting"],
        "reserve_hoarding": None if run is None else run_hoarding(run),
    }
