"""The bounds a forecast is held to, stated once: the engine's (``scheduling.forecast``: samples,
horizon, snapshot jobs) and the service's own (the work of one forecast, a snapshot file's size,
samples per worker task). A request past one is refused with a 400 naming the bound."""

from __future__ import annotations

from django.conf import settings

from scheduling.forecast import MAX_HORIZON_DAYS, MAX_SAMPLES, MAX_SNAPSHOT_JOBS

__all__ = [
    "MAX_HORIZON_DAYS",
    "MAX_SAMPLES",
    "MAX_SNAPSHOT_JOBS",
    "chunk_samples",
    "max_job_samples",
    "max_snapshot_bytes",
    "max_unfinished_per_user",
]

DEFAULT_SAMPLES = 200
# Samples x snapshot jobs: every chunk stores a start and an end per job and sample (SampleStarts),
# so this bounds the rows' size (about 40 bytes a pair as JSON: 1M pairs, 40 MB) and the merge.
DEFAULT_MAX_JOB_SAMPLES = 1_000_000
DEFAULT_MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
# Samples per worker task: small enough that 200 samples spread over 8 workers, large enough that
# a chunk's set-up (parsing the snapshot, loading the history) is paid rarely.
DEFAULT_CHUNK_SAMPLES = 25
# Forecasts one person may have queued or running at once: every role may start them, so one
# script cannot fill the workers' queue for everybody.
DEFAULT_MAX_UNFINISHED_PER_USER = 5


def max_job_samples() -> int:
    return int(getattr(settings, "PLANNER_FORECAST_MAX_JOB_SAMPLES", DEFAULT_MAX_JOB_SAMPLES))


def max_snapshot_bytes() -> int:
    return int(getattr(settings, "PLANNER_FORECAST_MAX_SNAPSHOT_BYTES", DEFAULT_MAX_SNAPSHOT_BYTES))


def max_unfinished_per_user() -> int:
    return int(getattr(settings, "PLANNER_FORECAST_MAX_UNFINISHED_PER_USER", DEFAULT_MAX_UNFINISHED_PER_USER))


def chunk_samples() -> int:
    return max(1, int(getattr(settings, "PLANNER_FORECAST_CHUNK_SAMPLES", DEFAULT_CHUNK_SAMPLES)))
