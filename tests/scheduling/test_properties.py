"""Random small policies and traces, with every knob of SEMANTICS.md sections 4 and 8-10 (strict FIFO, fair
sharing with its strategies and weights, calendars of capacity and quota changes incl. training plans, the
RUNNABLE time limit), section 12's flavor lists and section 13's trees of cohorts: the engine agrees with
the reference model job by job and event by event, and on section 8's preemption loops (the findings, in
order), and the invariants of section 3, rebuilt from the events with capacity and quotas as they stand at
each instant, hold at every instant (flat policies), as does the loop rule (with fair sharing, no job is
preempted more than twice at one instant)."""

from __future__ import annotations

import math
import os
from collections import defaultdict
from dataclasses import replace
from typing import Any

import pytest
from conftest import JOB_FIELDS
from hypothesis import HealthCheck, assume, given, note, settings
from hypothesis import strategies as st
from reference import reference_replay
from test_rules_preemption_loops import SMALL

from scheduling.cohorts import CohortTree
from scheduling.model import Policy, Share, Strategy, borrow_limit_from_percent
from scheduling.replay.engine import replay

TYPES = ("x", "y")
STRATEGIES = ("RESERVE", "LEND", "LEND_AND_BORROW")
IN_SHARE = ("never", "lower_priority", "lower_or_newer_equal_priority")
FAIR_STRATEGY_LISTS = (
    ["LessThanOrEqualToFinalShare"],
    ["LessThanInitialShare"],
    ["LessThanOrEqualToFinalShare", "LessThanInitialShare"],
)
# conftest.JOB_FIELDS but the type a job ran on: compared where the scenarios have several types.
COMPARED = tuple(key for key in JOB_FIELDS if key != "instance_type")
CAUSES = ("cross_share", "in_share", "fair_sharing", "capacity")


@st.composite
def policies(draw) -> dict[str, Any]:
    types = TYPES[: draw(st.integers(1, 2))]
    n_shares = draw(st.integers(2, 4))
    fair = draw(st.sampled_from(["off", "off", "default", "list"]))
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
        if fair != "off" and draw(st.booleans()):
            # values compare exactly, as fractions: weights such as 0.1 and 0.3 (no binary float is
            # either) tie where their fractions do (3 GPUs at 0.3 and 1 GPU at 0.1)
            share["fair_weight"] = draw(st.sampled_from([0, 0.5, 2, 4, 3, 0.1, 0.3]))
        shares.append(share)
    capacity = {t: max(1, sum(s["capacity"][t] for s in shares) + draw(st.integers(0, 2))) for t in types}
    policy: dict[str, Any] = {
        "instance_types": {t: {"gpus": 1 + k, "hourly_price": 1.0} for k, t in enumerate(types)},
        "capacity": capacity,
        "shares": shares,
        "queueing": draw(st.sampled_from(["best_effort_fifo", "strict_fifo"])),
        "startup_seconds": draw(st.sampled_from([0, 0, 5, 10])),
    }
    if fair == "default":
        policy["fair_sharing"] = {}
    elif fair == "list":
        policy["fair_sharing"] = {"preemption_strategies": draw(st.sampled_from(FAIR_STRATEGY_LISTS))}
    if draw(st.booleans()):
        policy["changes"] = draw(calendars(types, capacity, shares))
    if draw(st.integers(0, 2)) == 0:
        policy["runnable_timeout_seconds"] = draw(st.sampled_from([5, 15, 30, 60, 12.5]))
    return policy


@st.composite
def calendars(draw, types: tuple[str, ...], capacity: dict[str, int], shares: list[dict]) -> list[dict]:
    """Dated changes valid at every instant: training plans (pool and a share up by k, then both back) and
    new states of pool and quotas (the pool at least the quotas' sum), some changes repeating a value."""
    n = draw(st.integers(1, 5))
    times = sorted(
        draw(st.lists(st.integers(0, 100) | st.integers(0, 160).map(lambda h: h / 2), min_size=n, max_size=n))
    )
    pool = dict(capacity)
    quotas = {s["name"]: dict(s["capacity"]) for s in shares}
    changes: list[dict] = []
    i = 0
    while i < len(times):
        if i + 1 < len(times) and draw(st.booleans()):  # a training plan from times[i] to times[i + 1]
            name, t = draw(st.sampled_from(sorted(quotas))), draw(st.sampled_from(types))
            extra = draw(st.integers(1, 3))
            changes += [
                {"time": times[i], "capacity": {t: pool[t] + extra}},
                {"time": times[i], "share": name, "capacity": {t: quotas[name][t] + extra}},
                {"time": times[i + 1], "capacity": {t: pool[t]}},
                {"time": times[i + 1], "share": name, "capacity": {t: quotas[name][t]}},
            ]
            i += 2
            continue
        for name in quotas:
            for t in types:
                if draw(st.integers(0, 2)) == 0:
                    quotas[name][t] = draw(st.integers(0, 3))
                    changes.append({"time": times[i], "share": name, "capacity": {t: quotas[name][t]}})
        for t in types:
            least = sum(q[t] for q in quotas.values())
            if pool[t] < least or draw(st.integers(0, 2)) == 0:
                pool[t] = least + draw(st.integers(0, 2))
                changes.append({"time": times[i], "capacity": {t: pool[t]}})
        i += 1
    # Drawn times may repeat: the later setting of a target and type at one instant is the one in
    # force, and a policy states it once (two are refused), so the earlier ones are dropped.
    last = {(c["time"], c.get("share"), t): at for at, c in enumerate(changes) for t in c["capacity"]}
    kept = []
    for at, change in enumerate(changes):
        if all(last[change["time"], change.get("share"), t] == at for t in change["capacity"]):
            kept.append(change)
    return kept


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
        {
            "time": draw(st.integers(0, 120)),
            "job_id": draw(st.sampled_from([*ids, "ghost"])),
            "priority": draw(st.integers(0, 4)),
        }
        for _ in range(draw(st.integers(0, 5)))
    ]
    return policy, jobs, updates


def comparable_events(events: list[dict]) -> list[tuple]:
    """Events as tuples; finishes, cancellations (and unschedulable submissions) at one instant happen
    together, so their order among themselves is not part of the semantics: sort each such run by job_id."""
    unordered = ("finish", "cancel", "unschedulable")
    out: list[tuple] = []
    run: list[tuple] = []
    for e in events:
        item = (e["time"], e["job_id"], e["event"], e["cause"], e["by"])
        if run and (item[0] != run[0][0] or item[2] != run[0][2]):
            out += sorted(run, key=lambda x: x[1]) if run[0][2] in unordered else run
            run = []
        run.append(item)
    out += sorted(run, key=lambda x: x[1]) if run and run[0][2] in unordered else run
    return out


def comparable_jobs(jobs: list[dict], fields: tuple[str, ...] = COMPARED) -> list[dict]:
    return [{key: job[key] for key in fields} for job in jobs]


def note_scenario(scenario: tuple[dict, list[dict], list[dict]]) -> None:
    """Print a failing case in full, ready to paste into a scenario test."""
    policy, jobs, updates = scenario
    note(f"policy = {policy!r}\njobs = {jobs!r}\nupdates = {updates!r}")


def replay_inputs(
    scenario: tuple[dict, list[dict], list[dict]], build_trace: Any
) -> tuple[Policy, Any, list, list]:
    """(policy, trace, jobs, updates) of a drawn scenario, noted first so that a failing example is printed
    whole, ready to paste into a scenario test."""
    policy_dict, jobs, updates = scenario
    note_scenario(scenario)
    return Policy.from_dict(policy_dict), build_trace(jobs, updates), jobs, updates


def check_engine_matches_reference(
    policy: Policy, trace: Any, replay_engine: Any, fields: tuple[str, ...] = (*COMPARED, "instance_type")
) -> tuple[dict, dict]:
    """Events, loop findings and jobs (``fields`` of each: by default with the type each ran on) of the
    engine equal the reference's; returns both results, (reference, engine), for further checks."""
    expected = reference_replay(policy, trace)
    actual = replay_engine(policy, trace)
    assert comparable_events(actual["events"]) == comparable_events(expected["events"])
    assert actual["summary"]["preemption_loops"] == expected["preemption_loops"]
    assert comparable_jobs(actual["jobs"], fields) == comparable_jobs(expected["jobs"], fields)
    return expected, actual


def property_settings(examples: int) -> settings:
    """Derandomized, so that CI replays the same examples every time; PROPERTY_EXAMPLES=n runs n random
    examples per test instead, for a long hunt. PROPERTY_SHARE=f (0 < f <= 1) runs that share of each
    test's derandomized examples: the test command's pure-Python lane checks that the engine's source
    behaves as its build, which the compiled lane has checked against the reference on every example."""
    hunt = os.environ.get("PROPERTY_EXAMPLES")
    share = float(os.environ.get("PROPERTY_SHARE") or 1)
    if not 0 < share <= 1:
        raise ValueError(f"PROPERTY_SHARE={share}: give a share between 0 (excluded) and 1")
    return settings(
        max_examples=int(hunt) if hunt else max(10, round(examples * share)),
        derandomize=not hunt,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


# -- section 8's preemption loops --------------------------------------------------------------------------
# With fair sharing, jobs can take each other's place by turns at one instant; the loop rule ends it (a job
# preempted twice at an instant is no candidate there again) and the run records the findings.


def check_preemption_loops(policy: Policy, out: dict) -> None:
    """The loop rule and its findings, from the events: with fair sharing no job is preempted more than
    twice at one instant; each finding names a job preempted twice at its instant and started again after
    that (it was running when the search left it out), and a preemptor that started or waited then; one
    finding per job and instant; the count and instants add up. Without fair sharing there is none."""
    loops = out["summary"]["preemption_loops"]
    if policy.fair_sharing is None:
        assert loops == {"count": 0, "instants": 0, "first": []}
        return
    preempted: dict[tuple[float, str], int] = defaultdict(int)
    started_after_second: set[tuple[float, str]] = set()
    for e in out["events"]:
        key = (e["time"], e["job_id"])
        if e["event"] == "preempt":
            preempted[key] += 1
            assert preempted[key] <= 2, f"{e['job_id']} preempted a third time at t={e['time']}"
        elif e["event"] == "start" and preempted[key] == 2:
            started_after_second.add(key)
    first = loops["first"]
    keys = [(f["time"], f["job_id"]) for f in first]
    assert len(set(keys)) == len(keys), "two findings for one job and instant"
    for finding, key in zip(first, keys, strict=True):
        assert preempted[key] == 2 and key in started_after_second, finding
        assert finding["preemptor_id"] != finding["job_id"]
    instants = len({f["time"] for f in first})
    if loops["count"] <= 100:
        assert (len(first), loops["instants"]) == (loops["count"], instants)
    else:
        assert len(first) == 100 and loops["instants"] >= instants


@property_settings(150)
@given(scenario=scenarios())
def test_engine_matches_reference(build_trace, replay_engine, scenario):
    policy, trace, _, _ = replay_inputs(scenario, build_trace)
    expected, actual = check_engine_matches_reference(policy, trace, replay_engine, COMPARED)
    assert actual["summary"]["ignored_priority_updates"] == expected["ignored_priority_updates"]
    quiet = replay(policy, trace).to_dict(include_jobs=True, include_events=False)
    assert comparable_jobs(quiet["jobs"]) == comparable_jobs(actual["jobs"])  # events change nothing


# Random policies loop rarely (none in 3,000 examples): these scenarios are variations of the small cycle at
# t = 32 (test_rules_preemption_loops.py), about one in ten of which loops at one instant or more.
LOOP_POLICY: dict[str, Any] = SMALL  # its queueing is drawn
# (job_id, submit_time, share, duration, priority, instance_count, checkpoint_interval, preemption_retries)
LOOP_JOBS = [
    ("j0", 30, "S2", 19.5, 0, 1, 12, None),
    ("j1", 13, "S2", 17, 3, 2, 19, None),
    ("j2", 16.5, "S1", 17.5, 0, 2, 20, 1),
    ("j3", 32, "S0", 14, 0, 3, None, None),
    ("j4", 23, "S1", 21.5, 2, 4, None, None),
    ("j5", 16.5, "S1", 0, 3, 2, None, None),
    ("j6", 17, "S1", 3, 3, 1, 12, None),
    ("j7", 11.5, "S2", 27.5, 3, 2, None, None),
    ("j8", 32, "S2", 17, 2, 1, 3, 0),
    ("j9", 10.5, "S2", 0, 2, 3, 20, None),
    ("j10", 38.5, "S1", 17, 3, 3, None, None),
]


@st.composite
def loop_scenarios(draw) -> tuple[dict, list[dict], list[dict]]:
    policy = {**LOOP_POLICY, "shares": [dict(s) for s in LOOP_POLICY["shares"]]}
    policy["shares"][0]["fair_weight"] = draw(st.sampled_from([1, 1, 2, 0.5]))
    policy["shares"][2]["fair_weight"] = draw(st.sampled_from([0.5, 0.5, 0.25, 1]))
    policy["queueing"] = draw(st.sampled_from(["best_effort_fifo", "strict_fifo"]))
    jobs = []
    for job_id, submit, share, duration, priority, count, checkpoint, retries in LOOP_JOBS:
        job: dict[str, Any] = {
            "job_id": job_id, "share": share,
            "submit_time": draw(st.just(submit) | st.sampled_from([30, 32, 32, 35])),
            "duration": draw(st.just(duration) | st.sampled_from([5, 10, 20, 30])),
            "priority": draw(st.just(priority) | st.integers(0, 3)),
            "instance_count": draw(st.just(count) | st.integers(1, 3)),
        }  # fmt: skip
        if checkpoint is not None:
            job["checkpoint_interval"] = checkpoint
        if retries is not None:
            job["preemption_retries"] = retries
        jobs.append(job)
    return policy, jobs, []


@property_settings(60)
@given(scenario=loop_scenarios())
def test_engine_matches_reference_near_loops(build_trace, replay_engine, scenario):
    policy, trace, jobs, updates = replay_inputs(scenario, build_trace)
    _, actual = check_engine_matches_reference(policy, trace, replay_engine, COMPARED)
    check_preemption_loops(policy, actual)
    Timeline(policy, jobs).replay(actual["events"], updates)


# -- section 12: jobs that accept several types ------------------------------------------------------------

WHEN_CAN = ("MayStopSearch", "TryNextFlavor")


@st.composite
def flavor_scenarios(draw) -> tuple[dict, list[dict], list[dict]]:
    """``scenarios`` with both types, shares with a drawn flavor_order and flavor_fungibility, and jobs of
    which some accept both types (in either order)."""
    policy, jobs, updates = draw(scenarios())
    assume(len(policy["capacity"]) >= 2)
    add_flavor_lists(draw, policy, jobs)
    return policy, jobs, updates


def add_flavor_lists(draw, policy: dict, jobs: list[dict]) -> None:
    """Section 12's settings drawn onto a policy of both types and its jobs (in place)."""
    for share in policy["shares"]:
        if draw(st.booleans()):
            share["flavor_order"] = draw(st.sampled_from([["x", "y"], ["y", "x"], ["y"], []]))
        if draw(st.booleans()):
            borrow, preempt = draw(st.sampled_from(WHEN_CAN)), draw(st.sampled_from(WHEN_CAN))
            fungibility = {"when_can_borrow": borrow, "when_can_preempt": preempt}
            if borrow == preempt == "TryNextFlavor":
                fungibility["preference"] = draw(
                    st.sampled_from(["BorrowingOverPreemption", "PreemptionOverBorrowing"])
                )
            share["flavor_fungibility"] = fungibility
    for job in jobs:
        if draw(st.integers(0, 2)):
            job["instance_type"] = draw(st.sampled_from(["x|y", "y|x"]))


@property_settings(150)
@given(scenario=flavor_scenarios())
def test_engine_matches_reference_with_flavor_lists(build_trace, replay_engine, scenario):
    policy, trace, _, _ = replay_inputs(scenario, build_trace)
    check_engine_matches_reference(policy, trace, replay_engine)


# -- section 13: trees of cohorts ----------------------------------------------------------------------------


@st.composite
def cohort_trees(draw, policy: dict) -> list[dict]:
    """Cohorts (one to four) of depth up to 3 below the root, each with its own quota (the pool grows by it,
    calendar included), maybe a borrowing and a lending limit per type and, with fair sharing, a weight;
    every share drawn into a cohort or left at the root. Shares' lending limits are kept within their
    quota (section 13's validation)."""
    types = list(policy["capacity"])
    cohorts: list[dict] = []
    depth: dict[str, int] = {}
    for i in range(draw(st.integers(1, 4))):
        parent = draw(st.sampled_from([None, *[c["name"] for c in cohorts if depth[c["name"]] < 3]]))
        name = f"C{i}"
        depth[name] = 1 if parent is None else depth[parent] + 1
        own = {t: draw(st.sampled_from([0, 0, 1, 2])) for t in types}
        cohort: dict[str, Any] = {"name": name, "capacity": own}
        if parent is not None:
            cohort["parent"] = parent
        if draw(st.integers(0, 2)) == 0:
            cohort["borrowing_limit"] = {t: draw(st.integers(0, 3)) for t in types}
        if draw(st.integers(0, 2)) == 0:
            cohort["lending_limit"] = {t: draw(st.integers(0, 3)) for t in types}
        if "fair_sharing" in policy and draw(st.booleans()):
            cohort["fair_weight"] = draw(st.sampled_from([0, 0.5, 2, 3, 0.1]))
        cohorts.append(cohort)
    for share in policy["shares"]:
        share["cohort"] = draw(st.sampled_from([None, *[c["name"] for c in cohorts]]))
        if share["cohort"] is None:
            del share["cohort"]
        if "lending_limit" in share:
            share["lending_limit"] = {t: min(share["lending_limit"], share["capacity"][t]) for t in types}
    claimed = {t: sum(c["capacity"][t] for c in cohorts) for t in types}
    policy["capacity"] = {t: n + claimed[t] for t, n in policy["capacity"].items()}
    for change in policy.get("changes", []):
        if "share" not in change:
            change["capacity"] = {t: n + claimed[t] for t, n in change["capacity"].items()}
    return cohorts


@st.composite
def cohort_scenarios(
    draw, flavors: bool = True, fair: bool | None = None
) -> tuple[dict, list[dict], list[dict]]:
    """``scenarios`` (with section 12's flavor lists half the time when there are two types, unless
    ``flavors`` is False) on a random tree of cohorts; ``fair`` True or False forces fair sharing on or
    off (None: as drawn)."""
    policy, jobs, updates = draw(scenarios())
    if fair is False and "fair_sharing" in policy:
        del policy["fair_sharing"]
        for share in policy["shares"]:
            share.pop("fair_weight", None)
    elif fair:
        policy.setdefault("fair_sharing", {})
    if flavors and len(policy["capacity"]) >= 2 and draw(st.booleans()):
        add_flavor_lists(draw, policy, jobs)
    policy["cohorts"] = draw(cohort_trees(policy))
    return policy, jobs, updates


@property_settings(60)
@given(scenario=cohort_scenarios(fair=False))
def test_engine_matches_reference_on_cohort_trees(build_trace, replay_engine, scenario):
    policy, trace, _, _ = replay_inputs(scenario, build_trace)
    check_engine_matches_reference(policy, trace, replay_engine)


@property_settings(40)
@given(scenario=cohort_scenarios(fair=True))
def test_engine_matches_reference_on_cohort_trees_with_fair_sharing(build_trace, replay_engine, scenario):
    policy, trace, _, _ = replay_inputs(scenario, build_trace)
    check_engine_matches_reference(policy, trace, replay_engine)


@property_settings(30)
@given(scenario=st.one_of(scenarios(), flavor_scenarios()))
def test_the_tree_reduces_to_sections_3_4_and_8_on_one_level(build_trace, scenario):
    # Section 13: without cohorts the policy is one root cohort and its formulas give sections 3-4 and 8's
    # answers. The reference replays a flat policy both ways; were they ever to differ, section 3 stands and
    # the case is to be written down (a test and a note), so that SEMANTICS.md can settle it.
    policy, trace, jobs, updates = replay_inputs(scenario, build_trace)
    flat, tree = reference_replay(policy, trace), reference_replay(policy, trace, tree=True)
    assert comparable_events(tree["events"]) == comparable_events(flat["events"])
    assert tree["jobs"] == flat["jobs"] and tree["preemption_loops"] == flat["preemption_loops"]


@property_settings(25)
@given(scenario=cohort_scenarios(flavors=False, fair=False))
def test_reference_admits_within_the_tree(build_trace, scenario):
    # The reference's admissions against scheduling.cohorts, the tree's arithmetic written apart from it:
    # every start asks at most available(share) of its type and the pool holds it, with the quotas and the
    # capacity in force at that instant.
    policy, trace, jobs, updates = replay_inputs(scenario, build_trace)
    out = reference_replay(policy, trace)
    single = next(iter(policy.capacity))
    job = {str(j["job_id"]): (j["share"], j.get("instance_type", single), j["instance_count"]) for j in jobs}
    gpus = {name: t.gpus for name, t in policy.instance_types.items()}
    holding: set[str] = set()
    for e in out["events"]:
        if e["event"] in ("finish", "preempt"):
            holding.discard(e["job_id"])
        if e["event"] != "start":
            continue
        pool, quotas = in_force(policy, e["time"])
        shares = tuple(replace(s, capacity=quotas[s.name]) for s in policy.shares)
        tree = CohortTree(policy.with_shares(shares).cohort_nodes(), pool, gpus)
        for held in holding:
            tree.add_usage(*job[held])
        share, t, count = job[e["job_id"]]
        assert count <= tree.available(share, t), e
        assert count + sum(job[h][2] for h in holding if job[h][1] == t) <= pool[t], e
        holding.add(e["job_id"])


# -- the calendar, restated for the checks ----------------------------------------------------------------


def in_force(policy: Policy, time: float) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
    """(pool capacity per type, quota per share and type) at ``time``: every change dated at or before it."""
    pool = dict(policy.capacity)
    quotas = {s.name: dict(s.capacity) for s in policy.shares}
    for change in policy.changes:
        if change.time <= time:
            (pool if change.share is None else quotas[change.share]).update(change.capacity)
    return pool, quotas


def borrow_limit(share: Share, quota: int, t: str) -> float:
    """Section 1's borrow limit against the quota in force (a percentage is of the current quota)."""
    if share.strategy is not Strategy.LEND_AND_BORROW:
        return 0
    if share.borrowing_limit is not None:
        return share.borrowing_limit.get(t, math.inf)
    return borrow_limit_from_percent(quota, share.borrow_limit_percent)


# -- invariants rebuilt from the events -----------------------------------------------------------------


class Timeline:
    """Replays an event list and checks section 3 (with capacity and quotas in force at each instant) and
    section 10 after every admission and at the end of every instant."""

    def __init__(self, policy: Policy, jobs: list[dict]):
        self.policy = policy
        self.shares = {s.name: s for s in policy.shares}
        single = next(iter(policy.capacity))
        self.jobs = {str(j["job_id"]): {**j, "instance_type": j.get("instance_type", single)} for j in jobs}
        self.change_times = {c.time for c in policy.changes}
        self.limit = policy.runnable_timeout_seconds
        self.holding: dict[str, float] = {}  # job_id -> start time of its current run
        self.runnable_since: dict[str, float] = {}  # job_id -> since when it is RUNNABLE without a break
        self.unschedulable: set[str] = set()
        self.ended: set[str] = set()  # succeeded, failed or cancelled
        self.now = -math.inf

    def usage(self, share: str, t: str) -> int:
        return sum(
            self.jobs[j]["instance_count"]
            for j in self.holding
            if self.jobs[j]["share"] == share and self.jobs[j]["instance_type"] == t
        )

    def check_capacity(self, admitted: dict | None = None) -> None:
        """Pool usage <= capacity(t) and the borrowing invariant with q(t); the admitted job's share within
        q(t) + its borrow limit of its type (every share, when quotas never change: nobody is then above)."""
        pool, quotas = in_force(self.policy, self.now)
        for t in self.policy.instance_types:
            used = sum(self.usage(name, t) for name in self.shares)
            assert used <= pool.get(t, 0), f"pool over capacity of {t} at {self.now}: {used}"
            borrowed = 0
            lendable = pool.get(t, 0) - sum(q.get(t, 0) for q in quotas.values())
            for name, share in self.shares.items():
                u, q = self.usage(name, t), quotas[name].get(t, 0)
                admitting = admitted is not None and (admitted["share"], admitted["instance_type"]) == (
                    name,
                    t,
                )
                if admitting or not self.policy.changes:
                    assert u <= q + borrow_limit(share, q, t), (
                        f"{name} holds {u} of {t} at {self.now}: above quota {q} + borrow limit"
                    )
                borrowed += max(0, u - q)
                if share.strategy is not Strategy.RESERVE:
                    lendable += min(share.lend_limit(t), max(0, q - u))
            assert borrowed <= lendable, f"borrowing invariant broken for {t} at {self.now}: {borrowed}"

    def waiting(self) -> list[str]:
        return [j for j in self.runnable_since if j not in self.holding]

    def check_reserve_jobs_not_waiting(self) -> None:
        """A RESERVE share's idle quota is never used by others, so at the end of an instant none of its
        jobs that fit in that idle quota waits (strict_fifo: unless its head does not fit)."""
        strict = self.policy.queueing.value == "strict_fifo"
        _, quotas = in_force(self.policy, self.now)
        for name, share in self.shares.items():
            if share.strategy is not Strategy.RESERVE:
                continue
            waiting = [j for j in self.waiting() if self.jobs[j]["share"] == name]
            fitting = [
                j
                for j in waiting
                if self.usage(name, self.jobs[j]["instance_type"]) + self.jobs[j]["instance_count"]
                <= quotas[name].get(self.jobs[j]["instance_type"], 0)
            ]
            if strict and fitting != waiting:
                continue  # the head may be one that does not fit: the share is blocked behind it
            assert not fitting, f"RESERVE share {name}: {fitting} wait at {self.now} with room in its quota"

    def check_runnable_limit(self) -> None:
        """At the end of an instant no job has been RUNNABLE for the limit or longer (cancelled then)."""
        if self.limit is None:
            return
        for j in self.waiting():
            assert self.now - self.runnable_since[j] < self.limit, (
                f"{j} RUNNABLE since {self.runnable_since[j]}, still at {self.now}, limit {self.limit}"
            )

    def replay(self, events: list[dict], updates: list[dict]) -> None:
        by_time: dict[float, list[dict]] = defaultdict(list)
        for e in events:
            by_time[e["time"]].append(e)
        submits = {j["submit_time"] for j in self.jobs.values()}
        instants = set(by_time) | {u["time"] for u in updates} | submits | self.change_times
        for now in sorted(instants):
            self.now = now
            for j, job in self.jobs.items():
                if job["submit_time"] == now:
                    self.runnable_since[j] = now
            for e in by_time[now]:
                self.apply(e)
                if e["event"] == "start":
                    self.check_capacity(admitted=self.jobs[e["job_id"]])
                elif now not in self.change_times:
                    self.check_capacity()  # where capacity changes, only once its preemptions are done
            self.check_capacity()
            self.check_reserve_jobs_not_waiting()
            self.check_runnable_limit()
        if self.limit is not None:
            assert not self.waiting(), f"{self.waiting()} RUNNABLE at the end despite the time limit"

    def apply(self, e: dict) -> None:
        j, kind = e["job_id"], e["event"]
        job = self.jobs[j]
        if kind == "start":
            assert j in self.runnable_since and j not in self.holding, f"{j} started while not RUNNABLE"
            assert e["time"] >= job["submit_time"], f"{j} started at {e['time']} before its submit time"
            self.holding[j] = e["time"]
        elif kind == "finish":
            assert j in self.holding, f"{j}: finish while not holding capacity"
            del self.holding[j], self.runnable_since[j]
            self.ended.add(j)
        elif kind == "preempt":
            assert j in self.holding, f"{j}: preempt while not holding capacity"
            del self.holding[j]
            self.runnable_since[j] = e["time"]
            self.check_preemption(e, job)
        elif kind == "fail":
            assert j not in self.holding
            del self.runnable_since[j]
            self.ended.add(j)
        elif kind == "cancel":
            assert j in self.runnable_since and j not in self.holding, f"{j} cancelled while not RUNNABLE"
            assert self.limit is not None and (e["cause"], e["by"]) == (None, None)
            assert e["time"] == self.runnable_since[j] + self.limit, (
                f"{j} cancelled at {e['time']}, RUNNABLE since {self.runnable_since[j]}, limit {self.limit}"
            )
            del self.runnable_since[j]
            self.ended.add(j)
        elif kind == "unschedulable":
            assert e["time"] == job["submit_time"]
            del self.runnable_since[j]
            self.unschedulable.add(j)

    def check_preemption(self, e: dict, job: dict) -> None:
        cause = e["cause"]
        assert cause in CAUSES
        if cause == "capacity":
            assert e["by"] is None and e["time"] in self.change_times, f"capacity preemption at {e['time']}"
            return
        assert e["by"] in self.jobs
        same_share = self.jobs[e["by"]]["share"] == job["share"]
        assert same_share == (cause == "in_share"), f"{e}: cause does not match the shares"
        if cause == "fair_sharing":
            assert self.policy.fair_sharing is not None
        if cause != "in_share" and not self.policy.changes:
            # only borrowers lose jobs to other shares; with changes a lowered quota makes anyone a borrower
            assert self.shares[job["share"]].strategy is Strategy.LEND_AND_BORROW, f"{e}: never borrows"


def check_job_records(policy: Policy, jobs: list[dict], out: dict) -> None:
    """Every job ends in a final state consistent with its events (RUNNABLE only when it waits for capacity
    that never comes back, with no time limit); a SUCCEEDED job's progress minus its lost work equals its
    duration; queued adds up the RUNNABLE stretches."""
    startup = policy.startup_seconds
    events_of: dict[str, list[dict]] = defaultdict(list)
    for e in out["events"]:
        events_of[e["job_id"]].append(e)
    submit = {str(j["job_id"]): j["submit_time"] for j in jobs}
    duration = {str(j["job_id"]): j["duration"] for j in jobs}
    final = ["SUCCEEDED", "FAILED", "UNSCHEDULABLE", "CANCELLED"]
    if policy.changes and policy.runnable_timeout_seconds is None:
        final.append("RUNNABLE")
    for record in out["jobs"]:
        j = record["job_id"]
        evs = events_of[j]
        assert record["state"] in final, f"{j} ended {record['state']}"
        assert record["preemptions"] == sum(e["event"] == "preempt" for e in evs)
        if record["state"] == "UNSCHEDULABLE":
            assert [e["event"] for e in evs] == ["unschedulable"] and record["reason"] is not None
            continue
        starts = [e["time"] for e in evs if e["event"] == "start"]
        stops = [e["time"] for e in evs if e["event"] in ("preempt", "finish")]
        if starts:
            assert record["first_start"] == starts[0] and record["wait"] == starts[0] - submit[j]
        else:
            assert record["first_start"] is None and record["wait"] is None
        if record["state"] == "RUNNABLE":
            assert record["end"] is None and (not evs or evs[-1]["event"] == "preempt")
            continue
        last = {"SUCCEEDED": "finish", "FAILED": "fail", "CANCELLED": "cancel"}[record["state"]]
        assert evs[-1]["event"] == last
        assert record["end"] == evs[-1]["time"]
        assert record["queued"] == pytest.approx(queued_from_events(submit[j], evs))
        progress = sum(max(0.0, b - a - startup) for a, b in zip(starts, stops, strict=True))
        if record["state"] == "SUCCEEDED":
            assert progress - record["lost_seconds"] == pytest.approx(duration[j]), f"{j}: work adds up wrong"
        else:
            assert progress <= duration[j] + record["lost_seconds"] + 1e-9


def queued_from_events(submit: float, events: list[dict]) -> float:
    """Time spent RUNNABLE: from submission or a preemption to the next start or the cancellation."""
    queued, since = 0.0, submit
    for e in events:
        if e["event"] in ("start", "cancel"):
            queued += e["time"] - since
        elif e["event"] == "preempt":
            since = e["time"]
    return queued


@property_settings(120)
@given(scenario=scenarios())
def test_invariants_hold_at_every_instant(build_trace, replay_engine, scenario):
    policy, trace, jobs, updates = replay_inputs(scenario, build_trace)
    out = replay_engine(policy, trace)
    timeline = Timeline(policy, jobs)
    timeline.replay(out["events"], updates)
    check_job_records(policy, jobs, out)
    check_preemption_loops(policy, out)
    assert not timeline.holding, "jobs still holding capacity after the last event"
    assert math.isfinite(out["summary"]["utilization"])


@property_settings(60)
@given(scenario=scenarios())
def test_reference_keeps_the_invariants(build_trace, replay_engine, scenario):
    # the same checks on the reference model: it is a model of the rules, so it must obey them too
    policy, trace, jobs, updates = replay_inputs(scenario, build_trace)
    out = reference_replay(policy, trace)
    Timeline(policy, jobs).replay(out["events"], updates)
    check_job_records(policy, jobs, out)
    check_preemption_loops(policy, {**out, "summary": {"preemption_loops": out["preemption_loops"]}})


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


def segments(policy: Policy, runs: list, start: float, end: float) -> list[tuple[float, float]]:
    """[left, right) stretches of the horizon within which usage, capacity and quotas are constant."""
    cuts = {t for _, a, b, _ in runs for t in (a, b)} | {c.time for c in policy.changes} | {start, end}
    instants = sorted(t for t in cuts if start <= t <= end)
    return list(zip(instants[:-1], instants[1:], strict=True))


def share_usage_integrals(policy: Policy, jobs: dict, runs: list, start: float, end: float) -> dict:
    """{(share, type): [quota, own, borrowed]} instance-seconds, with quotas as they stand over time."""
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for left, right in segments(policy, runs, start, end):
        _, quotas = in_force(policy, left)
        usage: dict[tuple[str, str], int] = defaultdict(int)
        for j, a, b, _ in runs:
            if a <= left and right <= b:
                usage[(jobs[j]["share"], jobs[j]["instance_type"])] += jobs[j]["instance_count"]
        for share in policy.shares:
            for t in policy.instance_types:
                u, q = usage[(share.name, t)], quotas[share.name].get(t, 0)
                row = out[(share.name, t)]
                row[0] += q * (right - left)
                row[1] += min(u, q) * (right - left)
                row[2] += max(0, u - q) * (right - left)
    return out


def capacity_integral(policy: Policy, runs: list, start: float, end: float) -> float:
    """GPU-seconds of the pool over the horizon, capacity as it stands over time."""
    gpus = {name: t.gpus for name, t in policy.instance_types.items()}
    total = 0.0
    for left, right in segments(policy, runs, start, end):
        pool, _ = in_force(policy, left)
        total += sum(pool.get(t, 0) * g for t, g in gpus.items()) * (right - left)
    return total


@property_settings(80)
@given(scenario=scenarios())
def test_metrics_agree_with_the_events(build_trace, replay_engine, scenario):
    policy, trace, job_list, _ = replay_inputs(scenario, build_trace)
    out = replay_engine(policy, trace)
    single = next(iter(policy.capacity))
    jobs = {str(j["job_id"]): {**j, "instance_type": j.get("instance_type", single)} for j in job_list}
    records = {r["job_id"]: r for r in out["jobs"]}
    # the horizon ends at the last end of any run: a job preempted by a calendar may never end
    ends = [r["end"] for r in out["jobs"] if r["end"] is not None]
    ends += [e["time"] for e in out["events"] if e["event"] == "preempt"]
    summary = out["summary"]
    states = [r["state"] for r in out["jobs"]]
    assert (summary["succeeded"], summary["failed"], summary["unschedulable"], summary["cancelled"]) == (
        states.count("SUCCEEDED"),
        states.count("FAILED"),
        states.count("UNSCHEDULABLE"),
        states.count("CANCELLED"),
    )
    causes = [e["cause"] for e in out["events"] if e["event"] == "preempt"]
    assert summary["preemptions"] == {cause: causes.count(cause) for cause in CAUSES}
    for share in out["shares"]:
        mine = [r for r in out["jobs"] if r["share"] == share["name"]]
        assert share["cancelled"] == sum(r["state"] == "CANCELLED" for r in mine)
        victims = {r["job_id"] for r in mine}
        assert share["preemptions"] == {
            cause: sum(
                e["cause"] == cause
                for e in out["events"]
                if e["event"] == "preempt" and e["job_id"] in victims
            )
            for cause in CAUSES
        }
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
    capacity = capacity_integral(policy, runs, start, end)
    if horizon > 0 and capacity > 0:
        assert summary["utilization"] == pytest.approx(busy / capacity)
        assert summary["useful_utilization"] == pytest.approx((busy - spent - lost) / capacity)
    lost_instance_seconds = sum(records[j]["lost_seconds"] * count[j] for j in jobs)
    all_startup = sum(min(b - a, startup) * count[j] for j, a, b, _ in runs)
    rerun_startup = sum(min(b - a, startup) * count[j] for j, a, b, preempted in runs if preempted)
    assert summary["lost_instance_seconds"] == pytest.approx(lost_instance_seconds)
    assert summary["startup_instance_seconds"] == pytest.approx(all_startup)
    assert summary["rerun_instance_seconds"] == pytest.approx(lost_instance_seconds + rerun_startup)

    integrals = share_usage_integrals(policy, jobs, runs, start, end)
    borrowed_gpu_seconds = lent_gpu_seconds = 0.0
    for share in out["shares"]:
        model = next(s for s in policy.shares if s.name == share["name"])
        for t, row in share["by_type"].items():
            quota, own, borrowed = integrals[(share["name"], t)]
            assert row["capacity"] == pytest.approx(quota, abs=1e-6)
            assert (row["own"], row["borrowed"]) == pytest.approx((own, borrowed), abs=1e-6)
            assert row["own"] + row["lent"] + row["idle"] == pytest.approx(row["capacity"], abs=1e-6)
            assert -1e-6 <= row["stranded"] <= row["idle"] + 1e-6
            if model.strategy is Strategy.RESERVE:
                assert row["lent"] == pytest.approx(0, abs=1e-6)
            if model.strategy is not Strategy.LEND_AND_BORROW and not policy.changes:
                assert row["borrowed"] == pytest.approx(0, abs=1e-6)
            borrowed_gpu_seconds += row["borrowed"] * gpus[t]
            lent_gpu_seconds += row["lent"] * gpus[t]
    # everything borrowed was lent by someone: a share, or the unassigned capacity
    assert borrowed_gpu_seconds / 3600 == pytest.approx(
        lent_gpu_seconds / 3600 + out["pool"]["unassigned_lent_gpu_hours"], abs=1e-6
    )
