"""SEMANTICS.md section 4, step 2: reclaim, in-share preemption, victim order, the backwards walk
and "never fits preempts nobody". One instance type ``gpu``."""

from __future__ import annotations

import pytest
from gpu_policies import policy, share

# B runs b1 (priority 5) on its quota and b2 (priority 1) on A's idle instance; A's job comes at 100.
RECLAIM_JOBS = """
job_id submit_time share duration priority
b1     0           B     1000     5
b2     0           B     900      1
a1     100         A     100      {a1_priority}
"""


def reclaim_case(run, reclaim: str, a1_priority: int):
    pol = policy(2, share("A", 1, reclaim=reclaim), share("B", 1))
    return run(pol, RECLAIM_JOBS.format(a1_priority=a1_priority))


def test_reclaim_any_preempts_a_borrower_of_any_priority(run):
    r = reclaim_case(run, "any", a1_priority=0)
    assert r.events[2:5] == [
        (100, "b2", "preempt", "cross_share", "a1"),  # lowest priority of B's jobs
        (100, "a1", "start", None, None),
        (200, "a1", "finish", None, None),
    ]
    assert r.starts()[-1] == (200, "b2")  # borrows A's instance again


@pytest.mark.parametrize("a1_priority", [0, 1])
def test_reclaim_lower_priority_spares_equal_or_higher(run, a1_priority):
    r = reclaim_case(run, "lower_priority", a1_priority=a1_priority)
    # b2 (1) is not below a1: a1 waits until b2 ends at 900 and B stops borrowing
    assert r.preempts() == []
    assert r.starts()[-1] == (900, "a1")


def test_reclaim_lower_priority_preempts_lower(run):
    r = reclaim_case(run, "lower_priority", a1_priority=3)
    assert r.events[2:4] == [(100, "b2", "preempt", "cross_share", "a1"), (100, "a1", "start", None, None)]


def test_reclaim_never(run):
    r = reclaim_case(run, "never", a1_priority=9)
    assert r.preempts() == []
    assert r.starts()[-1] == (900, "a1")


# A single instance held by a1 (priority 1) from 0; a2 arrives at 100.
def in_share_case(run, rule: str, a2_priority: int):
    pol = policy(1, share("A", 1, in_share_preemption=rule))
    return run(
        pol,
        f"""
        job_id submit_time share duration priority
        a1     0           A     1000     1
        a2     100         A     100      {a2_priority}
    """,
    )


def test_in_share_never(run):
    r = in_share_case(run, "never", a2_priority=5)
    assert r.starts() == [(0, "a1"), (1000, "a2")]


def test_in_share_lower_priority_preempts_lower(run):
    r = in_share_case(run, "lower_priority", a2_priority=5)
    assert r.events == [
        (0, "a1", "start", None, None),
        (100, "a1", "preempt", "in_share", "a2"),
        (100, "a2", "start", None, None),
        (200, "a2", "finish", None, None),
        (200, "a1", "start", None, None),
        (1200, "a1", "finish", None, None),  # no checkpoints: 1000 s again
    ]
    assert r.row("a1") == ("SUCCEEDED", 0, 1200, 0, 100, 1, 100, None)


def test_in_share_lower_priority_spares_equal(run):
    r = in_share_case(run, "lower_priority", a2_priority=1)
    assert r.starts() == [(0, "a1"), (1000, "a2")]


# z (9) holds the only instance until 100; o (1, submitted 10) and n (2, submitted 20) wait; n runs
# first; at 150 n is lowered to 1: now n has o's priority and a later submit time.
NEWER_EQUAL_JOBS = """
job_id submit_time share duration priority
z      0           A     100      9
o      10          A     100      1
n      20          A     100      2
"""
NEWER_EQUAL_UPDATES = """
time job_id priority
150  n      1
"""


def test_in_share_lower_or_newer_equal_priority_preempts_newer_equal(run):
    pol = policy(1, share("A", 1, in_share_preemption="lower_or_newer_equal_priority"))
    r = run(pol, NEWER_EQUAL_JOBS, NEWER_EQUAL_UPDATES)
    assert r.events == [
        (0, "z", "start", None, None),
        (100, "z", "finish", None, None),
        (100, "n", "start", None, None),  # priority 2 before o's 1
        (150, "n", "preempt", "in_share", "o"),  # equal priority now, and n was submitted after o
        (150, "o", "start", None, None),
        (250, "o", "finish", None, None),
        (250, "n", "start", None, None),
        (350, "n", "finish", None, None),
    ]


def test_in_share_lower_priority_does_not_preempt_newer_equal(run):
    pol = policy(1, share("A", 1, in_share_preemption="lower_priority"))
    r = run(pol, NEWER_EQUAL_JOBS, NEWER_EQUAL_UPDATES)
    assert r.starts() == [(0, "z"), (100, "n"), (200, "o")]


def test_in_share_lower_or_newer_equal_spares_older_equal(run):
    pol = policy(1, share("A", 1, in_share_preemption="lower_or_newer_equal_priority"))
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a1     0           A     1000     1
        a2     100         A     100      1
    """,
    )
    assert r.starts() == [(0, "a1"), (1000, "a2")]  # a1 is older than a2


def test_victims_from_other_shares_come_first(run):
    # A (quota 2) runs a_low (0); B runs b1 and b2 (3), b2 on A's second instance. a_hi (5) could
    # preempt a_low in-share, but other shares' jobs come first: B's borrower goes.
    pol = policy(3, share("A", 2, in_share_preemption="lower_priority"), share("B", 1))
    r = run(
        pol,
        """
        job_id submit_time share duration priority
        a_low  0           A     1000     0
        b1     0           B     1000     3
        b2     0           B     1000     3
        a_hi   100         A     100      5
    """,
    )
    # b1, b2 tie on priority and start time: job_id descending picks b2
    assert r.events[3:5] == [
        (100, "b2", "preempt", "cross_share", "a_hi"),
        (100, "a_hi", "start", None, None),
    ]


# A (quota 2, idle) has lent one instance to B (quota 1). a1 needs both of A's instances.
def victim_order_case(run, b_jobs: str):
    pol = policy(3, share("A", 2), share("B", 1))
    jobs = (
        "job_id submit_time share duration priority instance_count\n"
        + b_jobs
        + """
        a1     100         A     100      0        2
    """
    )
    return run(pol, jobs)


@pytest.mark.parametrize(
    "b_jobs",
    [
        # b1 is the oldest start and the smaller id, but has the lowest priority
        pytest.param(
            """
            b1     0           B     1000     1        1
            b2     10          B     1000     2        1
            """,
            id="lowest_priority_first",
        ),
        # equal priority: b1 started last (job_id descending alone would pick b2)
        pytest.param(
            """
            b2     0           B     1000     1        1
            b1     10          B     1000     1        1
            """,
            id="most_recently_started_first",
        ),
    ],
)
def test_victim_order_takes_b1(run, b_jobs):
    r = victim_order_case(run, b_jobs)
    assert r.at(100) == [(100, "b1", "preempt", "cross_share", "a1"), (100, "a1", "start", None, None)]


def test_victim_order_job_id_descending_as_strings(run):
    r = victim_order_case(
        run,
        """
        b1     0           B     1000     1        1
        b2     0           B     1000     1        1
    """,
    )
    assert r.at(100)[0] == (100, "b2", "preempt", "cross_share", "a1")


def test_victim_order_job_id_descending_as_numbers(run):
    pol = policy(3, share("A", 2), share("B", 1))
    r = run(
        pol,
        """
        job_id submit_time share duration instance_count
        9      0           B     1000     1
        10     0           B     1000     1
        1      100         A     100      2
    """,
    )
    # all ids are integers: 10 > 9 (as strings "9" > "10" would pick 9)
    assert r.at(100)[0] == (100, "10", "preempt", "cross_share", "1")


def test_backwards_walk_drops_victims_that_are_not_needed(run):
    # B (quota 0) borrows all 3 of A's instances: b_big (2 instances, priority 1), b_small (1, priority 0).
    # a1 needs 2: b_small is taken first (lowest priority) but is not enough, then b_big; walking back,
    # b_small is not needed once b_big is gone (B then borrows 1 <= A's 1 idle instance).
    pol = policy(3, share("A", 3, "LEND"), share("B", 0))
    r = run(
        pol,
        """
        job_id  submit_time share duration priority instance_count
        b_big   0           B     1000     1        2
        b_small 0           B     1000     0        1
        a1      100         A     100      0        2
    """,
    )
    assert r.at(100) == [(100, "b_big", "preempt", "cross_share", "a1"), (100, "a1", "start", None, None)]


def test_reclaim_candidate_stops_once_its_share_no_longer_borrows(run):
    # A (quota 2) lends both instances: one to B, one to C. a1 needs 2. Order: b2, b1 (priority 0),
    # then c2, c1 (priority 5). After b2, B is within quota: b1 is skipped, c2 is taken.
    pol = policy(4, share("A", 2, "LEND"), share("B", 1), share("C", 1))
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        c1     0           C     1000     5        1
        c2     0           C     1000     5        1
        b1     0           B     1000     0        1
        b2     0           B     1000     0        1
        a1     100         A     100      0        2
    """,
    )
    assert r.at(100) == [
        (100, "b2", "preempt", "cross_share", "a1"),
        (100, "c2", "preempt", "cross_share", "a1"),
        (100, "a1", "start", None, None),
    ]


def test_never_fits_preempts_nobody(run):
    # a_hi needs 2 instances; preempting a_low alone does not make room while b1 holds B's instance
    pol = policy(2, share("A", 1, in_share_preemption="lower_priority"), share("B", 1, "LEND"))
    r = run(
        pol,
        """
        job_id submit_time share duration priority instance_count
        a_low  0           A     1000     0        1
        b1     0           B     300      0        1
        a_hi   100         A     100      5        2
    """,
    )
    assert r.events == [
        (0, "a_low", "start", None, None),
        (0, "b1", "start", None, None),
        (300, "b1", "finish", None, None),
        (300, "a_low", "preempt", "in_share", "a_hi"),  # now preempting a_low is enough
        (300, "a_hi", "start", None, None),  # A's instance plus B's borrowed
        (400, "a_hi", "finish", None, None),
        (400, "a_low", "start", None, None),
        (1400, "a_low", "finish", None, None),
    ]
