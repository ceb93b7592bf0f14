"""Issue 25, item 1: a stale heartbeat alone no longer reaps an attempt whose process still runs.

One compiled pass longer than the stale limit calls nothing back, so the heartbeat goes stale while
the worker computes; before, the reaper (and a redelivered task's claim) then started a second
attempt beside the first. Now each claim records its process, and a stale attempt is sent again
(or failed) only once that process is gone: on this host, its pid and start time; on another host,
its Celery worker's list of active tasks, no answer counting as dead."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from django.utils import timezone

from planner.studies import liveness
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.liveness import Liveness, WorkerProcess
from planner.studies.models import Run
from planner.studies.reaper import reap_stale_runs
from planner.studies.tasks import replay_run

pytestmark = pytest.mark.django_db


def silent_for_an_hour(run: Run, process: dict, attempts: int = 1) -> None:
    """Attempt ``attempts`` of ``run`` is computed by ``process`` and last beat an hour ago."""
    Run.objects.filter(pk=run.pk).update(
        status="running", attempts=attempts, worker="celery@w1", worker_process=process,
        heartbeat=timezone.now() - timedelta(hours=1), progress=0.96,
    )  # fmt: skip


def test_a_stale_heartbeat_whose_process_runs_is_not_reaped(run, live_process):
    silent_for_an_hour(run, live_process)
    assert reap_stale_runs() == {"requeued": [], "failed": []}
    run.refresh_from_db()
    assert (run.status, run.attempts, run.error) == ("running", 1, "")


def test_the_last_attempt_is_not_failed_while_its_process_runs(run, live_process, settings):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 1
    silent_for_an_hour(run, live_process)
    assert reap_stale_runs() == {"requeued": [], "failed": []}
    assert Run.objects.get(pk=run.pk).status == "running"


def test_a_redelivered_task_does_not_start_a_second_attempt_beside_a_live_one(run, live_process):
    silent_for_an_hour(run, live_process)
    assert replay_run.apply(args=[run.pk]).get() == "busy"
    assert Run.objects.get(pk=run.pk).attempts == 1


def test_a_stale_heartbeat_whose_process_ended_is_requeued_with_the_reason(
    run, dead_process, django_capture_on_commit_callbacks
):
    silent_for_an_hour(run, dead_process)
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert reap_stale_runs() == {"requeued": [run.pk], "failed": []}
    run.refresh_from_db()
    assert run.status == "queued" and len(sent) == 1
    assert "no heartbeat from celery@w1 since" in run.error
    assert f"its process (pid {dead_process['pid']} on {dead_process['host']}) has ended" in run.error


def test_a_dead_process_on_the_last_attempt_fails_the_run_with_the_reason(run, dead_process, settings):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 2
    silent_for_an_hour(run, dead_process, attempts=2)
    assert reap_stale_runs() == {"requeued": [], "failed": [run.pk]}
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error.startswith("attempt 2 of 2 stopped: no heartbeat from celery@w1")
    assert "has ended" in run.error


def test_a_redelivered_task_takes_over_from_a_dead_process(run, dead_process):
    silent_for_an_hour(run, dead_process)
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.attempts) == ("succeeded", 2)
    assert run.worker_process["pid"] == os.getpid()  # the new attempt recorded its own process


def test_a_pid_taken_by_another_process_is_dead(run, live_process):
    """The pid exists but started at another time: the worker's process ended and the pid was
    given to another one."""
    silent_for_an_hour(run, {**live_process, "started": "1"})
    assert reap_stale_runs()["requeued"] == [run.pk]
    assert "the pid is another process's now" in Run.objects.get(pk=run.pk).error


def test_a_fresh_heartbeat_is_left_alone_without_asking_anyone(run, dead_process, monkeypatch):
    monkeypatch.setattr(Liveness, "judge", lambda *args: pytest.fail("asked about a fresh heartbeat"))
    Run.objects.filter(pk=run.pk).update(
        status="running", attempts=1, worker_process=dead_process, heartbeat=timezone.now()
    )
    assert reap_stale_runs() == {"requeued": [], "failed": []}


def test_a_run_claimed_before_processes_were_recorded_is_judged_by_its_heartbeat(run):
    silent_for_an_hour(run, None)
    assert reap_stale_runs()["requeued"] == [run.pk]


# Another host: its Celery worker is asked which tasks it runs (inspect().active()).


class Inspect:
    """What ``app.control.inspect(destination=..., timeout=...)`` returns, answering ``replies``."""

    calls: list[tuple[list[str], float]] = []

    def __init__(self, replies):
        self.replies = replies

    def __call__(self, destination, timeout):
        Inspect.calls.append((destination, timeout))
        return self

    def active(self):
        if isinstance(self.replies, Exception):
            raise self.replies
        return self.replies


@pytest.fixture
def remote(live_process):
    """A process on another host, in worker celery@w1, computing task-1."""
    return {**live_process, "host": "elsewhere", "pid": 4242}


@pytest.fixture
def answers(monkeypatch):
    from planner.celery import app

    def answer(replies) -> None:
        Inspect.calls = []
        monkeypatch.setattr(app.control, "inspect", Inspect(replies))

    return answer


def test_another_hosts_worker_that_still_runs_the_task_keeps_it(run, remote, answers, settings):
    settings.PLANNER_WORKER_PING_SECONDS = 0.7
    answers({"celery@w1": [{"id": "task-1", "worker_pid": 4242, "name": "planner.studies.tasks.replay_run"}]})
    silent_for_an_hour(run, remote)
    assert reap_stale_runs() == {"requeued": [], "failed": []}
    assert Inspect.calls == [(["celery@w1"], 0.7)]


def test_another_hosts_worker_that_does_not_answer_is_dead(run, remote, answers):
    answers({})  # nobody answered within the timeout
    silent_for_an_hour(run, remote)
    assert reap_stale_runs()["requeued"] == [run.pk]
    assert "celery@w1 did not answer within 1 s" in Run.objects.get(pk=run.pk).error


def test_another_hosts_worker_that_runs_something_else_no_longer_runs_it(run, remote, answers):
    """Its pool child died (the worker requeued the task) or moved on to other work."""
    answers({"celery@w1": [{"id": "task-9", "worker_pid": 4242}]})
    silent_for_an_hour(run, remote)
    assert reap_stale_runs()["requeued"] == [run.pk]
    assert "celery@w1 answered but no longer runs it" in Run.objects.get(pk=run.pk).error


def test_an_unreachable_broker_leaves_the_run_for_the_next_pass(run, remote, answers):
    answers(ConnectionRefusedError("broker down"))
    silent_for_an_hour(run, remote)
    assert reap_stale_runs() == {"requeued": [], "failed": []}
    assert Run.objects.get(pk=run.pk).status == "running"


def test_each_worker_is_asked_once_per_pass(
    aws_policy, aws_trace, remote, answers, django_capture_on_commit_callbacks
):
    answers({})
    with django_capture_on_commit_callbacks(execute=False):
        study = launch_study(
            StudyLaunch(name="s", trace=aws_trace, policies=[aws_policy, aws_policy.duplicate("b")])
        )
    for run in study.runs.all():
        silent_for_an_hour(run, remote)
    with django_capture_on_commit_callbacks(execute=False):
        assert len(reap_stale_runs()["requeued"]) == 2
    assert len(Inspect.calls) == 1


def test_the_current_process_is_recorded_as_alive():
    mine = WorkerProcess.current(node="celery@here", task="t")
    assert mine.pid == os.getpid() and mine.is_local()
    assert Liveness().judge(mine.record()).alive is True
    assert liveness.start_time(mine.pid) == mine.started


@pytest.mark.parametrize("record", [None, {}, {"pid": "x", "host": "h"}, "text", 7])
def test_no_usable_record_gives_no_process(record):
    assert WorkerProcess.from_record(record) is None
