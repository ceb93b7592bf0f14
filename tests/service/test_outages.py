"""With Redis or the broker down, nothing answers 500: a 503 that says which service and what became
of the request (JSON on the API, a page elsewhere), and a study whose replays could not be sent is
not left queued for ever: its runs are failed with the reason.

Redis is "down" as a cache at a port where nothing listens (refused at once); the broker fails on
publish (kombu's OperationalError, what Celery raises when Redis refuses the connection)."""

from __future__ import annotations

import base64
from unittest import mock

import pytest
from django.test import Client
from kombu.exceptions import OperationalError
from rest_framework.test import APIClient

from planner.studies.models import Run, RunStatus, Study
from tests.service.conftest import make_user

DEAD_REDIS = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    "login-throttle": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": "redis://127.0.0.1:9/0",  # the discard port: nothing answers there
        "OPTIONS": {"socket_connect_timeout": 1},
    },
}


def basic(username: str, password: str) -> APIClient:
    client = APIClient()
    encoded = base64.b64encode(f"{username}:{password}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {encoded}")
    return client


@pytest.mark.django_db
def test_token_creation_with_the_throttle_redis_down_is_a_503(settings):
    make_user("ana", "viewer")
    settings.CACHES = DEAD_REDIS
    response = basic("ana", "pw-ana").post("/api/tokens/")
    assert response.status_code == 503
    assert response["Retry-After"] == "30"
    assert "cannot be reached" in response.json()["detail"] and "Redis" in response.json()["detail"]


@pytest.mark.django_db
def test_signing_in_with_the_throttle_redis_down_is_a_503_page(settings):
    make_user("ana", "viewer")
    settings.CACHES = DEAD_REDIS
    response = Client().post("/login/", {"username": "ana", "password": "pw-ana"})
    assert response.status_code == 503
    assert "Unavailable for a moment" in response.content.decode()


def broker_down():
    return mock.patch(
        "kombu.messaging.Producer.publish",
        side_effect=OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused."),
    )


@pytest.mark.django_db(transaction=True)
def test_a_study_whose_replays_cannot_be_queued_is_a_503_and_its_runs_fail(aws_policy, aws_trace):
    user = make_user("root", "admin")
    api = APIClient()
    api.force_authenticate(user)
    payload = {"name": "while redis is down", "trace": aws_trace.pk, "policies": [aws_policy.pk]}
    with broker_down():
        response = api.post("/api/studies/", payload, format="json")
    assert response.status_code == 503
    detail = response.json()["detail"]
    assert detail.startswith("Study while redis is down was saved, but its 1 replay could not be queued")
    assert "They are marked failed: rerun them once the task queue is back." in detail
    run = Run.objects.get(study__name="while redis is down")
    # Not queued for ever: failed, saying why (a rerun sends it again).
    assert run.status == RunStatus.FAILED and run.finished_at is not None
    assert run.error.startswith("not queued: the task queue (Celery's broker) could not be reached")
    assert "Connection refused" in run.error


@pytest.mark.django_db(transaction=True)
def test_the_study_form_with_the_broker_down_is_a_503_page(aws_policy, aws_trace):
    client = Client()
    client.force_login(make_user("root", "admin"))
    form = {"name": "page study", "trace": aws_trace.pk, "policies": [aws_policy.pk]}
    form["baseline"] = aws_policy.pk
    with broker_down():
        response = client.post("/studies/new/", form)
    assert response.status_code == 503, response.content[:500]
    text = response.content.decode()
    assert "Study page study was saved, but its 1 replay could not be queued" in text
    assert Study.objects.get(name="page study").runs.get().status == RunStatus.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_curve_whose_points_cannot_be_queued_is_a_503_and_reads_as_failed(aws_policy, aws_trace):
    from planner.curves.models import CapacityCurve

    api = APIClient()
    api.force_authenticate(make_user("root", "admin"))
    payload = {"trace": aws_trace.pk, "policies": [aws_policy.pk], "sizes": [3, 6], "name": "curve"}
    with broker_down():
        response = api.post("/api/curves/", payload, format="json")
    assert response.status_code == 503
    assert response.json()["detail"].startswith("The curve curve was saved, but its 2 replays could not be")
    curve = CapacityCurve.objects.get(name="curve")
    assert curve.status == RunStatus.FAILED
    assert all(p.error.startswith("not queued: the task queue") for p in curve.points.all())


@pytest.mark.django_db(transaction=True)
def test_the_reaper_path_leaves_runs_as_they_were_when_the_broker_refuses(aws_policy, aws_trace):
    # Without a request to answer, the broker's own error is raised and the run keeps its state,
    # for the next sweep to send again (a short outage must not fail work already running).
    from django.db import transaction

    from planner.studies.launch import StudyLaunch, enqueue_runs, launch_study

    study = launch_study(StudyLaunch(name="queued", trace=aws_trace, policies=[aws_policy]), enqueue=False)
    run = study.runs.get()
    with broker_down(), pytest.raises(OperationalError), transaction.atomic():
        enqueue_runs([run.pk])
    run.refresh_from_db()
    assert run.status == RunStatus.QUEUED
