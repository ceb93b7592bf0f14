"""The Celery app: workers replay study runs (``celery -A planner worker``).

Configuration comes from Django settings (``CELERY_*``): the broker is Redis when
``REDIS_URL`` is set, otherwise kombu's filesystem transport under ``var/broker``.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

# The worker imports ``include`` after Django is set up; planner.worker_start reaps on start. Named,
# not imported here: the reapers import the apps' tasks, and planner.studies.liveness imports ``app``.
app = Celery("planner", include=["planner.worker_start"])
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.on_after_configure.connect
def make_broker_folders(sender, **_kwargs) -> None:
    """The filesystem broker needs its folders before the first message."""
    options = sender.conf.broker_transport_options or {}
    for key in ("data_folder_in", "data_folder_out", "control_folder"):
        if key in options:
            os.makedirs(options[key], exist_ok=True)
