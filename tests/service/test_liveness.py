"""Issue 25, item 1: a live run is never taken for dead, every phase of a task beats, and deleting a
study or a trace stops its work.

The compiled replay holds the GIL for minutes: the heartbeat thread never ran, and a live run was
reaped beside its own second attempt. ``starved`` reproduces that in pure Python: with a switch
interval of a minute, the thread running the replay keeps the GIL while it computes, so a beat can
only come from that thread itself (through the engine's progress callback)."""

from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

import pytest

from planner.studies import attempts, tasks
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run
from planner.studies.tasks import replay_run
from planner.traces.models import ParseStatus, Trace

# transaction=True: the heartbeat thread writes through its own connection, which a test wrapped in
# one transaction would keep waiting on a lock.
pytestmark = pytest.mark.django_db(transaction=True)


@contextmanager
def starved():
    """No other thread gets the GIL while this one computes (as inside the compiled engine)."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


@pytest.fixture
def beats(monkeypatch) -> list[tuple[float, str]]:
    """Every heartbeat written: (monotonic time, the thread that wrote it)."""
    written: list[tuple[float, str]] = []
    real_beat = attempts.Heartbeat.beat

    def beat(self) -> None:
        written.append((time.monotonic(), threading.current_thread().name))
        real_beat(self)

    monkeypatch.setattr(attempts.Heartbeat, "beat", beat)
    return written


@pytest.fixture
def run(aws_policy, aws_trace, django_capture_on_commit_callbacks, settings) -> Run:
    settings.PLANNER_HEARTBEAT_SECONDS = 0.05
    with django_capture_on_commit_callbacks(execute=False):
        study = launch_study(StudyLaunch(name="s", trace=aws_trace, policies=[aws_policy]))
    return study.runs.get()


def busy_replay(seconds: float, then=None, on_step=None):
    """A replay that computes for ``seconds`` without letting go of the GIL, calling the progress
    callback as the engine does, then replays for real (``then``)."""

    def replay(policy, trace, progress=None, **kwargs):
        start = time.monotonic()
        step = 0
        with starved():
            while time.monotonic() - start < seconds:
                step += 1
                if on_step is not None:
                    on_step(step)
                if step % 1000 == 0:
                    progress(0.5)
        return then(policy, trace, progress=progress, **kwargs)

    return replay


def test_a_run_beats_while_its_replay_keeps_the_gil(run, beats, monkeypatch):
    monkeypatch.setattr(tasks, "replay", busy_replay(0.6, then=tasks.replay))
    start = time.monotonic()
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    during = [at for at, _ in beats if start + 0.1 < at < start + 0.6]
    # One beat due every 0.05 s: written by the computing thread itself, from the callback.
    assert len(during) >= 5, beats


@pytest.mark.parametrize("phase", ["write_outcomes", "with_capacity_steps"])
def test_every_phase_of_a_run_beats(run, beats, monkeypatch, phase):
    real = getattr(tasks, phase)
    window = {}

    def slow(*args, **kwargs):
        window["start"] = time.monotonic()
        time.sleep(0.4)  # a long write, or the steps of a long calendar
        window["end"] = time.monotonic()
        return real(*args, **kwargs)

    monkeypatch.setattr(tasks, phase, slow)
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    during = [at for at, _ in beats if window["start"] < at < window["end"]]
    assert len(during) >= 3, (phase, beats)


def test_loading_the_trace_beats(run, beats, monkeypatch):
    real = Trace.load_jobs
    window = {}

    def slow(self):
        window["start"] = time.monotonic()
        time.sleep(0.4)
        window["end"] = time.monotonic()
        return real(self)

    monkeypatch.setattr(Trace, "load_jobs", slow)
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    assert len([at for at, _ in beats if window["start"] < at < window["end"]]) >= 3, beats


def test_deleting_the_study_stops_its_replay(run, monkeypatch, media_root):
    reached = {"end": False, "steps_after": 0}
    deleted_at = {}

    def on_step(step):
        if step == 2000:
            run.study.delete()  # as DELETE /api/studies/N/ does, while the replay computes
            deleted_at["step"] = step
        elif "step" in deleted_at:
            reached["steps_after"] = step - deleted_at["step"]

    def never(*args, **kwargs):
        reached["end"] = True
        raise AssertionError("the replay went on to its end")

    monkeypatch.setattr(tasks, "replay", busy_replay(5.0, then=never, on_step=on_step))
    start = time.monotonic()
    assert replay_run.apply(args=[run.pk]).get() == "superseded"
    assert not reached["end"]
    assert time.monotonic() - start < 4.0  # stopped at a beat, not after the 5 s of computing
    assert not Run.objects.filter(pk=run.pk).exists()
    assert not (media_root / "runs").exists() or not list((media_root / "runs").iterdir())


def test_a_run_superseded_by_the_reaper_stops_at_its_next_beat(run, monkeypatch):
    """Another attempt took the run over (this one was presumed dead): it stops computing."""

    def on_step(step):
        if step == 2000:
            Run.objects.filter(pk=run.pk).update(attempts=2)  # attempt 2 claimed it

    def never(*args, **kwargs):
        raise AssertionError("the superseded attempt went on to its end")

    monkeypatch.setattr(tasks, "replay", busy_replay(5.0, then=never, on_step=on_step))
    assert replay_run.apply(args=[run.pk]).get() == "superseded"


def test_deleting_a_trace_stops_its_parse(settings, monkeypatch, media_root):
    from django.core.files.uploadedfile import SimpleUploadedFile

    import planner.traces.tasks as trace_tasks
    from planner.traces.receive import receive_upload

    settings.PLANNER_HEARTBEAT_SECONDS = 0  # a beat at every read: the deletion is seen at once
    rows = b"".join(b"j%d,%d,QS1,100\n" % (i, i) for i in range(200_000))
    content = b"job_id,submit_time,share,duration\n" + rows
    real_read = trace_tasks.read_upload
    saved = []

    def delete_then_read(stream, **kwargs):
        Trace.objects.filter(status=ParseStatus.RUNNING).delete()  # DELETE /api/traces/N/
        with starved():
            return real_read(stream, **kwargs)

    monkeypatch.setattr(trace_tasks, "read_upload", delete_then_read)
    monkeypatch.setattr(trace_tasks, "save_columns", lambda columns: saved.append(columns) or "x")
    trace = receive_upload(SimpleUploadedFile("big.csv", content), name="big")
    outcome = trace_tasks.parse_trace.apply(args=[trace.pk]).get()
    assert outcome == "superseded"
    assert saved == []  # the reader stopped: nothing parsed to the end, nothing stored
    assert not Trace.objects.filter(pk=trace.pk).exists()


@pytest.mark.parametrize("phase", ["save_columns", "trace_summary"])
def test_every_phase_of_a_parse_beats(settings, monkeypatch, phase):
    from django.core.files.uploadedfile import SimpleUploadedFile

    import planner.traces.tasks as trace_tasks
    from planner.traces.receive import receive_upload

    settings.PLANNER_HEARTBEAT_SECONDS = 0.05
    beats: list[float] = []
    real_beat = trace_tasks.ReadProgress.beat
    monkeypatch.setattr(
        trace_tasks.ReadProgress, "beat", lambda self: beats.append(time.monotonic()) or real_beat(self)
    )
    real = getattr(trace_tasks, phase)
    window = {}

    def slow(*args, **kwargs):
        window["start"] = time.monotonic()
        time.sleep(1.0)  # storing or summing up millions of jobs (a second: on a loaded machine the
        # heartbeat thread beat every 0.2 s rather than every 0.05 s, two beats in 0.4 s)
        window["end"] = time.monotonic()
        return real(*args, **kwargs)

    monkeypatch.setattr(trace_tasks, phase, slow)
    content = b"job_id,submit_time,share,duration\nj1,0,QS1,100\n"
    trace = receive_upload(SimpleUploadedFile("t.csv", content), name="t")
    assert trace_tasks.parse_trace.apply(args=[trace.pk]).get() == "succeeded"
    assert len([at for at in beats if window["start"] < at < window["end"]]) >= 3, (phase, beats)


def test_a_database_blip_costs_a_beat_not_the_replay(run, monkeypatch):
    """A beat from the callback that cannot be written does not end the replay (as the thread's
    never did): the run still succeeds on its first attempt."""
    from django.db import OperationalError

    real_beat = attempts.Heartbeat.beat
    failures = []

    def flaky_beat(self):
        if not failures:
            failures.append(1)
            raise OperationalError("server closed the connection unexpectedly")
        real_beat(self)

    monkeypatch.setattr(attempts.Heartbeat, "beat", flaky_beat)
    monkeypatch.setattr(tasks, "replay", busy_replay(0.3, then=tasks.replay))
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    run.refresh_from_db()
    assert (run.status, run.attempts, failures) == ("succeeded", 1, [1])
