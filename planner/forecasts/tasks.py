"""The Celery task that replays one chunk of a forecast's samples, with the study replays' claim /
heartbeat / conditional-write machinery (``planner.studies.attempts``): a redelivered task
restarts, a superseded attempt records nothing, a crashed one is retried and, after the last
attempt, fails with the reason. After its chunk, every task tries to conclude the forecast: the
last one to finish merges (``planner.forecasts.conclude``)."""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from planner.forecasts.conclude import conclude, forecast_inputs
from planner.forecasts.models import Forecast, ForecastChunk
from planner.strict_json import strict_json
from planner.studies.attempts import Heartbeat, fail, run_attempt
from planner.studies.models import RunStatus
from planner.worker_results import record_success
from scheduling.forecast import run_samples


def execute_chunk(pk: int, attempt: int) -> bool:
    """Replay the chunk's samples; True when this attempt recorded them."""
    chunk = ForecastChunk.objects.select_related("forecast__history").get(pk=pk)
    forecast = chunk.forecast
    if forecast.finished:  # another chunk failed it: these samples would never be merged
        fail(ForecastChunk, pk, attempt, f"not replayed: the forecast had already {forecast.status}")
        return False
    Forecast.objects.filter(pk=forecast.pk, status=RunStatus.QUEUED).update(status=RunStatus.RUNNING)
    inputs = forecast_inputs(forecast)
    with Heartbeat(ForecastChunk, pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS):
        starts = run_samples(inputs, chunk.first, chunk.count)
    return record_success(ForecastChunk, pk, attempt, starts=strict_json(starts.to_json()))


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def sample_chunk(self, pk: int) -> str:
    """Replay one chunk of a forecast's samples, then conclude the forecast if it was the last."""
    outcome = run_attempt(self, ForecastChunk, pk, execute_chunk)
    forecast_id = ForecastChunk.objects.filter(pk=pk).values_list("forecast_id", flat=True).first()
    if forecast_id is not None:
        conclude(forecast_id)
    return outcome
