"""A study's common window (SEMANTICS.md section 5): once its runs have all finished, every
succeeded run's stored metrics are measured again over the union of their spans, so that
capacity, idle and $ count the same hours under every policy (``scheduling.window``).

Done by the worker that records the last run, and again by anyone who reads a finished study
whose runs are not yet on one window (a worker that died between the two, a run that failed
late), so it never depends on one process surviving. It reads ``Run.summary`` to decide and
touches ``Run.metrics`` only when something changes.
"""

from __future__ import annotations

import logging

from django.db import transaction

from planner.strict_json import strict_json
from planner.studies.models import Run, RunStatus, Study, recorded_metrics
from planner.worker_rows import FINISHED
from scheduling.model import Policy as EnginePolicy
from scheduling.window import Window, common_window, measure_over, measured_over, span_of

logger = logging.getLogger(__name__)


def study_window(summaries: list[dict]) -> Window | None:
    """The union of the spans of runs whose ``summary`` is given (None without any)."""
    return common_window(span_of({"summary": s}) for s in summaries if s)


def needs_window(runs: list[Run]) -> bool:
    """True when every run has finished and the succeeded ones are not all measured over their
    union (reads only ``status`` and ``summary``)."""
    if not runs or any(run.status not in FINISHED for run in runs):
        return False
    summaries = [run.summary for run in runs if run.status == RunStatus.SUCCEEDED and run.summary]
    window = study_window(summaries)
    return window is not None and any(measured_over({"summary": s}) != window for s in summaries)


def apply_study_window(study_id: int) -> Window | None:
    """Measure the study's succeeded runs over their common window, if all its runs have finished.
    Returns the window (None while runs are still queued or running, or when none succeeded)."""
    with transaction.atomic():
        # One at a time per study: the last two workers to finish may both get here.
        Study.objects.select_for_update().filter(pk=study_id).first()
        runs = list(Run.objects.filter(study_id=study_id).only("id", "status", "summary").order_by("id"))
        if not runs or any(run.status not in FINISHED for run in runs):
            return None
        done = [run for run in runs if run.status == RunStatus.SUCCEEDED and run.summary]
        window = study_window([run.summary for run in done])
        if window is None:
            return None
        for run in done:
            if measured_over({"summary": run.summary}) == window:
                continue
            full = Run.objects.only("id", "metrics", "policy_snapshot").get(pk=run.pk)
            policy = EnginePolicy.from_dict(full.policy_snapshot)
            metrics = strict_json(measure_over(full.metrics, policy, window))
            Run.objects.filter(pk=run.pk, status=RunStatus.SUCCEEDED).update(**recorded_metrics(metrics))
        return window


def ensure_study_window(study: Study, runs: list[Run]) -> bool:
    """For pages and the API: put a finished study's runs on one window if they are not yet.
    True when it changed something (the caller reads the runs again)."""
    if not needs_window(runs):
        return False
    try:
        apply_study_window(study.pk)
    except Exception:  # a page still shows each run over its span rather than fail
        logger.exception("common window of study %s", study.pk)
        return False
    return True
