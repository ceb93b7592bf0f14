"""Random small policies and traces: the engine agrees with the reference model job by job and event by
event, and the invariants of SEMANTICS.md section 3, rebuilt from the events, hold at every instant."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import reference_replay

from scheduling.engine import replay
from scheduling.model import Policy, Strategy

TYPES = ("x", "y")
STRATEGIES = ("RESERVE", "LEND", "LEND_AND_BORROW")
IN_SHARE = ("never", "lower_priority", "lower_or_newer_equal_priority")
COMPARED = ("job_id", "share", "state", "first_start", "end", "wait", "queued", "preemptions", "lost_seconds",
            "reason")


@st.composite
def policies(draw) -> dict[str, Any]:
    types = TYPES[: draw(st.integers(1, 2))]
    n_shares = draw(st.integers(2, 4))
    shares = []
    for i in range(n_shares):
        strategy = draw(st.sampled_from(STRATEGIES + ("LEND", "LEND_AND_BORROW", "LEND_AND_BORROW")))
        share: dict[str, Any] = {
            "name": f"S{i}",
            "capacity": {t: draw(st.sampled_from([0, 1, 1, 2, 2, 3])) for t in types},
            "strategy": strategy,
            "in_share_preemption": draw(st.sampled_from(IN_SHARE)),
            "reclaim": draw(st.sampled_from(["any", "any", "lower_priority", "never"])),
        }
        if strategy == "LEND_AND_BORROW":
            limit = draw(st.sampled_from(["none", "percent", "absolute"]))
            if limit == "percent":
                share["borrow_limit_percent"] = draw(st.sampled_from([-1, 0, 50, 100, 150, 200]))
            elif limit == "absolute":
                share["borrowing_limit"] = draw(st.integers(0, 3))
        if strategy != "RESERVE" and draw(st.booleans()):
            share["lending_limit"] = draw(st.integers(0, 2))
        shares.append(share)
    capacity = {t: max(1, sum(s["capacity"][t] for s in shares) + draw(st.integers(0, 2))) for t in types}
    return {
        "instance_types": {t: {"gpus": 1 + k, "hourly_price": 1.0} for k, t in enumerate(types)},
        "capacity": capacity,
        "shares": shares,
        "queueing": draw(st.sampled_from(["best_effort_fifo", "strict_fifo"])),
        "startup_seconds": draw(st.sampled_from([0, 0, 5, 10])),
    }


@st.composite
def scenarios(draw) -> tuple[dict, list[dict], list[dict]]:
    policy = draw(policies())
    types = list(policy["capacity"])
    share_names = [s["name"] for s in policy["shares"]]
    n = draw(st.integers(1, 25) | st.integers(12, 25))
    if draw(st.booleans()):
        ids = [str(i) for i in draw(st.lists(st.integers(0, 200), min_size=n, max_size=n, unique=True))]
    else:
        ids = [f"j{i}" for i in range(n)]
    jobs = []
    for job_id in ids:
        job: dict[str, Any] = {
            "job_id": job_id,
            "submit_time": draw(st.integers(0, 40) | st.integers(0, 80).map(lambda half: half / 2)),
            "share": draw(st.sampled_from(share_names)),
            "duration": draw(st.integers(1, 90) | st.just(0) | st.integers(1, 60).map(lambda half: half / 2)),
            "priority": draw(st.integers(0, 3)),
            "instance_count": draw(st.sampled_from([1, 1, 1, 1, 1, 1, 2, 2, 3, 4])),
        }
        if len(types) > 1 or draw(st.booleans()):
            job["instance_type"] = draw(st.sampled_from(types))
        if draw(st.booleans()):
            job["checkpoint_interval"] = draw(st.integers(3, 20))
        if draw(st.booleans()):
            job["preemption_retries"] = draw(st.integers(0, 2))
        jobs.append(job)
    updates = [
        {"time": draw(st.integers(0, 120)), "job_id": draw(st.sampled_from([*ids, "ghost"])),
         "priority": draw(st.integers(0, 4))}
        for _ in range(draw(st.integers(0, 5)))
    ]
    return policy, jobs, updates


def comparable_events(events: list[dict]) -> list[tuple]:
    """Events as tuples; finishes (and unschedulable submissions) at one instant happen together, so
    their order among themselves is not part of the semantics: sort each such run by job_id."""
    out: list[tuple] = []
    run: list[tuple] = []
    for e in events:
        item = (e["time"], e["job_id"], e["event"], e["cause"], e["by"])
        if run and (item[0] != run[0][0] or item[2] != run[0][2]):
            out += sorted(run, key=lambda x: x[1]) if run[0][2] in ("finish", "unschedulable") else run
            run = []
        run.append(item)
    out += sorted(run, key=lambda x: x[1]) if run and run[0][2] in ("finish", "unschedulable") else run
    return out


def comparable_jobs(jobs: list[dict]) -> list[dict]:
    return [{key: job[key] for key in COMPARED} for job in jobs]


PROPERTY_SETTINGS = settings(
    max_examples=int(os.environ.get("PROPERTY_EXAMPLES", "200")),  # more for a long hunt
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@PROPERTY_SETTINGS
@given(scenario=scenarios())
def test_engine_matches_reference(build_trace, replay_engine, scenario):
    policy_dict, jobs, updates = scenario
    policy, trace = Policy.from_dict(policy_dict), build_trace(jobs, updates)
    expected = reference_replay(policy, trace)
    actual = replay_engine(policy, trace)
    assert comparable_events(actual["events"]) == comparable_events(expected["events"])
    assert comparable_jobs(actual["jobs"]) == comparable_jobs(expected["jobs"])
    assert actual["summary"]["ignored_priority_updates"] == expected["ignored_priority_updates"]
    quiet = replay(policy, trace).to_dict(include_jobs=True, include_events=False)
    assert comparable_jobs(quiet["jobs"]) == comparable_jobs(actual["jobs"])  # events change nothing


# -- invariants rebuilt from the events -----------------------------------------------------------------


class Timeline:
    """Replays an event list and checks section 3 after every event and at the end of every instant."""

    def __init__(self, policy: Policy, jobs: list[dict]):
        self.policy = policy
        self.shares = {s.name: s for s in policy.shares}
        single = next(iter(policy.capacity))
        self.jobs = {
            str(j["job_id"]): {**j, "instance_type": j.get("instance_type", single)} for j in jobs
        }
        self.holding: dict[str, float] = {}  # job_id -> start time of its current run
        self.started_at_all: set[str] = set()
        self.unschedulable: set[str] = set()
        self.ended: set[str] = set()

    def usage(self, share: str, t: str) -> int:
        return sum(self.jobs[j]["instance_count"] for j in self.holding
                   if self.jobs[j]["share"] == share and self.jobs[j]["instance_type"] == t)

    def check_capacity(self) -> None:
        for t, capacity in self.policy.capacity.items():
            used = sum(self.usage(name, t) for name in self.shares)
            assert used <= capacity, f"pool over capacity of {t}: {used} > {capacity}"
            borrowed = 0
            lendable = self.policy.unassigned(t)
            for name, share in self.shares.items():
                u, q = self.usage(name, t), share.quota(t)
                assert u <= q + share.borrow_limit(t), f"{name} holds {u} of {t}: above quota + borrow limit"
                borrowed += max(0, u - q)
                if share.strategy is not Strategy.RESERVE:
                    lendable += min(share.lend_limit(t), max(0, q - u))
            assert borrowed <= lendable, f"borrowing invariant broken for {t}: {borrowed} > {lendable}"

    def check_reserve_jobs_not_waiting(self, now: float) -> None:
        """A RESERVE share's idle quota is never used by others, so at the end of an instant none of its
        jobs that fit in that idle quota waits (strict_fifo: unless its head does not fit)."""
        strict = self.policy.queueing.value == "strict_fifo"
        for name, share in self.shares.items():
            if share.strategy is not Strategy.RESERVE:
                continue
            waiting = [
                j for j, job in self.jobs.items()
                if job["share"] == name and job["submit_time"] <= now
                and j not in self.holding and j not in self.ended and j not in self.unschedulable
            ]
            fitting = [
                j for j in waiting
                if self.usage(name, self.jobs[j]["instance_type"]) + self.jobs[j]["instance_count"]
                <= share.quota(self.jobs[j]["instance_type"])
            ]
            if strict and fitting != waiting:
                continue  # the head may be one that does not fit: the share is blocked behind it
            assert not fitting, f"RESERVE share {name}: {fitting} wait at {now} although its quota has room"

    def replay(self, events: list[dict], updates: list[dict]) -> None:
        by_time: dict[float, list[dict]] = defaultdict(list)
        for e in events:
            by_time[e["time"]].append(e)
        submits = {j["submit_time"] for j in self.jobs.values()}
        for now in sorted(set(by_time) | {u["time"] for u in updates} | submits):
            for e in by_time[now]:
                self.apply(e)
                self.check_capacity()
            self.check_reserve_jobs_not_waiting(now)

    @staticmethod
    def _ends_at(job_id: str, now: float, events: list[dict]) -> bool:
        return any(e["job_id"] == job_id and e["event"] in ("finish", "unschedulable") for e in events)

    def apply(self, e: dict) -> None:
        j, kind = e["job_id"], e["event"]
        job = self.jobs[j]
        if kind == "start":
            assert j not in self.holding and j not in self.ended, f"{j} started twice"
            assert e["time"] >= job["submit_time"], f"{j} started at {e['time']} before its submit time"
            self.holding[j] = e["time"]
            self.started_at_all.add(j)
        elif kind in ("preempt", "finish"):
            assert j in self.holding, f"{j}: {kind} while not holding capacity"
            del self.holding[j]
            if kind == "finish":
                self.ended.add(j)
            else:
                assert e["by"] in self.jobs and e["cause"] == (
                    "in_share" if self.jobs[e["by"]]["share"] == job["share"] else "cross_share")
                if e["cause"] == "cross_share":
                    victim_share = self.shares[job["share"]]
                    assert victim_share.strategy is Strategy.LEND_AND_BORROW, f"{j} reclaimed, cannot borrow"
        elif kind == "fail":
            assert j not in self.holding
            self.ended.add(j)
        elif kind == "unschedulable":
            assert e["time"] == job["submit_time"]
            self.unschedulable.add(j)


def check_job_records(policy: Policy, jobs: list[dict], out: dict) -> None:
    """Every job ends in a final state consistent with its events; a SUCCEEDED job's progress minus its
    lost work equals its duration."""
    startup = policy.startup_seconds
    events_of: dict[str, list[dict]] = defaultdict(list)
    for e in out["events"]:
        events_of[e["job_id"]].append(e)
    submit = {str(j["job_id"]): j["submit_time"] for j in jobs}
    duration = {str(j["job_id"]): j["duration"] for j in jobs}
    for record in out["jobs"]:
        j = record["job_id"]
        evs = events_of[j]
        assert record["state"] in ("SUCCEEDED", "FAILED", "UNSCHEDULABLE"), f"{j} ended {record['state']}"
        assert record["preemptions"] == sum(e["event"] == "preempt" for e in evs)
        if record["state"] == "UNSCHEDULABLE":
            assert [e["event"] for e in evs] == ["unschedulable"] and record["reason"] is not None
            continue
        assert evs[-1]["event"] == ("finish" if record["state"] == "SUCCEEDED" else "fail")
        assert record["end"] == evs[-1]["time"]
        starts = [e["time"] for e in evs if e["event"] == "start"]
        stops = [e["time"] for e in evs if e["event"] in ("preempt", "finish")]
        assert record["first_start"] == starts[0] and record["wait"] == starts[0] - submit[j]
        assert record["queued"] == pytest.approx(
            starts[0] - submit[j] + sum(b - a for a, b in zip(stops[:-1], starts[1:], strict=True)))
        progress = sum(max(0.0, b - a - startup) for a, b in zip(starts, stops, strict=True))
        if record["state"] == "SUCCEEDED":
            assert progress - record["lost_seconds"] == pytest.approx(duration[j]), f"{j}: work adds up wrong"
        else:
            assert progress <= duration[j] + record["lost_seconds"] + 1e-9


@PROPERTY_SETTINGS
@given(scenario=scenarios())
def test_invariants_hold_at_every_instant(build_trace, replay_engine, scenario):
    policy_dict, jobs, updates = scenario
    policy, trace = Policy.from_dict(policy_dict), build_trace(jobs, updates)
    out = replay_engine(policy, trace)
    timeline = Timeline(policy, jobs)
    timeline.replay(out["events"], updates)
    check_job_records(policy, jobs, out)
    assert not timeline.holding, "jobs still holding capacity after the last event"
    assert math.isfinite(out["summary"]["utilization"])


# -- metrics agree with the events -------------------------------------------------------------------


def runs_of(out: dict) -> list[tuple[str, float, float, bool]]:
    """(job_id, start, stop, preempted) of every run, from the events."""
    open_runs: dict[str, float] = {}
    runs = []
    for e in out["events"]:
        if e["event"] == "start":
            open_runs[e["job_id"]] = e["time"]
        elif e["event"] in ("preempt", "finish"):
            runs.append((e["job_id"], open_runs.pop(e["job_id"]), e["time"], e["event"] == "preempt"))
    return runs


def share_usage_integrals(policy: Policy, jobs: dict, runs: list, end: float) -> dict:
    """{(share, type): (own, borrowed)} instance-seconds, integrating usage between run boundaries."""
    instants = sorted({t for _, a, b, _ in runs for t in (a, b)} | {end})
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for left, right in zip(instants[:-1], instants[1:], strict=True):
        usage: dict[tuple[str, str], int] = defaultdict(int)
        for j, a, b, _ in runs:
            if a <= left and right <= b:
                usage[(jobs[j]["share"], jobs[j]["instance_type"])] += jobs[j]["instance_count"]
        for share in policy.shares:
            for t in policy.capacity:
                u, q = usage[(share.name, t)], share.quota(t)
                out[(share.name, t)][0] += min(u, q) * (right - left)
                out[(share.name, t)][1] += max(0, u - q) * (right - left)
    return out


@PROPERTY_SETTINGS
@given(scenario=scenarios())
def test_metrics_agree_with_the_events(build_trace, replay_engine, scenario):
    policy_dict, job_list, updates = scenario
    policy, trace = Policy.from_dict(policy_dict), build_trace(job_list, updates)
    out = replay_engine(policy, trace)
    single = next(iter(policy.capacity))
    jobs = {str(j["job_id"]): {**j, "instance_type": j.get("instance_type", single)} for j in job_list}
    records = {r["job_id"]: r for r in out["jobs"]}
    ends = [r["end"] for r in out["jobs"] if r["end"] is not None]
    summary = out["summary"]
    states = [r["state"] for r in out["jobs"]]
    assert (summary["succeeded"], summary["failed"], summary["unschedulable"], summary["cancelled"]) == (
        states.count("SUCCEEDED"), states.count("FAILED"), states.count("UNSCHEDULABLE"),
        states.count("CANCELLED"))
    causes = [e["cause"] for e in out["events"] if e["event"] == "preempt"]
    assert summary["preemptions"] == {
        cause: causes.count(cause) for cause in ("cross_share", "in_share", "fair_sharing", "capacity")}
    if not ends:
        return
    start, end = min(j["submit_time"] for j in job_list), max(ends)
    assert (summary["horizon"]["start"], summary["horizon"]["end"]) == pytest.approx((start, end))
    horizon = end - start

    runs = runs_of(out)
    gpus = {name: t.gpus for name, t in policy.instance_types.items()}
    count = {j: job["instance_count"] for j, job in jobs.items()}
    weight = {j: count[j] * gpus[job["instance_type"]] for j, job in jobs.items()}
    startup = policy.startup_seconds
    busy = sum((b - a) * weight[j] for j, a, b, _ in runs)
    spent = sum(min(b - a, startup) * weight[j] for j, a, b, _ in runs)
    lost = sum(records[j]["lost_seconds"] * weight[j] for j in jobs)
    capacity = sum(n * gpus[t] for t, n in policy.capacity.items()) * horizon
    if horizon > 0:
        assert summary["utilization"] == pytest.approx(busy / capacity)
        assert summary["useful_utilization"] == pytest.approx((busy - spent - lost) / capacity)
    lost_instance_seconds = sum(records[j]["lost_seconds"] * count[j] for j in jobs)
    all_startup = sum(min(b - a, startup) * count[j] for j, a, b, _ in runs)
    rerun_startup = sum(min(b - a, startup) * count[j] for j, a, b, preempted in runs if preempted)
    assert summary["lost_instance_seconds"] == pytest.approx(lost_instance_seconds)
    assert summary["startup_instance_seconds"] == pytest.approx(all_startup)
    assert summary["rerun_instance_seconds"] == pytest.approx(lost_instance_seconds + rerun_startup)

    integrals = share_usage_integrals(policy, jobs, runs, end)
    borrowed_gpu_seconds = lent_gpu_seconds = 0.0
    for share in out["shares"]:
        model = next(s for s in policy.shares if s.name == share["name"])
        for t, row in share["by_type"].items():
            own, borrowed = integrals[(share["name"], t)]
            assert row["capacity"] == pytest.approx(model.quota(t) * horizon)
            assert (row["own"], row["borrowed"]) == pytest.approx((own, borrowed), abs=1e-6)
            assert row["own"] + row["lent"] + row["idle"] == pytest.approx(row["capacity"], abs=1e-6)
            assert -1e-6 <= row["stranded"] <= row["idle"] + 1e-6
            if model.strategy is Strategy.RESERVE:
                assert row["lent"] == pytest.approx(0, abs=1e-6)
            if model.strategy is not Strategy.LEND_AND_BORROW:
                assert row["borrowed"] == pytest.approx(0, abs=1e-6)
            borrowed_gpu_seconds += row["borrowed"] * gpus[t]
            lent_gpu_seconds += row["lent"] * gpus[t]
    # everything borrowed was lent by someone: a share, or the unassigned capacity
    assert borrowed_gpu_seconds / 3600 == pytest.approx(
        lent_gpu_seconds / 3600 + out["pool"]["unassigned_lent_gpu_hours"], abs=1e-6)
