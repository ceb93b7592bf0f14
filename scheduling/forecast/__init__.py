"""SEMANTICS.md section 11, "when will my job start": a forecast from a queue snapshot, replayed
forward many times with durations and arrivals drawn from history (see docs/forecast.md).

The interface the service uses is /work/wt/FORECAST_CONTRACT.md's: keep these names stable.
"""

from scheduling.forecast.inputs import MAX_HORIZON_DAYS, MAX_SAMPLES, ForecastInputs
from scheduling.forecast.read import read_snapshot
from scheduling.forecast.samples import SampleStarts, run_samples
from scheduling.forecast.snapshot import (
    MAX_SNAPSHOT_JOBS,
    Snapshot,
    SnapshotJob,
    snapshot_to_json,
)
from scheduling.forecast.summary import forecast, merge_samples

__all__ = [
    "MAX_HORIZON_DAYS",
    "MAX_SAMPLES",
    "MAX_SNAPSHOT_JOBS",
    "ForecastInputs",
    "SampleStarts",
    "Snapshot",
    "SnapshotJob",
    "forecast",
    "merge_samples",
    "read_snapshot",
    "run_samples",
    "snapshot_to_json",
]
