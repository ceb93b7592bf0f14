"""The progress callback of ``engine.replay``: the planner's workers beat their heartbeat from it
(the compiled loop never lets another thread run), so it must come throughout the replay, not
only while jobs are being submitted; and an exception it raises stops the replay."""

from __future__ import annotations

import pytest
from conftest import make_trace

from scheduling.model import Policy
from scheduling.replay.engine import PROGRESS_TICK_STEPS, replay

POLICY = Policy.from_dict({"capacity": {"gpu": 1}, "shares": [{"name": "A", "capacity": {"gpu": 1}}]})


def queue_of(jobs: int):
    """``jobs`` jobs all submitted at t=0 on one instance: one loop step submits them all, then
    each of the ``jobs`` finishes is a step of its own (durations 1, 2, 3...)."""
    return make_trace(
        [{"job_id": f"j{i}", "submit_time": 0, "share": "A", "duration": i + 1} for i in range(jobs)]
    )


def test_progress_keeps_coming_after_the_last_submission():
    calls: list[float] = []
    jobs = 4 * PROGRESS_TICK_STEPS
    replay(POLICY, queue_of(jobs), progress=calls.append)
    # Step 1 submits all 1,024 jobs (a call: every hundredth is passed at once); the 1,024 finishes
    # that follow are steps 2 to 1,025: a call at steps 256, 512, 768 and 1,024 (every 256 steps).
    assert calls == [1.0] * 5


def test_an_exception_from_the_callback_stops_the_replay():
    class Stop(Exception):
        pass

    calls: list[float] = []

    def stop_on_the_second_call(fraction: float) -> None:
        calls.append(fraction)
        if len(calls) == 2:
            raise Stop()

    with pytest.raises(Stop):
        replay(POLICY, queue_of(4 * PROGRESS_TICK_STEPS), progress=stop_on_the_second_call)
    assert len(calls) == 2
