"""Section 8's preemption loops (Kueue #14543, #7101): with fair sharing, in-share victims and the backward
walk, jobs can take each other's place by turns at one instant. The loop rule ends it: within one instant, a
job already preempted twice at that instant is not a candidate victim again there; the first time a search
leaves a job out for this reason, the run records a finding {time, job_id, share, preemptor_id,
preemptor_share}; RESULT.json's summary has preemption_loops {count, instants, first}. A replay never
fails for a loop."""

from __future__ import annotations

import json

from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

NO_LOOPS = {"count": 0, "instants": 0, "first": []}

# Found by the property tests (PROPERTY_EXAMPLES=3000); before the loop rule its pass at t=32 never ended.
# Pool of 4, no unassigned capacity: S0 quota 2 (weight 1), S1 quota 1 (lends at most 1), S2 quota 1
# (weight 0.5, in-share preemption of lower or newer equal-priority jobs). L = 2 + 1 + 1 = 4.
SMALL = {
    "instance_types": {"x": {"gpus": 1, "hourly_price": 1.0}}, "capacity": {"x": 4},
    "shares": [
        {"name": "S0", "capacity": {"x": 2}, "strategy": "LEND_AND_BORROW",
         "in_share_preemption": "lower_priority", "reclaim": "any"},
        {"name": "S1", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW",
         "in_share_preemption": "lower_priority", "reclaim": "lower_priority", "lending_limit": 1},
        {"name": "S2", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW",
         "in_share_preemption": "lower_or_newer_equal_priority", "reclaim": "any", "fair_weight": 0.5},
    ],
    "queueing": "best_effort_fifo",
    "fair_sharing": {"preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
    "runnable_timeout_seconds": 15,
}  # fmt: skip
SMALL_JOBS = """
    job_id submit_time share duration priority instance_count checkpoint_interval preemption_retries
    j0     30          S2    19.5     0        1              12                  -
    j1     13          S2    17       3        2              19                  -
    j2     16.5        S1    17.5     0        2              20                  1
    j3     32          S0    14       0        3              -                   -
    j4     23          S1    21.5     2        4              -                   -
    j5     16.5        S1    0        3        2              -                   -
    j6     17          S1    3        3        1              12                  -
    j7     11.5        S2    27.5     3        2              -                   -
    j8     32          S2    17       2        1              3                   0
    j9     10.5        S2    0        2        3              20                  -
    j10    38.5        S1    17       3        3              -                   -
"""
SMALL_UPDATES = [{"time": 109, "job_id": "j5", "priority": 4}]


def test_the_small_cycle_at_32_ends_by_the_loop_rule(run):
    # Before 32: j7 (S2, priority 3, 2 instances, started 11.5), j6 (S1, 1, started 30) and j0 (S2, 1,
    # started 30) run; the pool is full; S2 borrows 2: V_S2 = 1000 x 2 / 4 / 0.5 = 1000. At 32 j3 (S0, 3
    # instances) and j8 (S2, 1, no retries) arrive; j4 (S1, 4 instances) waits.
    # Round 1, by value with the job: j3 250 (S0 borrows 1), j4 1000, j8 1500.
    #  j3: target S2 (1000); j0 passes (250 <= 500), j7 fails (250 <= 0) and is set aside;
    #      LessThanInitialShare then takes j7 (250 < 500): j0, j7 preempted (fair_sharing, j3 over its
    #      quota), j3 starts.
    #  j8 now has value 0 (S2 holds nothing): reclaims j3 from S0 (0 <= 0; cross_share, j8 within quota).
    #  j4: S2 does not borrow, its own j6 outranks it: no candidate.
    # Round 2: j0 (500) fits (S2 borrows 1 of S0's idle quota). j4 (1000): only S2's j0 (priority 0 < 2) is a
    #  candidate, and fails both strategies (1000 <= 0, 1000 < 500). j7 (1500): in-share, takes j0 (priority
    #  0): j0's second preemption at 32.
    # Round 3: j3 (250) takes j8 (250 <= 500; j8 fails, no retries) and j7 (set aside, then 250 < 500): j7's
    #  second preemption. j0 (0 now: S2 holds nothing) reclaims j3 from S0: j3's second. j4: no candidate.
    # Round 4: j3 (250): S2 holds only j0, not borrowing: no candidate. j7 (1000, priority 3 before j4) fits
    #  (S2 borrows 2 of S0's idle 2). j4 (1000): its only candidate would be j0 (priority 0 < 2; j7 outranks
    #  it), preempted twice at 32: left out, the first finding (j0, by j4).
    # Round 5: j3: its candidates would be S2's j0 (noted already) and j7 (twice at 32: the second finding,
    #  by j3); j4 leaves j0 out again (no new finding). Nothing is admitted: the pass ends.
    out = run(SMALL, SMALL_JOBS, SMALL_UPDATES)
    assert out.at(32) == [
        (32, "j0", "preempt", "fair_sharing", "j3"),
        (32, "j7", "preempt", "fair_sharing", "j3"),
        (32, "j3", "start", None, None),
        (32, "j3", "preempt", "cross_share", "j8"),
        (32, "j8", "start", None, None),
        (32, "j0", "start", None, None),
        (32, "j0", "preempt", "in_share", "j7"),
        (32, "j7", "start", None, None),
        (32, "j8", "preempt", "fair_sharing", "j3"),
        (32, "j8", "fail", "fair_sharing", "j3"),
        (32, "j7", "preempt", "fair_sharing", "j3"),
        (32, "j3", "start", None, None),
        (32, "j3", "preempt", "cross_share", "j0"),
        (32, "j0", "start", None, None),
        (32, "j7", "start", None, None),
    ]
    assert out.preemption_loops == {
        "count": 2,
        "instants": 1,
        "first": [
            {"time": 32, "job_id": "j0", "share": "S2", "preemptor_id": "j4", "preemptor_share": "S1"},
            {"time": 32, "job_id": "j7", "share": "S2", "preemptor_id": "j3", "preemptor_share": "S0"},
        ],
    }
    # The replay goes on to the end: j4 runs out of its 15 s in RUNNABLE at 38 (submitted 23).
    assert out.job("j4")["state"] == "CANCELLED" and out.job("j4")["end"] == 38
    assert out.job("j0")["state"] == "SUCCEEDED" and out.job("j0")["preemptions"] == 2
    assert out.job("j3")["preemptions"] == 2 and out.job("j3")["state"] == "SUCCEEDED"


def test_the_jobs_left_out_are_candidates_again_at_the_next_instant(run):
    # The same run with S0's k (1 instance) at 32.5. After 32, j6 (S1), j0 and j7 (S2, borrowing 2) fill the
    # pool. k first (S0 within its quota: value 0): its candidates are S2's j0 and j7 again, though both were
    # left out at 32; S2 is the target (1000), j0 passes (0 <= 500) and is reclaimed (cross_share). Then
    # j3 (500): only S2's j7 (S2 now borrows 1: 500), which fails both strategies (500 <= 0, 500 < 500);
    # j4: j7 outranks it; j0: j7 outranks it. No job is preempted twice at 32.5: still one loop instant.
    jobs = SMALL_JOBS + "k 32.5 S0 1 0 1 - -\n"
    out = run(SMALL, jobs, SMALL_UPDATES)
    assert out.at(32.5) == [(32.5, "j0", "preempt", "cross_share", "k"), (32.5, "k", "start", None, None)]
    assert out.preemption_loops["count"] == 2 and out.preemption_loops["instants"] == 1


def test_without_loops_the_summary_says_none(run):
    fair_off = {**SMALL, "fair_sharing": None}
    assert run(fair_off, SMALL_JOBS, SMALL_UPDATES).preemption_loops == NO_LOOPS
    calm = """
        job_id submit_time share duration
        a      0           S0    10
        b      0           S1    10
    """
    assert run(SMALL, calm).preemption_loops == NO_LOOPS


def _demo(weights: list[float]) -> tuple[Policy, object]:
    trace = generate(2000, seed=1)
    policy = demo_policy_dict(demo_pool_gpus(trace))
    policy["fair_sharing"] = {}
    policy["queueing"] = "strict_fifo"
    for share, weight in zip(policy["shares"], weights, strict=True):
        share["fair_weight"] = weight
    return Policy.from_dict(policy), trace


def test_the_four_team_demo_with_weights_1_2_4_half_replays_to_the_end():
    # Its cycle at 145,098.6 s under strict FIFO (prod-training's high-priority job takes an in-share
    # victim, which takes research's jobs by fair sharing, one of which takes prod-training's back) used to
    # fail the replay. Now every job is accounted for and the loop is a finding between those two teams.
    policy, trace = _demo([1, 2, 4, 0.5])
    result = replay(policy, trace, record_events=True)
    summary = result.summary
    assert summary["jobs"] == 2000 and summary["succeeded"] + summary["failed"] == 2000
    loops = summary["preemption_loops"]
    assert loops["count"] == len(loops["first"]) > 0 and loops["instants"] == 1
    assert {round(f["time"], 1) for f in loops["first"]} == {145098.6}
    assert {f["share"] for f in loops["first"]} | {f["preemptor_share"] for f in loops["first"]} == {
        "prod-training",
        "research",
    }
    # Each job named was preempted exactly twice at that instant, and is never preempted a third time.
    preempted: dict[tuple[float, str], int] = {}
    for e in result.to_dict(include_jobs=False)["events"]:
        if e["event"] == "preempt":
            key = (e["time"], e["job_id"])
            preempted[key] = preempted.get(key, 0) + 1
    assert max(preempted.values()) <= 2
    for finding in loops["first"]:
        assert preempted[finding["time"], finding["job_id"]] == 2
    json.dumps(result.to_dict(include_jobs=False, include_events=False))  # RESULT.json keeps it


def test_the_same_demo_with_equal_weights_has_no_loop():
    policy, trace = _demo([1, 1, 1, 1])
    summary = replay(policy, trace).summary
    assert summary["jobs"] == 2000 and summary["preemption_loops"] == NO_LOOPS


def test_the_summary_keeps_the_first_100_findings_and_counts_them_all(run):
    # Sixty copies of the small cycle, 1,000 s apart (each copy's jobs end or are cancelled within 100 s):
    # two findings at each copy's t = 32, so 120 findings at 60 instants; the first 100 are kept, the
    # last kept being copy 49's second (j7 by j3, at 49,032).
    rows = [line.split() for line in SMALL_JOBS.strip().splitlines()]
    header, jobs = rows[0], rows[1:]
    copies = []
    for k in range(60):
        for row in jobs:
            cells = dict(zip(header, row, strict=True))
            cells["job_id"] = f"c{k}-{cells['job_id']}"
            cells["submit_time"] = str(float(cells["submit_time"]) + 1000 * k)
            copies.append(" ".join(cells[name] for name in header))
    out = run(SMALL, "\n".join([" ".join(header), *copies]))
    loops = out.preemption_loops
    assert (loops["count"], loops["instants"], len(loops["first"])) == (120, 60, 100)
    assert loops["first"][-1] == {
        "time": 49032,
        "job_id": "c49-j7",
        "share": "S2",
        "preemptor_id": "c49-j3",
        "preemptor_share": "S0",
    }
