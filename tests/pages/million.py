"""A stored million-job study for page tests and benchmarks, built in seconds without replaying a
million jobs: a small study replayed by the engine, its metrics scaled to a million jobs (counts
only: every array keeps the size the engine gives it), and the job finder's indexes written for a
million-job synthetic trace with outcomes drawn at random."""

from __future__ import annotations

import numpy as np

from planner.studies.jobs import run_folder, trace_folder
from planner.studies.models import Run, Study, run_summary
from scheduling.finder import write_run_index, write_trace_index
from scheduling.outcomes import JobOutcomes, State
from scheduling.synthetic import generate
from tests.service.test_reports_views import replayed_study, scale_to_jobs

JOBS = 1_000_000


def million_job_study(name: str = "million", jobs: int = JOBS) -> Study:
    study = replayed_study(name, jobs=1500, variants=1)
    trace = generate(jobs, seed=3)
    rng = np.random.default_rng(3)
    write_trace_index(trace_folder(study.trace_id), trace)
    for run in study.runs.all():
        metrics = scale_to_jobs(run.metrics, jobs)
        Run.objects.filter(pk=run.pk).update(
            metrics=metrics, summary=run_summary(metrics), result_file=f"runs/stored-{run.pk}.npz"
        )
        first_start = trace.submit_time + rng.exponential(1800.0, jobs)
        outcomes = JobOutcomes(
            state=np.full(jobs, int(State.SUCCEEDED), dtype=np.int8),
            first_start=first_start,
            end=first_start + trace.duration,
            queued=first_start - trace.submit_time,
            preemptions=rng.poisson(0.3, jobs).astype(np.int32),
            lost=np.zeros(jobs),
            reason=np.zeros(jobs, dtype=np.int8),
            ignored_updates=0,
            history=None,
        )
        write_run_index(run_folder(run.pk), trace, outcomes)
    return study
