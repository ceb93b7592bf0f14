"""The replay task under the things that go wrong: duplicates, redelivery, bad input,
crashes, dead workers. Celery runs eagerly here; real workers are in test_workers.py."""

from datetime import timedelta

import pytest
from django.utils import timezone

from planner.studies import tasks
from planner.studies.models import Run
from planner.studies.reaper import reap_stale_runs
from planner.studies.tasks import claim_run, execute, replay_run
from scheduling.result import ReplayResult
from tests.fixtures import raise_on_every_call

pytestmark = pytest.mark.django_db


def test_a_run_replays_and_stores_metrics_and_outcomes(run, media_root):
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.progress, run.attempts, run.error) == ("succeeded", 1.0, 1, "")
    assert run.metrics["summary"]["jobs"] == 4
    outcomes = ReplayResult.load_outcomes(run.result_file.path)
    assert len(outcomes.state) == 4
    assert not list((media_root / "runs").glob(".*"))  # no temporary file left behind


def test_a_succeeded_run_is_not_replayed(run):
    replay_run.apply(args=[run.pk])
    finished_at = Run.objects.get(pk=run.pk).finished_at
    assert replay_run.apply(args=[run.pk]).get() == "nothing to do"
    run.refresh_from_db()
    assert (run.attempts, run.finished_at) == (1, finished_at)


def test_a_trace_that_does_not_fit_the_policy_fails_with_the_row_and_field(run):
    snapshot = run.policy_snapshot
    snapshot["shares"][0]["name"] = "QS9"  # the trace's QS1 jobs now have no share
    Run.objects.filter(pk=run.pk).update(policy_snapshot=snapshot)
    assert replay_run.apply(args=[run.pk]).get() == "failed"
    run.refresh_from_db()
    assert run.status == "failed"
    assert "row 1" in run.error and "QS1" in run.error


def test_a_crash_is_retried_then_failed_with_the_reason(run, settings, monkeypatch):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 2
    calls = raise_on_every_call(monkeypatch, tasks, "replay", RuntimeError("disk on fire"))
    replay_run.apply(args=[run.pk])
    run.refresh_from_db()
    assert len(calls) == 2
    assert (run.status, run.attempts) == ("failed", 2)
    assert run.error == "attempt 2 failed: RuntimeError: disk on fire"


def test_a_crash_then_success_ends_succeeded(run, monkeypatch):
    real_replay = tasks.replay
    calls = []

    def flaky(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            raise ConnectionError("database went away")
        return real_replay(*args, **kwargs)

    monkeypatch.setattr(tasks, "replay", flaky)
    replay_run.apply(args=[run.pk])
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2)


def test_a_redelivered_run_whose_worker_died_restarts_cleanly(run, settings):
    # Attempt 1 claimed the run, then its worker vanished: the heartbeat went stale.
    claim_run(run.pk, worker="dead@host")
    stale = timezone.now() - timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 1)
    Run.objects.filter(pk=run.pk).update(heartbeat=stale, progress=0.4)
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2)
    assert run.worker != "dead@host"


def test_a_duplicate_delivery_leaves_a_live_attempt_alone(run):
    claim_run(run.pk, worker="alive@host")
    assert replay_run.apply(args=[run.pk]).get() == "busy"
    run.refresh_from_db()
    assert (run.status, run.attempts, run.worker) == ("running", 1, "alive@host")


def test_a_superseded_attempt_does_not_overwrite_the_newer_one(run, settings):
    old_attempt, _ = claim_run(run.pk, worker="slow@host")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(days=1))
    new_attempt, _ = claim_run(run.pk, worker="fresh@host")
    assert (old_attempt, new_attempt) == (1, 2)
    assert execute(run.pk, old_attempt) is False
    run.refresh_from_db()
    assert (run.status, run.worker, run.result_file.name) == ("running", "fresh@host", "")


def test_the_reaper_requeues_a_stale_run(run, settings, eager_celery, django_capture_on_commit_callbacks):
    claim_run(run.pk, worker="dead@host")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=True):
        outcome = reap_stale_runs()
    assert outcome == {"requeued": [run.pk], "failed": []}
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2)


def test_the_reaper_fails_a_stale_run_on_its_last_attempt(run, settings):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 1
    claim_run(run.pk, worker="dead@host")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    assert reap_stale_runs() == {"requeued": [], "failed": [run.pk]}
    run.refresh_from_db()
    assert run.status == "failed"
    assert "no heartbeat from dead@host" in run.error


def test_the_reaper_leaves_live_runs_alone(run):
    claim_run(run.pk, worker="alive@host")
    assert reap_stale_runs() == {"requeued": [], "failed": []}


def test_reading_a_study_requeues_its_stale_runs(run, admin_api, django_capture_on_commit_callbacks):
    claim_run(run.pk, worker="dead@host")
    Run.objects.filter(pk=run.pk).update(heartbeat=timezone.now() - timedelta(hours=1))
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        body = admin_api.get(f"/api/studies/{run.study_id}/").json()
    assert body["runs"][0]["status"] == "queued"
    assert "no heartbeat from dead@host" in body["runs"][0]["error"]
    assert len(callbacks) == 1


def test_reap_runs_command_reports_what_it_did(run, capsys):
    from django.core.management import call_command

    call_command("reap_runs")
    assert "re-enqueued 0 run(s), failed 0 run(s)" in capsys.readouterr().out
