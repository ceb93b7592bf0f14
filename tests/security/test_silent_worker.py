"""A run whose worker was SIGKILLed showed "running" for about two minutes before it was requeued.
The study page (and the progress JSON it polls) now says that the worker stopped answering and when
the run goes back to the queue, or fails after its last attempt."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

from django.utils import timezone

from planner.studies import attempts
from planner.studies.models import RunStatus


def silent_run(world, seconds: float, attempts: int):
    run = world.study.runs.get()
    heartbeat = timezone.now() - timedelta(seconds=seconds)
    run.__class__.objects.filter(pk=run.pk).update(
        status=RunStatus.RUNNING, heartbeat=heartbeat, worker="celery@w1", attempts=attempts, progress=0.4
    )
    return heartbeat


def test_the_study_page_says_the_worker_stopped_answering_and_when_the_run_is_retried(
    world, settings, monkeypatch
):
    settings.PLANNER_HEARTBEAT_SECONDS = 2
    settings.PLANNER_HEARTBEAT_STALE_SECONDS = 120
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    heartbeat = silent_run(world, 50, attempts=1)
    # The notes' clock stopped 50 s after the heartbeat: on a loaded machine a second passed between
    # the two requests, and the second said "51 s ago".
    monkeypatch.setattr(attempts, "timezone", SimpleNamespace(now=lambda: heartbeat + timedelta(seconds=50)))
    retry_at = f"{heartbeat + timedelta(seconds=120):%H:%M:%S}"  # heartbeat + the stale limit
    client = world.session("viewer")
    page = client.get(f"/studies/{world.study.pk}/").content.decode()
    assert "celery@w1 stopped answering 50 s ago" in page
    assert f"it goes back to the queue at {retry_at} UTC for attempt 2 of 3" in page
    progress = client.get(f"/studies/{world.study.pk}/progress.json").json()["runs"][0]
    assert progress["status"] == "running"
    assert progress["note"].startswith("celery@w1 stopped answering 50 s ago")


def test_on_its_last_attempt_the_page_says_when_the_run_fails(world, settings):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    silent_run(world, 30, attempts=3)
    note = world.session("viewer").get(f"/studies/{world.study.pk}/progress.json").json()["runs"][0]["note"]
    assert "(attempt 3 was the last of 3)" in note and "it fails at" in note


def test_a_worker_that_beats_gets_no_note(world, settings):
    settings.PLANNER_HEARTBEAT_SECONDS = 2
    silent_run(world, 3, attempts=1)  # one heartbeat late: not silent yet
    assert (
        world.session("viewer").get(f"/studies/{world.study.pk}/progress.json").json()["runs"][0]["note"]
        == ""
    )
