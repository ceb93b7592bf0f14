"""Shared pieces of the replay tests: traces built straight into columns, and runners.

``run`` replays a scenario with the reference model and with the engine (each test runs twice);
``engine_run`` uses only the engine, for the metrics the reference does not compute.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from reference import reference_replay

from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES, PriorityUpdates, Trace

JOB_FIELDS = (
    "job_id",
    "share",
    "instance_type",
    "state",
    "first_start",
    "end",
    "wait",
    "queued",
    "preemptions",
    "lost_seconds",
    "reason",
)

JOB_ROW = ("state", "first_start", "end", "wait", "queued", "preemptions", "lost_seconds", "reason")


def make_trace(jobs: list[dict], updates: Iterable[dict] = ()) -> Trace:
    """A trace from job dicts with the CSV column names (job_id, submit_time, share, duration and optional
    priority, instance_type, instance_count, checkpoint_interval, preemption_retries) and priority updates
    ({time, job_id, priority})."""
    share_names: list[str] = []
    type_names: list[str] = []
    for job in jobs:
        if job["share"] not in share_names:
            share_names.append(job["share"])
        if job.get("instance_type") is not None and job["instance_type"] not in type_names:
            type_names.append(job["instance_type"])
    updates = list(updates)
    checkpoint = [job.get("checkpoint_interval") for job in jobs]
    retries = [job.get("preemption_retries") for job in jobs]
    return Trace(
        job_id=[str(job["job_id"]) for job in jobs],
        submit_time=np.array([job["submit_time"] for job in jobs], dtype=np.float64),
        share=np.array([share_names.index(job["share"]) for job in jobs], dtype=np.int32),
        share_names=share_names,
        priority=np.array([job.get("priority", 0) for job in jobs], dtype=np.int32),
        instance_type=np.array([_type_code(job, type_names) for job in jobs], dtype=np.int32),
        type_names=type_names,
        instance_count=np.array([job.get("instance_count", 1) for job in jobs], dtype=np.int32),
        duration=np.array([job["duration"] for job in jobs], dtype=np.float64),
        checkpoint_interval=np.array([math.nan if c is None else c for c in checkpoint], dtype=np.float64),
        preemption_retries=np.array([UNLIMITED_RETRIES if r is None else r for r in retries], dtype=np.int32),
        updates=PriorityUpdates(
            np.array([u["time"] for u in updates], dtype=np.float64),
            [str(u["job_id"]) for u in updates],
            np.array([u["priority"] for u in updates], dtype=np.int32),
        ),
    )


def _type_code(job: dict, type_names: list[str]) -> int:
    return NO_TYPE if job.get("instance_type") is None else type_names.index(job["instance_type"])


def table(text: str) -> list[dict]:
    """Rows of a whitespace-separated table with a header line; ``-`` leaves a column out of that row.
    Numbers become numbers, except job ids, which stay strings."""
    lines = [line.split() for line in text.strip().splitlines() if line.strip()]
    header, rows = lines[0], lines[1:]
    out = []
    for row in rows:
        assert len(row) == len(header), f"row {row} does not match header {header}"
        record: dict[str, Any] = {}
        for key, cell in zip(header, row, strict=True):
            if cell == "-":
                continue
            record[key] = cell if key in ("job_id", "share", "instance_type") else _number(cell)
        out.append(record)
    return out


def _number(cell: str) -> float | int:
    value = float(cell)
    return int(value) if value.is_integer() else value


def _scenario(jobs: list[dict] | str, updates: Iterable[dict] | str) -> Trace:
    jobs = table(jobs) if isinstance(jobs, str) else jobs
    updates = table(updates) if isinstance(updates, str) else updates
    return make_trace(jobs, updates)


@dataclass
class Outcome:
    """A replay's jobs and events, in forms that compare well with hand-written expectations."""

    raw: dict[str, Any]

    @property
    def ignored_priority_updates(self) -> int:
        if "summary" in self.raw:
            return self.raw["summary"]["ignored_priority_updates"]
        return self.raw["ignored_priority_updates"]

    @property
    def preemption_loops(self) -> dict[str, Any]:
        """Section 8's loop findings: RESULT.json's summary.preemption_loops (the reference returns it
        beside its jobs)."""
        if "summary" in self.raw:
            return self.raw["summary"]["preemption_loops"]
        return self.raw["preemption_loops"]

    @property
    def events(self) -> list[tuple]:
        """(time, job_id, event, cause, by) in the order they happened."""
        return [(e["time"], e["job_id"], e["event"], e["cause"], e["by"]) for e in self.raw["events"]]

    def job(self, job_id: str) -> dict[str, Any]:
        for job in self.raw["jobs"]:
            if job["job_id"] == job_id:
                return {key: job[key] for key in JOB_FIELDS if key != "job_id"}
        raise KeyError(job_id)

    def at(self, time: float) -> list[tuple]:
        """The events at one instant, in order."""
        return [e for e in self.events if e[0] == time]

    def preempts(self) -> list[tuple]:
        return [e for e in self.events if e[2] == "preempt"]

    def row(self, job_id: str) -> tuple:
        """(state, first_start, end, wait, queued, preemptions, lost_seconds, reason) of one job."""
        job = self.job(job_id)
        return tuple(job[key] for key in JOB_ROW)

    def starts(self) -> list[tuple]:
        return [(e[0], e[1]) for e in self.events if e[2] == "start"]


def engine_result(policy: Policy, trace: Trace) -> dict[str, Any]:
    from scheduling.replay.engine import replay

    return replay(policy, trace, record_events=True).to_dict(include_jobs=True, include_events=True)


def demo_replay(n_jobs: int, seed: int, queueing: str) -> tuple[Policy, Trace, Any, dict[str, Any]]:
    """A synthetic trace replayed on the demo policy with its queueing set: (policy, trace, result, the
    result's dict with jobs), for checks that every job's or share's waits add up over many jobs."""
    from scheduling.replay.engine import replay
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    trace = generate(n_jobs, seed=seed)
    policy = Policy.from_dict({**demo_policy_dict(demo_pool_gpus(trace)), "queueing": queueing})
    result = replay(policy, trace)
    return policy, trace, result, result.to_dict(include_jobs=True, include_events=False)


def refusal(read: Callable[..., Any], *args: Any, **options: Any) -> InputError:
    """The InputError that ``read(*args, **options)`` raises, for the importers' tests to check its field
    and reason; the test fails if it raises none."""
    with pytest.raises(InputError) as caught:
        read(*args, **options)
    return caught.value


RUNNERS: dict[str, Callable[[Policy, Trace], dict[str, Any]]] = {
    "reference": reference_replay,
    "engine": engine_result,
}


@pytest.fixture(scope="session")
def build_trace() -> Callable[..., Trace]:
    """``make_trace`` for tests that cannot import this module (hypothesis tests take session fixtures)."""
    return make_trace


@pytest.fixture(scope="session")
def replay_engine() -> Callable[[Policy, Trace], dict[str, Any]]:
    """The engine's RESULT.json dict (with jobs and events) for a policy and a trace."""
    return engine_result


@pytest.fixture(params=sorted(RUNNERS))
def run(request) -> Callable[..., Outcome]:
    """run(policy_dict, jobs, updates=()) with the reference model, then with the engine; jobs and
    updates are lists of dicts or ``table`` text."""
    runner = RUNNERS[request.param]

    def replay_scenario(policy: dict, jobs: list[dict] | str, updates: Iterable[dict] | str = ()) -> Outcome:
        return Outcome(runner(Policy.from_dict(policy), _scenario(jobs, updates)))

    return replay_scenario


@pytest.fixture
def engine_run() -> Callable[..., Outcome]:
    """run(policy_dict, jobs, updates=()) with the engine only: for metrics."""

    def replay_scenario(policy: dict, jobs: list[dict] | str, updates: Iterable[dict] | str = ()) -> Outcome:
        return Outcome(engine_result(Policy.from_dict(policy), _scenario(jobs, updates)))

    return replay_scenario
