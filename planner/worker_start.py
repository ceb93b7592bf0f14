"""What every worker does when it starts, after a crash or not: it picks up the runs, parses,
calibrations, curve and search points and forecast chunks whose worker died (and moves on the
searches and forecasts waiting for them).

Imported by the worker only (``include`` of the Celery app in ``planner.celery``).
"""

from __future__ import annotations

from celery.signals import worker_ready

from planner.calibration.launch import reap_stale_calibrations
from planner.curves.launch import reap_curves, reap_searches
from planner.forecasts.launch import reap_forecasts
from planner.studies.reaper import reap_stale_runs
from planner.traces.tasks import reap_stale_parses


@worker_ready.connect
def reap_runs_on_start(**_kwargs) -> None:
    """Reap what died with a worker, before this one takes new tasks."""
    reap_stale_runs()
    reap_stale_calibrations()
    reap_curves()
    reap_searches()
    reap_stale_parses()
    reap_forecasts()
