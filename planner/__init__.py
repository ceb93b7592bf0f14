"""The planner service: Django project, apps and the Celery app that replays studies."""

from planner.celery import app as celery_app

__all__ = ["celery_app"]
