"""One job's timeline in a run (why it waited, when it ran, who preempted it), for the API and
the pages: the run's stored outcomes and wait history, read for that one job."""

from __future__ import annotations

import math

from planner.missing_files import stored_file
from planner.studies.models import Run, RunStatus
from planner.studies.wait_answer import held_when_waiting, longest_wait_start, wait_sentence
from scheduling.model import Policy as EnginePolicy
from scheduling.pending import find_job, job_timeline
from scheduling.result import ReplayResult


class NoTimeline(Exception):
    """The run has no stored outcomes (not succeeded yet, or replayed before they were kept)."""


def run_job_timeline(run: Run, job_id: str) -> dict:
    """Raises NoTimeline, or InputError for a job the trace does not have."""
    if run.status != RunStatus.SUCCEEDED or not run.result_file.name:
        raise NoTimeline(f"run {run.pk} has no job outcomes: it is {run.status}")
    trace = run.study.trace.load_jobs()
    job = find_job(trace, job_id)
    with stored_file(run.result_file, f"the job outcomes of run {run.pk} ({run.policy_name})") as stored:
        outcomes = ReplayResult.load_outcomes(stored)
    started = not math.isnan(outcomes.first_start[job])
    if started and (outcomes.history is None or not len(outcomes.history.starts)):
        raise NoTimeline(f"run {run.pk} was replayed before wait histories were kept: replay it again")
    policy = EnginePolicy.from_dict(run.policy_snapshot)
    timeline = job_timeline(policy, trace, outcomes, job)
    began = longest_wait_start(timeline)
    held = None if began is None else held_when_waiting(policy, trace, outcomes, job, began)
    answer = wait_sentence(policy, timeline, held, int(trace.instance_count[job]))
    return {"run": run.pk, "policy": run.policy_name, **timeline, "held_when_waiting": held, "answer": answer}
