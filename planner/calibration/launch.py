"""Starting a calibration (the policy snapshotted, the replay enqueued once the transaction commits)
and recovering the ones whose worker died (a stale heartbeat: re-enqueued, or failed with the reason
after the last attempt)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.calibration.models import Calibration
from planner.calibration.tasks import calibrate_trace
from planner.capacity.models import Policy
from planner.launches import Launch
from planner.studies.attempts import reap_stale
from planner.studies.launch import trace_not_ready
from planner.studies.limits import check_heavy_task_limit
from planner.traces.models import Trace
from scheduling.errors import InputError
from scheduling.model import Policy as EnginePolicy
from scheduling.traces.policy_fit import check_trace_fits_policy

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

NO_RECORDED_STARTS = (
    "the trace {name} records no start times: calibration compares replayed waits with recorded "
    "ones (upload a Slurm sacct, Alibaba openb or Helios trace, or a planner CSV with recorded_start)"
)


def recorded_start_count(trace: Trace) -> int:
    """Jobs of the trace with a recorded start (from its stored summary)."""
    return int((trace.summary or {}).get("recorded_starts") or 0)


def first_misfit(trace: Trace, snapshot: dict) -> str:
    """The first job of the trace the policy cannot replay, with the source field to look at
    (``job 3f2a...: 'ml-ops' is not a share of ...``, field ``quotaShareName`` for AWS histories)."""
    try:
        check_trace_fits_policy(trace.load_jobs(), EnginePolicy.from_dict(snapshot), trace.format)
    except InputError as error:
        return error.describe()
    return "no job of it is affected"


def enqueue_calibrations(ids: Iterable[int]) -> None:
    """Send one ``calibrate_trace`` task per calibration after the current transaction commits."""
    for pk in list(ids):
        transaction.on_commit(lambda pk=pk: calibrate_trace.delay(pk))


@dataclass(frozen=True, kw_only=True)
class CalibrationLaunch(Launch):
    """A calibration to launch: the recorded trace replayed under the policy, and a note on where
    they came from."""

    trace: Trace
    policy: Policy
    created_by: AbstractBaseUser | None = None
    note: str = ""


@transaction.atomic
def start_calibration(launch: CalibrationLaunch, *, enqueue: bool = True) -> Calibration:
    """Snapshot ``policy`` (validated by the engine) and enqueue the replay of ``trace`` under it.
    Raises ValidationError naming the field when the trace records no start or the policy cannot
    replay it (invalid, or a share of the trace missing from it)."""
    trace, policy = launch.trace, launch.policy
    check_heavy_task_limit(launch.created_by)
    if not trace.ready:
        raise ValidationError({"trace": trace_not_ready(trace)})
    if not recorded_start_count(trace):
        raise ValidationError({"trace": NO_RECORDED_STARTS.format(name=trace.name)})
    try:
        snapshot = policy.engine_policy().to_dict()
    except ValidationError as error:
        raise ValidationError({"policy": f"{policy.name}: {' '.join(error.messages)}"}) from None
    policy_shares = {share["name"] for share in snapshot["shares"]}
    missing = [s["name"] for s in (trace.summary or {}).get("shares", []) if s["name"] not in policy_shares]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ValidationError(
            {
                "policy": f"{policy.name} has no share for the trace's {shown}: pick the policy in force "
                f"({first_misfit(trace, snapshot)})"
            }
        )
    calibration = Calibration.objects.create(
        trace=trace,
        policy=policy,
        policy_name=policy.name,
        policy_snapshot=snapshot,
        note=launch.note or policy.description,
        created_by=launch.created_by,
    )
    if enqueue:
        enqueue_calibrations([calibration.pk])
    return calibration


def reap_stale_calibrations(calibrations=None, now=None) -> dict[str, list[int]]:
    """Re-enqueue, or fail after the last attempt, the running calibrations whose heartbeat is stale."""
    rows = calibrations if calibrations is not None else Calibration.objects.all()
    return reap_stale(rows, enqueue_calibrations, now)
