"""Creating a study: one Run per policy, each with the exact policy it will replay, enqueued
as one Celery group once the transaction that created them has committed."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from celery import group
from django.core.exceptions import ValidationError
from django.db import transaction

from planner.capacity.models import Policy
from planner.launches import Launch
from planner.outages import publish_rows
from planner.studies.limits import check_heavy_task_limit
from planner.studies.models import Run, Study
from planner.studies.tasks import replay_run
from planner.traces.models import Trace
from scheduling.binding import check_fits
from scheduling.errors import InputError
from scheduling.model import Policy as EnginePolicy

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


def check_policy_fits(policy: EnginePolicy, trace: Trace, field: str) -> None:
    """ValidationError on ``field`` naming the shares and instance types of ``trace`` that ``policy``
    lacks: a study that could only fail at replay is refused when it is made."""
    try:
        check_fits(policy, trace.share_names(), trace.type_names())
    except InputError as error:
        raise ValidationError({field: f"{error.reason} (trace {trace.name})"}) from None


def enqueue_runs(run_ids: Iterable[int], what: str | None = None) -> None:
    """Send one ``replay_run`` task per run after the current transaction commits. With ``what``
    (a request made the runs: "Study X"), a broker that refuses them fails the runs with the reason
    and answers 503 naming ``what``; without (the reaper), the broker's error is raised as it is,
    and the runs stay as they were for the next sweep."""
    ids = list(run_ids)
    if not ids:
        return
    if what is None:
        transaction.on_commit(lambda: group(replay_run.s(run_id) for run_id in ids).apply_async())
    else:
        transaction.on_commit(lambda: _send_runs(ids, what))


def _send_runs(ids: list[int], what: str) -> None:
    """Publish the runs' tasks; when the broker refuses, the runs (already stored) are marked
    failed with the reason, so that none stays queued for a task that was never sent, and the
    request answers 503 (``planner.outages``)."""
    publish_rows(
        Run, ids, lambda: group(replay_run.s(pk) for pk in ids).apply_async(), what=what, then="rerun them"
    )


def trace_not_ready(trace: Trace) -> str:
    """Why a study cannot use a trace yet (choice: refused, not queued behind the parse)."""
    if trace.state == "failed":
        return f"the trace {trace.name!r} failed to parse ({trace.error}): upload it again"
    return (
        f"the trace {trace.name!r} is still being parsed ({trace.progress:.0%} read): "
        "start the study once it is ready"
    )


@dataclass(frozen=True, kw_only=True)
class StudyLaunch(Launch):
    """A study to launch: a trace, the policies replayed over it and the baseline they are compared with."""

    name: str
    trace: Trace
    policies: Sequence[Policy]
    baseline: Policy | None = None
    description: str = ""
    created_by: AbstractBaseUser | None = None


@transaction.atomic
def launch_study(launch: StudyLaunch, *, enqueue: bool = True) -> Study:
    """Snapshot each policy (validated by the engine) and enqueue its replay (unless
    ``enqueue`` is false: the caller runs them). Raises ValidationError naming the policy
    when one is not a valid policy."""
    check_heavy_task_limit(launch.created_by)
    if not launch.trace.ready:
        raise ValidationError({"trace": trace_not_ready(launch.trace)})
    if not launch.policies:
        raise ValidationError({"policies": "choose at least one policy"})
    if len({p.pk for p in launch.policies}) != len(launch.policies):
        raise ValidationError({"policies": "a policy appears twice"})
    if launch.baseline is not None and launch.baseline.pk not in {p.pk for p in launch.policies}:
        raise ValidationError({"baseline": "the baseline must be one of the study's policies"})
    snapshots = []
    for policy in launch.policies:
        try:
            engine = policy.engine_policy()
        except ValidationError as error:
            raise ValidationError({"policies": f"{policy.name}: {' '.join(error.messages)}"}) from None
        check_policy_fits(engine, launch.trace, "policies")
        snapshots.append(engine.to_dict())
    study = Study.objects.create(
        name=launch.name,
        description=launch.description,
        trace=launch.trace,
        baseline=launch.baseline or launch.policies[0],
        created_by=launch.created_by,
    )
    runs = [
        Run.objects.create(study=study, policy=policy, policy_name=policy.name, policy_snapshot=snapshot)
        for policy, snapshot in zip(launch.policies, snapshots, strict=True)
    ]
    if enqueue:
        enqueue_runs((run.pk for run in runs), what=f"Study {study.name}")
    return study


def rerun(run: Run) -> None:
    """Replay a finished run again from scratch (same snapshot)."""
    with transaction.atomic():
        # (the lists read summary: a queued run shows no figures of the replay it replaces)
        Run.queue_again([run.pk], metrics=None, summary=None, metrics_digest="", result_file="")
        enqueue_runs([run.pk], what=f"The rerun of {run.policy_name}")
