"""Section 8's two corrections on ties: share values compare exactly, as fractions (weights as their decimal
text says), and on equal values the search's target is the share whose next candidate comes first in
section 4's whole victim order: another share's before the job's own share's (Kueue's CandidatesOrdering,
used by TargetClusterQueueOrdering on equal DRS). Each test runs on the reference model and the engine.

Values are written 1000 x B / L / weight, B the share's borrowed GPUs (with the job counted as admitted
where the rule says so) and L the pool's lendable GPUs."""

from __future__ import annotations

from scheduling.replay.rules import (
    ZERO_VALUE,
    exact_number,
    share_value,
    target_tie_before,
    value_below,
    value_equal,
)

X = {"x": {"gpus": 1, "hourly_price": 1.0}}
# A and B (quota 0: all they run is borrowed; never preempt nor reclaim) weigh 0.3 and 0.1: 3 GPUs of A's
# and 1 of B's have the same value, exactly, which as floats they do not.
TIED_BORROWERS = [
    {"name": "A", "capacity": {"x": 0}, "strategy": "LEND_AND_BORROW", "fair_weight": 0.3,
     "in_share_preemption": "never", "reclaim": "never"},
    {"name": "B", "capacity": {"x": 0}, "strategy": "LEND_AND_BORROW", "fair_weight": 0.1,
     "in_share_preemption": "never", "reclaim": "never"},
]  # fmt: skip


def test_values_are_fractions_so_weights_of_0_3_and_0_1_tie():
    # 1000 x 3 / 3 / 0.3 and 1000 x 1 / 3 / 0.1 are both 10000/3; as floats the first is the larger.
    assert 1000.0 * (3 / (3 * 0.3)) != 1000.0 * (1 / (3 * 0.1))
    a = share_value(3, 3.0, *exact_number(0.3))
    b = share_value(1, 3.0, *exact_number(0.1))
    assert value_equal(a, b) and not value_below(a, b) and not value_below(b, a)
    # the spec's example: 1000 x 1 / 18 / 1 equals 1000 x 3 / 18 / 3
    assert value_equal(share_value(1, 18.0, 1, 1), share_value(3, 18.0, *exact_number(3)))
    assert value_below(share_value(1, 18.0, 1, 1), share_value(2, 18.0, 1, 1))
    # weight 0: infinite, above every finite value; two infinite values compare by 1000 x B / L
    assert value_below(share_value(10**6, 18.0, 1, 1), share_value(1, 18.0, 0, 1))
    assert value_below(share_value(1, 18.0, 0, 1), share_value(2, 18.0, 0, 1))
    assert share_value(0, 18.0, 1, 1) == ZERO_VALUE == share_value(5, 0.0, 1, 1)
    assert exact_number(0.1) == (1, 10) and exact_number(2.5) == (5, 2)


def test_the_whole_victim_order_puts_other_shares_first():
    own, other = (0, -5.0, -1), (3, -1.0, -9)  # victim_key: priority, -start, -rank
    assert target_tie_before(False, other, True, own)  # another share's candidate before the own one's
    assert not target_tie_before(True, own, False, other)
    assert target_tie_before(False, (0, -1.0, -2), False, (1, -9.0, -9))  # then lower priority
    assert target_tie_before(False, (0, -9.0, -2), False, (0, -1.0, -9))  # then started more recently
    assert target_tie_before(False, (0, -1.0, -9), False, (0, -1.0, -2))  # then higher job_id


def test_admission_order_ties_exactly_then_goes_by_priority(run):
    # Pool of 3, every share's quota 0: L = unassigned 3. jA would make A borrow 3 GPUs (weight 0.3), jB B
    # 1 GPU (weight 0.1): 10000/3 each, a tie, so jA goes first by its higher priority and takes the whole
    # pool; jB starts when jA ends at 10. (Compared as floats, jB's 3333.33...33 came before jA's ...35: jB
    # started at 0 and jA waited.)
    policy = {
        "instance_types": X, "capacity": {"x": 3},
        "shares": TIED_BORROWERS,
        "fair_sharing": {},
    }  # fmt: skip
    out = run(
        policy,
        """
        job_id submit_time share duration priority instance_count
        jA     0           A     10       1        3
        jB     0           B     10       0        1
    """,
    )
    assert out.starts() == [(0, "jA"), (10, "jB")]


def test_target_ties_between_two_other_shares_go_to_the_lower_priority_candidate(run):
    # Capacity 6: S (quota 1, LEND) is idle, T (quota 2, LEND) runs t0 and t1, A (quota 0, weight 0.3)
    # runs a (3 instances, priority 1), B (quota 0, weight 0.1) runs b (1 instance, priority 0): the pool
    # is full. L = unassigned 3 + S's 1 + T's 2 = 6. At 1 S's job p (1 instance, within its quota) must
    # reclaim: V_S = 0; A's value is 1000 x 3 / 6 / 0.3 = 5000/3 and B's 1000 x 1 / 6 / 0.1 = 5000/3, a
    # tie. Both candidates are other shares': b comes first (priority 0 before 1), so B is the target,
    # b passes (new 0 <= after 0) and p fits: b is preempted (cross_share, p within quota). As floats A's
    # value was the larger and a was preempted.
    policy = {
        "instance_types": X, "capacity": {"x": 6},
        "shares": [
            {"name": "S", "capacity": {"x": 1}, "strategy": "LEND", "in_share_preemption": "never",
             "reclaim": "any"},
            {"name": "T", "capacity": {"x": 2}, "strategy": "LEND", "in_share_preemption": "never",
             "reclaim": "never"},
            *TIED_BORROWERS,
        ],
        "fair_sharing": {},
    }  # fmt: skip
    out = run(
        policy,
        """
        job_id submit_time share duration priority instance_count
        t0     0           T     100      0        1
        t1     0           T     100      0        1
        a      0           A     100      1        3
        b      0           B     100      0        1
        p      1           S     100      0        1
    """,
    )
    assert out.at(1) == [(1, "b", "preempt", "cross_share", "p"), (1, "p", "start", None, None)]


def _own_or_other(strategies: list[str]) -> dict:
    # Capacity 4, A quota 1 (weight 2), B quota 1 (weight 2): unassigned 2, L = 2 + 1 + 1 = 4. At 0 B's
    # b0, b1, b2 start (B borrows 2), at 1 A's a0 (within quota): the pool is full. At 2 A's p (priority 1,
    # 2 instances) needs two instances: a0 (its own share's, priority 0) and one of B's. Counted as
    # admitted, A holds 3, borrows 2: V_A = 1000 x 2 / 4 / 2 = 250 = V_B, a tie between the job's own share
    # and another: B is the target first. Its candidates (b2 first: job_id descending) fail
    # LessThanOrEqualToFinalShare (250 <= V_B without one = 125 does not hold) and are set aside; then A's
    # a0 is taken (V_A falls to 125) and p still does not fit.
    return {
        "instance_types": X, "capacity": {"x": 4},
        "shares": [
            {"name": "A", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW", "fair_weight": 2,
             "in_share_preemption": "lower_priority", "reclaim": "any"},
            {"name": "B", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW", "fair_weight": 2,
             "in_share_preemption": "never", "reclaim": "never"},
        ],
        "fair_sharing": {"preemption_strategies": strategies},
    }  # fmt: skip


OWN_OR_OTHER_JOBS = """
    job_id submit_time share duration priority instance_count
    b0     0           B     100      0        1
    b1     0           B     100      0        1
    b2     0           B     100      0        1
    a0     1           A     200      0        1
    p      2           A     50       1        2
"""


def test_a_tie_with_the_own_share_goes_to_the_other_share_whose_candidates_then_fail(run):
    # LessThanOrEqualToFinalShare alone: nothing is left to try once a0 is taken, so nobody is preempted
    # and p waits for B's jobs to end at 100 (then A borrows 2: 2 <= unassigned 2 + B's idle 1). Taking the
    # own share's a0 first (it started last, so it came first by victim order alone) would have dropped
    # V_A to 125, and b2 would have passed (125 <= 125): a0 and b2 preempted at 2.
    out = run(_own_or_other(["LessThanOrEqualToFinalShare"]), OWN_OR_OTHER_JOBS)
    assert out.at(2) == []
    assert out.job("p")["first_start"] == 100
    assert out.preempts() == []


def test_a_tie_with_the_own_share_then_the_second_strategy_takes_the_set_aside_candidate(run):
    # Both strategies: after a0, LessThanInitialShare over the set-aside candidates: V_A 125 < V_B 250, so
    # B's first set-aside candidate b2 is taken and p fits (A borrows 1, B borrows 1: 2 <= unassigned 2).
    # The backward walk keeps both (without either p does not fit). Order of preemption: as taken.
    out = run(_own_or_other(["LessThanOrEqualToFinalShare", "LessThanInitialShare"]), OWN_OR_OTHER_JOBS)
    assert out.at(2) == [
        (2, "a0", "preempt", "in_share", "p"),
        (2, "b2", "preempt", "fair_sharing", "p"),
        (2, "p", "start", None, None),
    ]
