"""The job finder's indexes: prefix search over ids, users and names (case ignored), an exact id
first, and per share the longest waits and the most preempted jobs. Hand-computed."""

from __future__ import annotations

from conftest import make_trace, table

from scheduling.finder import JobFinder, write_run_index, write_trace_index
from scheduling.model import Policy
from scheduling.replay.engine import replay

# One GPU, share A lends and borrows with in-share preemption, B reserves nothing of it.
POLICY = {
    "capacity": {"gpu": 1},
    "shares": [
        {
            "name": "A",
            "capacity": {"gpu": 1},
            "strategy": "LEND_AND_BORROW",
            "in_share_preemption": "lower_priority",
        },
        {"name": "B", "capacity": {"gpu": 0}, "strategy": "LEND_AND_BORROW"},
    ],
}
JOBS = table("""
    job_id submit_time share duration priority
    a1     0           A     100      0
    a10    10          A     100      5
    a2     20          A     50       0
    b1     0           B     10       0
""")
USERS = {"a1": "Ada", "a10": "ada", "a2": "Bob", "b1": "bea"}


def finder(tmp_path) -> JobFinder:
    trace = make_trace(JOBS)
    trace.user = [USERS[j] for j in trace.job_id]
    trace.name = [f"train-{j}" for j in trace.job_id]
    result = replay(Policy.from_dict(POLICY), trace)
    write_trace_index(tmp_path / "trace", trace)
    write_run_index(tmp_path / "run", trace, result.outcomes, top=2)
    return JobFinder(tmp_path / "trace", tmp_path / "run")


def ids(found: JobFinder, jobs) -> list[str]:
    return [row.job_id for row in found.rows(jobs)]


def test_search_by_id_prefix_puts_the_exact_id_first(tmp_path):
    found = finder(tmp_path)
    jobs, more = found.search("A1")
    # "a1" exactly, then "a10" (also starts with a1), case ignored
    assert ids(found, jobs) == ["a1", "a10"] and not more


def test_search_by_user_and_name(tmp_path):
    found = finder(tmp_path)
    assert ids(found, found.search("ada")[0]) == ["a1", "a10"]  # Ada and ada
    assert ids(found, found.search("train-b")[0]) == ["b1"]
    assert ids(found, found.search("ada", share="B")[0]) == []
    assert found.search("a-much-longer-query-than-any-id")[0] == []
    jobs, more = found.search("a", limit=2)
    assert len(jobs) == 2 and more


def test_longest_waits_and_most_preempted_per_share(tmp_path):
    found = finder(tmp_path)
    # A's GPU: a1 starts at 0 and is preempted at 10 by a10 (priority 5), which runs 10-110;
    # b1 borrows nothing (A's quota is in use), so a1 and a2 queue behind it:
    rows = {row.job_id: row for row in found.rows(range(4))}
    assert rows["a10"].wait_seconds == 0 and rows["a1"].preemptions == 1
    longest = ids(found, found.top["A"]["longest_waits"])
    assert longest[0] == "a2" and len(longest) == 2  # top 2
    assert ids(found, found.top["A"]["most_preempted"]) == ["a1"]
    assert found.top["B"]["most_preempted"] == []
