"""The job finder's indexes on disk (``scheduling.finder``), beside the traces and results under
``MEDIA_ROOT/finder/``: one folder per trace and one per run.

Written by the worker that records a run; built on first use for a run recorded before (or by a
worker that died right after recording), so the finder never depends on one process surviving.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

from django.conf import settings
from django.db.models.signals import post_delete
from django.dispatch import receiver

from planner.missing_files import stored_file
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace
from scheduling.finder import JobFinder, write_run_index, write_trace_index
from scheduling.model import Policy as EnginePolicy
from scheduling.outcomes import JobOutcomes
from scheduling.result import ReplayResult
from scheduling.trace import Trace as TraceColumns

logger = logging.getLogger(__name__)


class NoJobIndex(Exception):
    """The run has no stored outcomes to index (not succeeded); a file gone is StoredFileMissing."""


def finder_root() -> Path:
    return Path(settings.MEDIA_ROOT) / "finder"


def trace_folder(trace_id: int) -> Path:
    return finder_root() / f"trace-{trace_id}"


def run_folder(run_id: int) -> Path:
    return finder_root() / f"run-{run_id}"


def write_indexes(run: Run, trace: TraceColumns, outcomes: JobOutcomes) -> None:
    """Both indexes of a just recorded run (the trace's only if it has none yet)."""
    if not (trace_folder(run.study.trace_id) / "top.json").exists():
        write_trace_index(trace_folder(run.study.trace_id), trace)
    types = list(EnginePolicy.from_dict(run.policy_snapshot).instance_types)
    write_run_index(run_folder(run.pk), trace, outcomes, type_names=types)


def job_finder(run: Run) -> JobFinder:
    """The finder of a succeeded run, building its indexes first if they are missing (from the
    trace's and the run's files: StoredFileMissing when one is gone)."""
    if run.status != RunStatus.SUCCEEDED or not run.result_file.name:
        raise NoJobIndex(f"run {run.pk} has no job outcomes: it is {run.status}")
    trace_dir, run_dir = trace_folder(run.study.trace_id), run_folder(run.pk)
    if not (trace_dir / "top.json").exists() or not (run_dir / "top.json").exists():
        trace = run.study.trace.load_jobs()
        with stored_file(run.result_file, f"the job outcomes of run {run.pk} ({run.policy_name})") as stored:
            outcomes = ReplayResult.load_outcomes(stored)
        write_indexes(run, trace, outcomes)
    return JobFinder(trace_dir, run_dir)


@receiver(post_delete, sender=Run)
def delete_run_index(sender, instance: Run, **kwargs) -> None:
    shutil.rmtree(run_folder(instance.pk), ignore_errors=True)


@receiver(post_delete, sender=Trace)
def delete_trace_index(sender, instance: Trace, **kwargs) -> None:
    shutil.rmtree(trace_folder(instance.pk), ignore_errors=True)
