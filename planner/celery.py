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


@worker_ready.connect
def reap_runs_on_start(**_kwargs) -> None:
    """A worker that starts after a crash picks up the runs whose worker died."""
    from planner.studies.reaper import reap_stale_runs

    reap_stale_runs()
