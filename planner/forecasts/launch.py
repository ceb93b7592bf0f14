"""Starting a forecast, and bringing it to an end.

``start_forecast`` reads the snapshot (``scheduling.forecast.read_snapshot``: a malformed record is
a ValidationError naming it and its field, and nothing is stored), checks the bounds, snapshots the
policy, and makes one chunk row per ``chunk_samples`` samples, each sent to the workers as its own
task once the transaction commits. No task waits on another: each chunk records its raw starts,
and ``planner.forecasts.conclude`` (run after every chunk, and whenever the forecast is read)
merges them once the last one is in, under a lock on the forecast's row, so exactly one caller
merges.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.capacity.models import Policy
from planner.forecasts import bounds
from planner.forecasts.conclude import conclude
from planner.forecasts.models import Arrivals, Forecast, ForecastChunk, SnapshotFormat, Source
from planner.forecasts.tasks import sample_chunk
from planner.launches import Launch
from planner.strict_json import strict_json
from planner.studies.attempts import reap_stale
from planner.studies.models import RunStatus
from planner.traces.models import Trace
from scheduling.binding import check_fits
from scheduling.errors import InputError
from scheduling.forecast import read_snapshot, snapshot_to_json
from scheduling.forecast.kueue_snapshot import read_kueue_snapshot
from scheduling.forecast.read import detect_format
from scheduling.forecast.snapshot import bind_snapshot
from scheduling.model import Policy as EnginePolicy

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


def enqueue_chunks(ids: Iterable[int]) -> None:
    """One ``sample_chunk`` task per chunk, sent once the current transaction commits."""
    for pk in list(ids):
        transaction.on_commit(lambda pk=pk: sample_chunk.delay(pk))


# -- the inputs -------------------------------------------------------------------------------


def _read(data: Any, fmt: str, policy: EnginePolicy | None):
    """``read_snapshot``, except that Kueue workloads are read with the policy (the live
    configuration): it says how many GPUs an instance of each flavor has, so that a workload's
    GPUs become whole instances, and which flavor a workload not admitted yet will take."""
    if policy is not None and fmt in (SnapshotFormat.KUEUE, SnapshotFormat.AUTO):
        try:
            value = data if isinstance(data, dict) else json.loads(data)
        except ValueError:
            value = None  # not JSON: read_snapshot says so in its words
        kueue = SnapshotFormat.KUEUE
        if isinstance(value, dict) and kueue in (fmt, detect_format(value)):
            return read_kueue_snapshot(value, policy=policy)
    return read_snapshot(data, fmt)


def read_snapshot_input(data: Any, fmt: str, policy: EnginePolicy | None = None) -> dict:
    """The snapshot as planner JSON, or a ValidationError on ``snapshot`` naming the record and field."""
    if fmt not in SnapshotFormat.values:
        choices = ", ".join(SnapshotFormat.values)
        raise ValidationError({"snapshot_format": f"{fmt!r} is not one of {choices}"})
    if data is None or data == "" or data == b"":
        raise ValidationError({"snapshot": "give a snapshot (JSON), as a field or an uploaded file"})
    try:
        return strict_json(snapshot_to_json(_read(data, fmt, policy)))
    except InputError as error:
        said = error.describe()
        said = said if said.startswith("snapshot") else f"snapshot: {said}"
        raise ValidationError({"snapshot": said}) from None
    except (ValueError, TypeError) as error:  # undecodable bytes, JSON that is not JSON
        raise ValidationError({"snapshot": f"snapshot: {error}"}) from None


def snapshot_jobs(snapshot: dict) -> list[dict]:
    """Every job of a planner-JSON snapshot, running ones first, as FORECAST.json lists them."""
    return [*snapshot.get("running", []), *snapshot.get("pending", [])]


def _check_bounds(snapshot: dict, samples: int, horizon_days: float) -> None:
    jobs = len(snapshot_jobs(snapshot))
    if not 1 <= samples <= bounds.MAX_SAMPLES:
        raise ValidationError(
            {"samples": f"{samples}: give 1 to {bounds.MAX_SAMPLES:,} samples (MAX_SAMPLES)"}
        )
    if not (math.isfinite(horizon_days) and 0 < horizon_days <= bounds.MAX_HORIZON_DAYS):
        raise ValidationError(
            {"horizon_days": f"{horizon_days}: give more than 0 and at most {bounds.MAX_HORIZON_DAYS} days "
             "(MAX_HORIZON_DAYS)"}
        )  # fmt: skip
    if jobs == 0:
        raise ValidationError({"snapshot": "the snapshot has no running or pending job: nothing to forecast"})
    if jobs > bounds.MAX_SNAPSHOT_JOBS:
        raise ValidationError(
            {
                "snapshot": f"{jobs:,} jobs: a snapshot holds at most {bounds.MAX_SNAPSHOT_JOBS:,} "
                "(MAX_SNAPSHOT_JOBS)"
            }
        )
    limit = bounds.max_job_samples()
    if jobs * samples > limit:
        raise ValidationError(
            {"samples": f"{samples:,} samples x {jobs:,} jobs = {jobs * samples:,}: at most {limit:,} "
             "job-samples "
             f"per forecast (MAX_JOB_SAMPLES): ask for at most {max(1, limit // jobs):,} samples"}
        )  # fmt: skip


def _check_unfinished(user) -> None:
    if user is None or not user.is_authenticated:
        return
    limit = bounds.max_unfinished_per_user()
    finished = [RunStatus.SUCCEEDED, RunStatus.FAILED]
    waiting = Forecast.objects.filter(created_by=user).exclude(status__in=finished)
    if waiting.count() >= limit:
        raise ValidationError(
            {"__all__": f"you have {limit} forecasts queued or running (MAX_UNFINISHED_PER_USER): "
             "start this one when one of them has finished"}
        )  # fmt: skip


WEEK = 7 * 86_400.0


def _check_arrival_week(history: Trace, t0: float) -> None:
    """History arrivals replay the 7 days before T0: a history that ends before them or starts after
    T0 (two clocks, most often: ISO-8601 snapshot times against a trace in seconds from its own
    origin) is refused here, from its summary, rather than on a worker."""
    span = (history.summary or {}).get("span") or {}
    start, end = span.get("start"), span.get("end")
    if start is None or end is None or end < t0 - WEEK or start >= t0:
        raise ValidationError(
            {"arrivals": f"the history {history.name!r} has no job submitted in the 7 days before the "
             f"snapshot's time {t0:,.0f} (its jobs span {start or 0:,.0f} to {end or 0:,.0f} s): history "
             "arrivals need them (are both on the same clock?); use arrivals none"}
        )  # fmt: skip


def _policy_snapshot(policy: Policy) -> dict:
    try:
        return policy.engine_policy().to_dict()
    except ValidationError as error:
        raise ValidationError({"policy": f"{policy.name}: {' '.join(error.messages)}"}) from None


def _check_fits(engine: EnginePolicy, snapshot: dict, history: Trace | None) -> None:
    """The engine's own binding (a job without a type takes its share's first), so that a forecast
    that could only fail on a worker is refused when it is made, naming the record."""
    try:
        bind_snapshot(read_snapshot(snapshot, "planner"), engine)
    except InputError as error:
        raise ValidationError({"policy": f"{engine.name}: snapshot {error.describe()}"}) from None
    if history is not None:
        try:
            check_fits(engine, history.share_names(), history.type_names())
        except InputError as error:
            raise ValidationError({"history": f"{error.reason} (trace {history.name})"}) from None


@dataclass(frozen=True, kw_only=True)
class ForecastLaunch(Launch):
    """A forecast to launch: the snapshot (and history) read under the policy, and how many
    samples to draw."""

    snapshot: Any
    policy: Policy
    snapshot_format: str = SnapshotFormat.AUTO
    history: Trace | None = None
    samples: int = bounds.DEFAULT_SAMPLES
    seed: int = 0
    arrivals: str | None = None
    horizon_days: float = 30.0
    name: str = ""
    source: str = Source.API
    created_by: AbstractBaseUser | None = None


@transaction.atomic
def start_forecast(launch: ForecastLaunch, *, enqueue: bool = True) -> Forecast:
    """Validate everything, store the forecast and its chunks, and send the chunks to the workers
    (unless ``enqueue`` is false). ``arrivals`` defaults to ``history`` when a history is given.
    Raises ValidationError naming the field (and, for the snapshot, the record and its field)."""
    history, samples = launch.history, launch.samples
    _check_unfinished(launch.created_by)
    if history is not None and not history.ready:
        raise ValidationError({"history": f"the trace {history.name!r} is not ready ({history.state})"})
    chosen = launch.arrivals or (Arrivals.HISTORY if history is not None else Arrivals.NONE)
    if chosen not in Arrivals.values:
        raise ValidationError({"arrivals": f"{chosen!r} is not one of {', '.join(Arrivals.values)}"})
    if chosen == Arrivals.HISTORY and history is None:
        raise ValidationError({"arrivals": "arrivals from history need a history trace"})
    policy_dict = _policy_snapshot(launch.policy)
    engine = EnginePolicy.from_dict(policy_dict)
    parsed = read_snapshot_input(launch.snapshot, launch.snapshot_format, engine)
    _check_bounds(parsed, samples, launch.horizon_days)
    if chosen == Arrivals.HISTORY:
        _check_arrival_week(history, float(parsed["time"]))
    _check_fits(engine, parsed, history)
    size = bounds.chunk_samples()
    chunks = math.ceil(samples / size)
    forecast = Forecast.objects.create(
        name=launch.name[:200],
        source=launch.source,
        snapshot_format=launch.snapshot_format,
        snapshot=parsed,
        snapshot_time=float(parsed["time"]),
        running_jobs=len(parsed.get("running", [])),
        pending_jobs=len(parsed.get("pending", [])),
        policy=launch.policy,
        policy_name=launch.policy.name,
        policy_snapshot=policy_dict,
        history=history,
        samples=samples,
        seed=launch.seed,
        arrivals=chosen,
        horizon_days=launch.horizon_days,
        chunk_samples=size,
        chunks=chunks,
        created_by=launch.created_by,
    )
    rows = ForecastChunk.objects.bulk_create(
        ForecastChunk(forecast=forecast, index=i, first=i * size, count=min(size, samples - i * size))
        for i in range(chunks)
    )
    if enqueue:
        enqueue_chunks(row.pk for row in rows)
    return forecast


def reap_forecasts(forecasts=None, now=None) -> dict[str, list[int]]:
    """Chunks whose worker died are sent again (or failed after the last attempt), then every
    unfinished forecast among ``forecasts`` (default: all) is concluded if it can be: a worker that
    died between recording its chunk and merging delays the forecast, never stalls it."""
    unfinished = (forecasts if forecasts is not None else Forecast.objects.all()).exclude(
        status__in=[RunStatus.SUCCEEDED, RunStatus.FAILED]
    )
    ids = list(unfinished.values_list("pk", flat=True))
    outcome = reap_stale(ForecastChunk.objects.filter(forecast_id__in=ids), enqueue_chunks, now)
    for pk in ids:
        conclude(pk)
    return outcome


def queued_chunks() -> list[int]:
    """The queued chunks (sent again by ``reap_runs --queued``)."""
    return list(ForecastChunk.objects.filter(status=RunStatus.QUEUED).values_list("pk", flat=True))
