"""Issue 25, item 1, with real workers on the filesystem broker (heartbeat 0.5 s, stale after 4 s):

- under the compiled engine (which never lets the heartbeat thread take the GIL) a long replay is
  never taken for dead: the reaper, called every half second throughout, requeues nothing, and the
  run ends on its first attempt (before: reaped beside its own second attempt);
- deleting a study while its replay computes stops the replay at its next beat: the worker is free
  for the next study within seconds, not after the minutes the deleted replay had left.
"""

from __future__ import annotations

import time

import pytest

from planner.studies.models import Run, Study
from planner.studies.reaper import reap_stale_runs
from scheduling.compiled import stale_reason
from tests.service.test_workers import LONG_REPLAY_JOBS, STALE, all_finished, synthetic_study, wait_for

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True), pytest.mark.timeout(480)]


# A compiled replay that outlasts the stale limit on a quiet machine (500,000 jobs took 3.5 s of
# the limit's 4 once: the test asserts that the replay did outlast it, so that it tests something).
OUTLASTING_JOBS = 1_500_000

COMPILED = pytest.mark.skipif(
    stale_reason() is not None, reason="needs a fresh compiled build (python -m scheduling.build)"
)


@COMPILED
def test_a_compiled_replay_longer_than_the_stale_limit_is_never_reaped(start_worker, settings, monkeypatch):
    settings.PLANNER_HEARTBEAT_STALE_SECONDS = STALE
    monkeypatch.setenv("SCHEDULING_ENGINE", "compiled")
    start_worker("compiled")
    study = synthetic_study(jobs=OUTLASTING_JOBS, variants=1)
    run = study.runs.get()
    wait_for(lambda: Run.objects.filter(pk=run.pk, status="running").exists(), 60, "the replay to start")
    started = time.monotonic()
    reaped = []
    while not Run.objects.get(pk=run.pk).finished:
        reaped += reap_stale_runs(Run.objects.filter(pk=run.pk))["requeued"]
        time.sleep(0.5)
        assert time.monotonic() - started < 400, "the run did not finish"
    run.refresh_from_db()
    assert reaped == []
    assert (run.status, run.attempts) == ("succeeded", 1), run.error
    assert time.monotonic() - started > STALE  # it did outlast the stale limit


def test_deleting_a_study_frees_its_worker_within_seconds(start_worker):
    """(The unit test of this, tests/service/test_liveness.py, is the one that fails on the old code:
    with the engine's new callback every 256 steps, even the old thread got the GIL now and then.)"""
    worker = start_worker("solo")  # one task at a time
    doomed = synthetic_study(jobs=LONG_REPLAY_JOBS, variants=1)
    wait_for(
        lambda: Run.objects.filter(study=doomed, status="running", progress__gt=0).exists(), 120, "progress"
    )
    Study.objects.filter(pk=doomed.pk).delete()  # what DELETE /api/studies/N/ does
    deleted = time.monotonic()
    wait_for(lambda: "'superseded'" in worker.log.read_text(errors="replace"), 30, "the replay to stop")
    assert time.monotonic() - deleted < 10
    # The worker takes the next study at once: it was not still replaying the deleted one.
    after = synthetic_study(jobs=500, variants=1)
    wait_for(lambda: all_finished(after), 60, "the next study")
    assert after.runs.get().status == "succeeded"
