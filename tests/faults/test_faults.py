"""Faults around a running study, with real workers: Redis restarted in the middle (PostgreSQL +
Redis only: skipped on SQLite), two studies on the same trace at once (no crossed results: each run's
metrics equal a direct replay of its own snapshot), and deleting a trace a study runs on (refused with
a message by the API and the admin, never a 500; the trace and its file stay)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, User
from django.db import connection
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planner.celery import app as celery_app
from planner.strict_json import strict_json
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, Study
from planner.studies.tasks import replay_run
from planner.studies.window import apply_study_window
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay
from scheduling.window import common_window, measure_over, span_of
from tests.service.test_workers import (
    LONG_REPLAY_JOBS,
    ROOT,
    VISIBILITY,
    Worker,
    all_finished,
    database_url,
    synthetic_study,
    wait_for,
)

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]
ON_REDIS = bool(settings.REDIS_URL) and connection.vendor == "postgresql"


@pytest.mark.skipif(not ON_REDIS, reason="needs PostgreSQL and Redis (DATABASE_URL and REDIS_URL)")
def test_a_redis_restart_during_a_study_loses_no_run(start_worker, redis_server, queue):
    start_worker("through-restart", broker=redis_server.url)
    study = synthetic_study(jobs=LONG_REPLAY_JOBS, variants=3)
    runs = list(study.runs.order_by("id"))
    with celery_app.connection_for_write(redis_server.url) as conn:
        producer = conn.Producer()
        for run in runs:  # sent to our own Redis, the one about to restart
            replay_run.apply_async((run.pk,), queue=queue, producer=producer)
    # Restart while the first run replays and the other two wait in Redis.
    wait_for(
        lambda: Run.objects.filter(pk=runs[0].pk, status="running", progress__gt=0).exists(), 90, "progress"
    )
    assert Run.objects.get(pk=runs[2].pk).status == "queued"  # its message is in Redis as it stops
    redis_server.stop()
    time.sleep(2)
    redis_server.start()
    wait_for(lambda: all_finished(study), 240, "the study to finish after the restart", poll=0.5)
    finished = list(study.runs.order_by("id"))
    assert [run.status for run in finished] == ["succeeded"] * 3, [run.error for run in finished]
    assert all(run.metrics["summary"]["jobs"] == LONG_REPLAY_JOBS for run in finished)


@pytest.mark.skipif(not ON_REDIS, reason="needs PostgreSQL and Redis (DATABASE_URL and REDIS_URL)")
def test_after_redis_restarts_empty_reap_runs_queued_sends_the_waiting_runs_again(
    redis_server, tmp_path, media_root, monkeypatch
):
    """A Redis restarted without its data has lost the waiting runs' messages: they stay queued
    until ``manage.py reap_runs --queued`` sends them again; the run being replayed is not replayed twice."""
    monkeypatch.setenv("REDIS_URL", redis_server.url)
    worker = Worker("empty-restart", "celery", tmp_path / "empty-restart.log", media_root)  # our Redis only
    try:
        worker.wait_ready()
        study = synthetic_study(jobs=LONG_REPLAY_JOBS, variants=3)
        runs = list(study.runs.order_by("id"))
        with celery_app.connection_for_write(redis_server.url) as conn:
            producer = conn.Producer()
            for run in runs:
                replay_run.apply_async((run.pk,), queue="celery", producer=producer)
        wait_for(
            lambda: Run.objects.filter(pk=runs[0].pk, status="running", progress__gt=0).exists(),
            90,
            "progress",
        )
        redis_server.stop()
        redis_server.forget()
        redis_server.start()
        wait_for(lambda: Run.objects.get(pk=runs[0].pk).finished, 120, "the first run to finish", poll=0.5)
        time.sleep(VISIBILITY + 4)  # nothing is redelivered: the messages are gone
        assert list(study.runs.order_by("id").values_list("status", flat=True)) == [
            "succeeded",
            "queued",
            "queued",
        ]
        env = {**os.environ, "DATABASE_URL": database_url(), "PLANNER_MEDIA_ROOT": str(media_root)}
        done = subprocess.run(
            [sys.executable, "manage.py", "reap_runs", "--queued"],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0 and "sent 2 queued run(s) again" in done.stdout, done.stdout + done.stderr
        wait_for(lambda: all_finished(study), 240, "the study to finish", poll=0.5)
        finished = list(study.runs.order_by("id"))
        assert [run.status for run in finished] == ["succeeded"] * 3, [run.error for run in finished]
        assert finished[0].attempts == 1
    finally:
        worker.stop()


def expected_summaries(runs: list[Run]) -> list[dict]:
    """Each run's summary replayed here, in this process, then measured over the common window of
    its study's runs (SEMANTICS.md section 5), as the worker that records the last run does."""
    metrics = {}
    for run in runs:
        policy = EnginePolicy.from_dict(run.policy_snapshot)
        metrics[run.pk] = (policy, replay(policy, run.study.trace.load_jobs()).metrics)
    expected = []
    for run in runs:
        same_study = [metrics[other.pk][1] for other in runs if other.study_id == run.study_id]
        window = common_window(span_of(m) for m in same_study)
        policy, own = metrics[run.pk]
        expected.append(strict_json(measure_over(own, policy, window))["summary"])
    return expected


def test_two_studies_on_one_trace_at_once_do_not_cross_results(start_worker):
    start_worker("left")
    start_worker("right")
    first = synthetic_study(jobs=8000, variants=2)
    base = first.runs.order_by("id").first().policy
    # The second study: the same trace, its own policies (a static split and a pooled variant).
    static = base.duplicate(f"{base.name}-static")
    static.shares.update(strategy="RESERVE", borrow_limit_percent=None, in_share_preemption="never")
    pooled = base.duplicate(f"{base.name}-pooled")
    pooled.shares.update(strategy="LEND_AND_BORROW", borrow_limit_percent=None)
    second = launch_study(StudyLaunch(name="same trace", trace=first.trace, policies=[static, pooled]))
    for study in (first, second):
        wait_for(lambda study=study: all_finished(study), 200, f"study {study.name}", poll=0.5)
        # As every reader does (pages, API): the worker that recorded the last run may still be
        # putting the study on its common window.
        apply_study_window(study.pk)
    runs = list(Run.objects.filter(study__in=[first, second]).select_related("study__trace").order_by("id"))
    assert [run.status for run in runs] == ["succeeded"] * 4, [run.error for run in runs]
    summaries = [run.metrics["summary"] for run in runs]
    for run, summary, expected in zip(runs, summaries, expected_summaries(runs), strict=True):
        assert summary == expected, f"run {run.pk} ({run.policy_name}) has another run's metrics"
    assert summaries[2] != summaries[3], "the static split and full pooling should differ"


def admin_clients() -> tuple[APIClient, Client]:
    user = User.objects.create_user(username=f"faults-admin-{time.monotonic_ns()}", is_staff=True)
    user.groups.add(Group.objects.get(name="admin"))
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    page = Client()
    page.force_login(user)
    return api, page


def test_deleting_a_trace_a_study_runs_on_is_refused(start_worker):
    start_worker("busy")
    study = synthetic_study(jobs=100000, variants=1)
    trace = study.trace
    wait_for(lambda: study.runs.filter(status="running").exists(), 90, "the run to start")
    api, page = admin_clients()
    response = api.delete(f"/api/traces/{trace.pk}/")
    assert response.status_code == 409, response.content[:300]
    assert "still in use" in response.json()["detail"] and study.name in response.json()["detail"]
    admin_page = page.post(f"/admin/traces/trace/{trace.pk}/delete/", {"post": "yes"})
    assert admin_page.status_code in (200, 403), admin_page.status_code
    assert b"protected" in admin_page.content.lower() or admin_page.status_code == 403
    bulk = page.post(
        "/admin/traces/trace/", {"action": "delete_selected", "_selected_action": [trace.pk], "post": "yes"}
    )
    assert bulk.status_code in (200, 302, 403)
    trace.refresh_from_db()
    assert trace.jobs_file.storage.exists(trace.jobs_file.name)
    wait_for(lambda: all_finished(study), 200, "the study to finish", poll=0.5)
    assert study.runs.get().status == "succeeded", study.runs.get().error
    # Once its studies are deleted, the trace can go, with its file.
    assert api.delete(f"/api/studies/{study.pk}/").status_code == 204
    name = trace.jobs_file.name
    assert api.delete(f"/api/traces/{trace.pk}/").status_code == 204
    assert not trace.jobs_file.storage.exists(name)
    assert not Study.objects.filter(pk=study.pk).exists()
