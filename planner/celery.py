"""The Celery app: workers replay study runs (``celery -A planner worker``).

Configuration comes from Django settings (``CELERY_*``): the broker is Redis when
``REDIS_URL`` is set, otherwise kombu's filesystem transport under ``var/broker``.
"""

import os

from celery import Celery
from celery.signals import worker_ready

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

app = Celery("planner")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def make_broker_folders(sender, **_kwargs) -> None:
    """The filesystem broker needs its folders before the first message."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        if key in options:
            os.makedirs(options[key], exist_ok=True)


@worker_ready.connect
def reap_runs_on_start(**_kwargs) -> None:
    """A worker that starts after a crash picks up the runs, calibrations and curve and search points
    whose worker died (and moves on the searches waiting for them)."""
    from planner.calibration.launch import reap_stale_calibrations
    from planner.curves.launch import reap_curves, reap_searches
    from planner.forecasts.launch import reap_forecasts
    from planner.studies.reaper import reap_stale_runs
    from planner.traces.tasks import reap_stale_parses

    reap_stale_runs()
    reap_stale_calibrations()
    reap_curves()
    reap_searches()
    reap_stale_parses()
    reap_forecasts()
