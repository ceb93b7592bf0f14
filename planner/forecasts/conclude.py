"""Bringing a forecast to an end: its chunks' samples merged once the last one is in.

Below ``planner.forecasts.launch`` and ``planner.forecasts.tasks``: the task concludes after its
chunk, and launching sends the task, so what both need lives here.
"""

from __future__ import annotations

import logging

from django.db import transaction
from django.utils import timezone

from planner.forecasts.models import Forecast, ForecastChunk, ForecastJob
from planner.forecasts.queues import job_rows, share_queues
from planner.strict_json import strict_json
from planner.studies.models import RunStatus
from scheduling.errors import InputError
from scheduling.forecast import ForecastInputs, SampleStarts, merge_samples, read_snapshot
from scheduling.model import Policy as EnginePolicy

logger = logging.getLogger(__name__)


def forecast_inputs(forecast: Forecast) -> ForecastInputs:
    """The engine's inputs, rebuilt from what the forecast stored (every chunk builds the same)."""
    return ForecastInputs(
        policy=EnginePolicy.from_dict(forecast.policy_snapshot),
        snapshot=read_snapshot(forecast.snapshot, "planner"),
        history=forecast.history.load_jobs() if forecast.history_id else None,
        samples=forecast.samples,
        seed=forecast.seed,
        arrivals=forecast.arrivals,
        horizon_days=forecast.horizon_days,
    )


def _fail(forecast: Forecast, reason: str) -> None:
    forecast.status = RunStatus.FAILED
    forecast.error = reason[:4000]
    forecast.finished_at = timezone.now()
    forecast.save(update_fields=["status", "error", "finished_at"])


def conclude(forecast_id: int) -> str:
    """Merge the chunks once every one has succeeded, or fail the forecast with the reason of the
    first chunk that failed; otherwise record how many are done. Idempotent and safe from several
    workers at once: the forecast's row is locked (SELECT ... FOR UPDATE on PostgreSQL; SQLite's
    IMMEDIATE transactions take the database's write lock when the block begins)."""
    with transaction.atomic():
        forecast = Forecast.objects.select_for_update().filter(pk=forecast_id).first()
        if forecast is None or forecast.finished:
            return "finished"
        fields = ("index", "first", "count", "status", "error")
        chunks = list(forecast.chunk_rows.order_by("index").only(*fields))
        failed = next((chunk for chunk in chunks if chunk.status == RunStatus.FAILED), None)
        if failed is not None:
            last = failed.first + failed.count - 1
            _fail(forecast, f"samples {failed.first}-{last} (chunk {failed.index + 1} of {forecast.chunks}) "
                            f"failed: {failed.error}")  # fmt: skip
            return "failed"
        done = sum(chunk.status == RunStatus.SUCCEEDED for chunk in chunks)
        started = any(chunk.status != RunStatus.QUEUED for chunk in chunks)
        if done < len(chunks):
            status = RunStatus.RUNNING if started else RunStatus.QUEUED
            if (forecast.chunks_done, forecast.status) != (done, status):
                Forecast.objects.filter(pk=forecast.pk).update(chunks_done=done, status=status)
            return "waiting"
        try:
            inputs = forecast_inputs(forecast)
            parts = [
                SampleStarts.from_json(starts)
                for starts in forecast.chunk_rows.order_by("index").values_list("starts", flat=True)
            ]
            result = strict_json(merge_samples(inputs, parts))
        except InputError as error:
            _fail(forecast, f"merging the samples: {error.describe()}")
            return "failed"
        except ValueError as error:  # chunks that do not fit together (the engine's check)
            _fail(forecast, f"merging the samples: {error}")
            return "failed"
        except Exception as error:  # a bug would otherwise fail every reader's page, again and again
            logger.exception("merging the samples of forecast %s", forecast.pk)
            _fail(forecast, f"merging the samples: {type(error).__name__}: {error}")
            return "failed"
        jobs = job_rows(forecast, result)
        ForecastJob.objects.filter(forecast=forecast).delete()
        ForecastJob.objects.bulk_create(jobs, batch_size=2000)
        forecast.result = result
        forecast.shares = strict_json(share_queues(jobs, forecast.policy_snapshot))
        forecast.status = RunStatus.SUCCEEDED
        forecast.chunks_done = len(chunks)
        forecast.error = ""
        forecast.finished_at = timezone.now()
        forecast.save(update_fields=["result", "shares", "status", "chunks_done", "error", "finished_at"])
        # The raw starts have served: the merged quantiles are what is kept (a chunk row stays, as
        # the record of who computed what).
        ForecastChunk.objects.filter(forecast=forecast).update(starts=None)
        return "succeeded"
