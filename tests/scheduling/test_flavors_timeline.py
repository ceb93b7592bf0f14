"""Section 12 where people look at single jobs: the why page's timeline (scheduling.pending) and the job
finder's rows name the type a job ran on and the types it accepts. Hand-computed."""

from __future__ import annotations

from conftest import make_trace, table

from scheduling.finder import JobFinder, write_run_index, write_trace_index
from scheduling.model import Policy
from scheduling.outcomes import State
from scheduling.pending import find_job, job_timeline
from scheduling.replay.engine import replay

POLICY = {
    "instance_types": {"h100": {"gpus": 8}, "a100": {"gpus": 8}},
    "capacity": {"h100": 1, "a100": 1},
    "shares": [{"name": "A", "capacity": {"h100": 1, "a100": 1}}],
}
# a0 holds the H100 until 100, a9 the A100 until 50. x1 accepts both: it waits, then takes the A100
# at 50 and runs to 110. s1 wants the H100 alone: it waits until a0 ends at 100.
JOBS = table("""
    job_id submit_time share duration instance_type
    a0     0           A     100      h100
    a9     0           A     50       a100
    x1     10          A     60       h100|a100
    s1     10          A     30       h100
""")


def run():
    policy, trace = Policy.from_dict(POLICY), make_trace(JOBS)
    return policy, trace, replay(policy, trace)


def spans(timeline: dict) -> list[tuple]:
    return [(s["start"], s["end"], s["state"], s["reason"] or s["words"]) for s in timeline["segments"]]


def test_the_timeline_of_a_job_of_several_types_names_them_and_its_run():
    policy, trace, result = run()
    timeline = job_timeline(policy, trace, result.outcomes, find_job(trace, "x1"))
    assert timeline["accepted_types"] == ["h100", "a100"]
    assert timeline["instance_type"] == "a100"
    assert spans(timeline) == [(10, 50, "waiting", "pool_full"), (50, 110, "running", "succeeded")]


def test_a_job_of_one_type_keeps_its_own_queue():
    policy, trace, result = run()
    timeline = job_timeline(policy, trace, result.outcomes, find_job(trace, "s1"))
    assert (timeline["accepted_types"], timeline["instance_type"]) == (["h100"], "h100")
    # x1 is in another queue group (h100|a100): s1 is not behind it
    assert spans(timeline) == [(10, 100, "waiting", "pool_full"), (100, 130, "running", "succeeded")]


def test_the_wait_history_tells_the_two_groups_apart():
    _, _, result = run()
    groups = result.outcomes.history.columns("groups", 3)
    # (share, type, size): the h100 group, the a100 group, and the group of h100|a100 as minus the
    # mask of its types (1 << 0 | 1 << 1)
    assert sorted(map(tuple, groups.tolist())) == [(0.0, -3.0, 1.0), (0.0, 0.0, 1.0), (0.0, 1.0, 1.0)]


def test_the_finder_rows_say_which_type_each_job_ran_on(tmp_path):
    policy, trace, result = run()
    write_trace_index(tmp_path / "trace", trace)
    write_run_index(tmp_path / "run", trace, result.outcomes, type_names=list(policy.instance_types))
    finder = JobFinder(tmp_path / "trace", tmp_path / "run")
    rows = {row.job_id: row.instance_type for row in finder.rows(range(len(trace)))}
    assert rows == {"a0": "h100", "a9": "a100", "x1": "a100", "s1": "h100"}


def test_a_job_of_several_types_that_never_ran_has_no_type(tmp_path):
    policy = Policy.from_dict({**POLICY, "shares": [{"name": "A", "capacity": {"h100": 1, "a100": 1},
                                                     "strategy": "RESERVE"}]})  # fmt: skip
    trace = make_trace(table("job_id submit_time share duration instance_type instance_count\n"
                             " big 0 A 10 h100|a100 2"))  # fmt: skip
    result = replay(policy, trace)
    assert int(result.outcomes.instance_type[0]) == -1
    assert result.to_dict()["jobs"][0]["instance_type"] is None
    write_trace_index(tmp_path / "trace", trace)
    write_run_index(tmp_path / "run", trace, result.outcomes, type_names=list(policy.instance_types))
    assert JobFinder(tmp_path / "trace", tmp_path / "run").rows([0])[0].instance_type == ""
    assert State(int(result.outcomes.state[0])) is State.UNSCHEDULABLE  # 2 > 1 of either type


def test_a_job_of_several_types_waits_for_its_first_types_reason():
    # B's b0 holds the only h100 until 100 (A would borrow it: the pool is full); the a100 is C's
    # RESERVE quota, idle (nothing lendable). The reason shown is its first type's (choice).
    jobs = make_trace(
        table("""
        job_id submit_time share duration instance_type
        b0     0           B     100      h100
        x1     10          A     10       h100|a100
    """)
    )
    for order, reason in ((["h100", "a100"], "pool_full"), (["a100", "h100"], "nothing_lendable")):
        policy = Policy.from_dict({**POLICY, "shares": [
            {"name": "A", "capacity": {}, "flavor_order": order},
            {"name": "B", "capacity": {"h100": 1}},
            {"name": "C", "capacity": {"a100": 1}, "strategy": "RESERVE"}]})  # fmt: skip
        result = replay(policy, jobs)
        timeline = job_timeline(policy, jobs, result.outcomes, find_job(jobs, "x1"))
        assert spans(timeline) == [(10, 100, "waiting", reason), (100, 110, "running", "succeeded")]
