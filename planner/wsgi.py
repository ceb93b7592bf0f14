"""WSGI entry point for production servers (gunicorn planner.wsgi, uwsgi...)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")

from planner.serving import guard_body  # noqa: E402  (after the settings are named)

# Bodies that stall or end short are a 400, never a 500 or a half-stored upload (planner/serving.py).
application = guard_body(get_wsgi_application())
