"""SEMANTICS.md section 12: jobs that accept several instance types, each share's flavor_order and
flavor_fungibility. Every case runs with the reference model and the engine (the ``run`` fixture).

Two types, ``h100`` then ``a100`` (the policy's order, so the default flavor order), one GPU each.
Kueue's own cases (``pkg/scheduler/flavorassigner/flavorassigner_test.go``) are restated in our
terms where they apply: "borrow before try next flavor", "borrow try next flavor, found the first /
second flavor", "when borrowing while preemption is needed for flavor one" with MayStopSearch and
TryNextFlavor, and a first flavor that needs preemption but has no candidates.
"""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.model import Policy

BOTH_TRY = {"when_can_borrow": "TryNextFlavor", "when_can_preempt": "TryNextFlavor"}
MAY_STOP = {"when_can_borrow": "MayStopSearch", "when_can_preempt": "MayStopSearch"}


def policy(capacity: dict, *shares: dict, **extra) -> dict:
    return {
        "instance_types": {"h100": {"gpus": 1}, "a100": {"gpus": 1}},
        "capacity": capacity,
        "shares": list(shares),
        **extra,
    }


def share(name: str, quota: dict, strategy: str = "LEND_AND_BORROW", **options) -> dict:
    return {"name": name, "capacity": quota, "strategy": strategy, **options}


def ran_on(r, job_id: str) -> str | None:
    return r.job(job_id)["instance_type"]


# --- the scan's order -----------------------------------------------------------------------------


def test_the_first_type_that_fits_within_quota_is_taken(run):
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}))
    r = run(pol, "job_id submit_time share duration instance_type\n a1 0 A 10 a100|h100")
    assert ran_on(r, "a1") == "h100"  # the policy's order, not the job's: h100 first
    assert r.starts() == [(0, "a1")]


def test_flavor_order_decides_which_type_is_tried_first(run):
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}, flavor_order=["a100", "h100"]))
    r = run(pol, "job_id submit_time share duration instance_type\n a1 0 A 10 h100|a100")
    assert ran_on(r, "a1") == "a100"


def test_a_type_left_out_of_flavor_order_comes_after_the_listed_ones(run):
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}, flavor_order=["a100"]))
    jobs = "job_id submit_time share duration instance_type\n a1 0 A 10 h100|a100\n a2 0 A 10 h100|a100"
    r = run(pol, jobs)
    assert (ran_on(r, "a1"), ran_on(r, "a2")) == ("a100", "h100")


def test_no_fit_on_the_first_type_falls_back_to_the_next(run):
    # a0 holds the only h100; A may not preempt it (in_share_preemption never): h100 is no_fit.
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}))
    jobs = """
    job_id submit_time share duration instance_type priority
    a0     0           A     100      h100          0
    a1     10          A     10       h100|a100     5
    """
    r = run(pol, jobs)
    assert ran_on(r, "a1") == "a100"
    assert r.starts() == [(0, "a0"), (10, "a1")]
    assert r.preempts() == []


def test_every_type_no_fit_waits_then_takes_the_first_that_frees(run):
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}))
    jobs = """
    job_id submit_time share duration instance_type
    a0     0           A     100      h100
    a2     0           A     50       a100
    a1     10          A     10       h100|a100
    """
    r = run(pol, jobs)
    assert r.row("a1")[:3] == ("SUCCEEDED", 50, 60)  # a2's a100 frees first
    assert ran_on(r, "a1") == "a100"


# --- when_can_borrow ----------------------------------------------------------------------------------

# A has no h100 quota but may borrow B's idle one; it has a100 quota of its own.
BORROW_POLICY = ({"h100": 1, "a100": 1}, {"h100": 0, "a100": 1})


def borrow_case(run, **fungibility):
    capacity, quota = BORROW_POLICY
    options = {"flavor_fungibility": fungibility} if fungibility else {}
    pol = policy(capacity, share("A", quota, **options), share("B", {"h100": 1}, "LEND"))
    return run(pol, "job_id submit_time share duration instance_type\n a1 0 A 10 h100|a100")


def test_borrow_before_try_next_flavor_stops_at_the_borrowing_type(run):
    # Kueue "borrow before try next flavor": whenCanBorrow MayStopSearch (the default) stops at h100,
    # which fits by borrowing (level 1), though a100 would fit within quota.
    assert ran_on(borrow_case(run), "a1") == "h100"


def test_borrow_try_next_flavor_finds_the_second_type(run):
    # Kueue "borrow try next flavor, found the second flavor": h100 borrows, so the scan goes on;
    # a100 fits at level 0 and stops it.
    assert ran_on(borrow_case(run, when_can_borrow="TryNextFlavor"), "a1") == "a100"


def test_borrow_try_next_flavor_keeps_the_first_when_the_second_does_not_fit(run):
    # Kueue "borrow try next flavor, found the first flavor": a100 is a RESERVE share's (C), no_fit;
    # after the last type the remembered h100 (fit, level 1) is used.
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {}, flavor_fungibility={"when_can_borrow": "TryNextFlavor"}),
        share("B", {"h100": 1}, "LEND"),
        share("C", {"a100": 1}, "RESERVE"),
    )
    r = run(pol, "job_id submit_time share duration instance_type\n a1 0 A 10 h100|a100")
    assert ran_on(r, "a1") == "h100"


# --- when_can_preempt -------------------------------------------------------------------------------

# a0 (priority 0) holds A's only h100; a1 (priority 5) may preempt it in-share; a100 is free in quota.
PREEMPT_JOBS = """
job_id submit_time share duration instance_type priority
a0     0           A     100      h100          0
a1     10          A     10       h100|a100     5
"""


def preempt_case(run, **fungibility):
    options = {"flavor_fungibility": fungibility} if fungibility else {}
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {"h100": 1, "a100": 1}, in_share_preemption="lower_priority", **options),
    )
    return run(pol, PREEMPT_JOBS)


def test_preempt_try_next_flavor_goes_on_to_a_type_that_fits(run):
    r = preempt_case(run)  # the default: whenCanPreempt TryNextFlavor
    assert ran_on(r, "a1") == "a100"
    assert r.preempts() == []


def test_preempt_may_stop_search_preempts_on_the_first_type(run):
    r = preempt_case(run, when_can_preempt="MayStopSearch")
    assert ran_on(r, "a1") == "h100"
    assert r.preempts() == [(10, "a0", "preempt", "in_share", "a1")]
    assert ran_on(r, "a0") == "h100"  # and it runs there again when a1 ends at 20,
    assert r.row("a0")[:3] == ("SUCCEEDED", 0, 120)  # its 10 s of work lost (no checkpoints)


def test_no_candidates_on_the_first_type_is_no_fit_even_with_may_stop_search(run):
    # h100 needs preemption but a0 outranks a1: no candidates, so h100 is no_fit and the scan goes on;
    # on a100 a2 (priority 0) is a candidate: preempt, MayStopSearch stops there.
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {"h100": 1, "a100": 1}, in_share_preemption="lower_priority", flavor_fungibility=MAY_STOP),
    )
    jobs = """
    job_id submit_time share duration instance_type priority
    a0     0           A     100      h100          9
    a2     0           A     100      a100          0
    a1     10          A     10       h100|a100     5
    """
    r = run(pol, jobs)
    assert ran_on(r, "a1") == "a100"
    assert r.preempts() == [(10, "a2", "preempt", "in_share", "a1")]


# Kueue "when borrowing while preemption is needed for flavor one": A has no h100 quota; a0 borrows B's
# idle h100; a1 could preempt it (in-share) and still borrow (level 1), or run on its own a100 quota.
BORROW_PREEMPT_JOBS = """
job_id submit_time share duration instance_type priority
a0     0           A     100      h100          0
a1     10          A     10       h100|a100     5
"""


def borrow_preempt_case(run, **fungibility):
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {"a100": 1}, in_share_preemption="lower_priority", flavor_fungibility=fungibility),
        share("B", {"h100": 1}, "LEND"),
    )
    return run(pol, BORROW_PREEMPT_JOBS)


def test_borrowing_while_preemption_is_needed_stops_with_both_may_stop_search(run):
    r = borrow_preempt_case(run, **MAY_STOP)
    assert ran_on(r, "a1") == "h100"
    assert r.preempts() == [(10, "a0", "preempt", "in_share", "a1")]


def test_borrowing_while_preemption_is_needed_goes_on_with_try_next_flavor_for_borrowing(run):
    # preempt MayStopSearch would stop, but the level is 1 and whenCanBorrow is TryNextFlavor
    r = borrow_preempt_case(run, when_can_borrow="TryNextFlavor", when_can_preempt="MayStopSearch")
    assert ran_on(r, "a1") == "a100"
    assert r.preempts() == []


def test_borrowing_while_preemption_is_needed_goes_on_with_try_next_flavor_for_preemption(run):
    r = borrow_preempt_case(run, when_can_borrow="MayStopSearch", when_can_preempt="TryNextFlavor")
    assert ran_on(r, "a1") == "a100"


# --- the preference, and the best remembered type -------------------------------------------------------

# h100: A is within quota and may reclaim B's borrower b1 (reclaim, level 0). a100: A has no quota but
# C lends its idle a100 (fit, level 1). Both TryNextFlavor: every type is remembered.
PREFERENCE_JOBS = """
job_id submit_time share duration instance_type
b1     0           B     100      h100
a1     10          A     10       h100|a100
"""


def preference_case(run, preference: str):
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {"h100": 1}, flavor_fungibility={**BOTH_TRY, "preference": preference}),
        share("B", {}),
        share("C", {"a100": 1}, "LEND"),
    )
    return run(pol, PREFERENCE_JOBS)


def test_borrowing_over_preemption_takes_the_better_mode(run):
    r = preference_case(run, "BorrowingOverPreemption")
    assert ran_on(r, "a1") == "a100"  # fit (level 1) beats reclaim (level 0)
    assert r.preempts() == []


def test_preemption_over_borrowing_takes_the_lower_borrowing_level(run):
    r = preference_case(run, "PreemptionOverBorrowing")
    assert ran_on(r, "a1") == "h100"  # reclaim at level 0 beats fit at level 1
    assert r.preempts() == [(10, "b1", "preempt", "cross_share", "a1")]


def test_reclaim_is_a_better_mode_than_preempt(run):
    # h100: preempt a0 in-share (level 0 once a0 is gone); a100: reclaim B's borrower b1 (level 0).
    # whenCanPreempt TryNextFlavor goes past both; reclaim wins though h100 comes first.
    pol = policy(
        {"h100": 1, "a100": 1},
        share("A", {"h100": 1, "a100": 1}, in_share_preemption="lower_priority"),
        share("B", {}),
    )
    jobs = """
    job_id submit_time share duration instance_type priority
    a0     0           A     100      h100          0
    b1     0           B     100      a100          0
    a1     10          A     10       h100|a100     5
    """
    r = run(pol, jobs)
    assert ran_on(r, "a1") == "a100"
    assert r.preempts() == [(10, "b1", "preempt", "cross_share", "a1")]


def test_equal_modes_and_levels_go_to_the_earlier_type(run):
    # Both types: preempt in-share, level 0; the earlier in flavor order (a100) is used.
    pol = policy(
        {"h100": 1, "a100": 1},
        share(
            "A", {"h100": 1, "a100": 1}, in_share_preemption="lower_priority", flavor_order=["a100", "h100"]
        ),
    )
    jobs = """
    job_id submit_time share duration instance_type priority
    a0     0           A     100      h100          0
    a2     0           A     100      a100          0
    a1     10          A     10       h100|a100     5
    """
    r = run(pol, jobs)
    assert ran_on(r, "a1") == "a100"
    assert r.preempts() == [(10, "a2", "preempt", "in_share", "a1")]


# --- unschedulable, RESULT.json's type, fair sharing, the calendar, strict FIFO ---------------------------


def test_unschedulable_only_if_every_type_is(run):
    # h100: A is RESERVE with 1 (3 > 1: quota); a100: the pool has 2 (3 > 2: pool). a2 fits a100.
    pol = policy({"h100": 4, "a100": 2}, share("A", {"h100": 1, "a100": 2}, "RESERVE"))
    jobs = """
    job_id submit_time share duration instance_type instance_count
    a1     0           A     10       h100|a100     3
    a2     0           A     10       h100|a100     2
    """
    r = run(pol, jobs)
    assert r.row("a1")[0] == "UNSCHEDULABLE"
    assert r.row("a1")[-1] == "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"  # the first type's reason
    assert ran_on(r, "a1") is None  # it never ran
    assert (r.row("a2")[0], ran_on(r, "a2")) == ("SUCCEEDED", "a100")


def test_the_result_names_the_last_runs_type(run):
    # x2 borrows y's b at 0, is reclaimed at 1 by y's job, and runs on its own a at 5.
    pol = {
        "instance_types": {"a": {}, "b": {}},
        "capacity": {"a": 1, "b": 1},
        "shares": [{"name": "x", "capacity": {"a": 1}}, {"name": "y", "capacity": {"b": 1}}],
    }
    jobs = """
    job_id submit_time share duration instance_type
    x1     0           x     5        a|b
    x2     0           x     5        a|b
    y1     1           y     5        b
    """
    r = run(pol, jobs)
    assert r.events[:4] == [
        (0, "x1", "start", None, None),
        (0, "x2", "start", None, None),
        (1, "x2", "preempt", "cross_share", "y1"),
        (1, "y1", "start", None, None),
    ]
    assert (r.row("x2")[:3], ran_on(r, "x2")) == (("SUCCEEDED", 0, 10), "a")
    assert ran_on(r, "y1") == "b"


def test_fair_sharing_with_several_types(run):
    # Fair sharing on: B borrows A's h100 with b1; a1 (A within quota on h100: reclaim, level 0) and
    # a100 is C's RESERVE quota (no_fit): a1 reclaims b1 (cross_share, A within its quota).
    pol = policy(
        {"h100": 2, "a100": 1},
        share("A", {"h100": 1}),
        share("B", {"h100": 1}),
        share("C", {"a100": 1}, "RESERVE"),
        fair_sharing={},
    )
    jobs = """
    job_id submit_time share duration instance_type
    b0     0           B     100      h100
    b1     0           B     100      h100
    a1     10          A     10       h100|a100
    """
    r = run(pol, jobs)
    assert r.preempts() == [(10, "b1", "preempt", "cross_share", "a1")]
    assert ran_on(r, "a1") == "h100"


def test_a_type_that_comes_with_the_calendar(run):
    # a100 has no capacity until 50: a1 waits on h100 (held by a0 until 100), then runs on a100 at 50.
    pol = policy(
        {"h100": 1, "a100": 0},
        share("A", {"h100": 1}),
        changes=[{"time": 50, "capacity": {"a100": 1}}],
    )
    jobs = """
    job_id submit_time share duration instance_type
    a0     0           A     100      h100
    a1     10          A     10       h100|a100
    """
    r = run(pol, jobs)
    assert r.row("a1")[:3] == ("SUCCEEDED", 50, 60)
    assert ran_on(r, "a1") == "a100"


def test_strict_fifo_head_with_several_types(run):
    # strict_fifo: a1 heads A's queue; h100 is taken, a100 free: a1 runs on a100, then a2 (h100 only)
    # waits behind nothing and runs when a0 ends.
    pol = policy({"h100": 1, "a100": 1}, share("A", {"h100": 1, "a100": 1}), queueing="strict_fifo")
    jobs = """
    job_id submit_time share duration instance_type
    a0     0           A     100      h100
    a1     10          A     10       h100|a100
    a2     20          A     10       h100
    """
    r = run(pol, jobs)
    assert (ran_on(r, "a1"), r.row("a1")[1]) == ("a100", 10)
    assert r.row("a2")[1] == 100


# --- validation and round trips -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "field", "words"),
    [
        ({"flavor_order": ["h100", "v100"]}, "shares[0].flavor_order[1]", "unknown instance type 'v100'"),
        ({"flavor_order": ["h100", "h100"]}, "shares[0].flavor_order[1]", "listed twice"),
        ({"flavor_order": "h100"}, "shares[0].flavor_order", "must be a list"),
        ({"flavor_fungibility": {"when_can_borrow": "Borrow"}},
         "shares[0].flavor_fungibility.when_can_borrow", "is not one of MayStopSearch, TryNextFlavor"),
        ({"flavor_fungibility": {"when_can_preempt": 1}}, "shares[0].flavor_fungibility.when_can_preempt",
         "is not one of"),
        ({"flavor_fungibility": {"preference": "PreemptionOverBorrowing"}},
         "shares[0].flavor_fungibility.preference", "needs when_can_borrow and when_can_preempt both"),
        ({"flavor_fungibility": {"speed": 1}}, "shares[0].flavor_fungibility.speed", "unknown setting"),
    ],
)  # fmt: skip
def test_bad_flavor_settings_name_the_share_and_field(options, field, words):
    with pytest.raises(InputError) as caught:
        Policy.from_dict(policy({"h100": 1, "a100": 1}, share("team-x", {"h100": 1}, **options)))
    assert caught.value.field == field
    assert words in str(caught.value)
    assert "'team-x'" in str(caught.value)


def test_flavor_settings_round_trip_and_defaults_are_not_written():
    plain = Policy.from_dict(policy({"h100": 1, "a100": 1}, share("A", {"h100": 1})))
    assert "flavor_order" not in plain.to_dict()["shares"][0]
    assert "flavor_fungibility" not in plain.to_dict()["shares"][0]
    assert plain.types_in_order("A") == ["h100", "a100"]
    spec = share("A", {"h100": 1}, flavor_order=["a100", "h100"],
                 flavor_fungibility={**BOTH_TRY, "preference": "PreemptionOverBorrowing"})  # fmt: skip
    full = Policy.from_dict(policy({"h100": 1, "a100": 1}, spec))
    assert Policy.from_dict(full.to_dict()) == full
    written = full.to_dict()["shares"][0]["flavor_fungibility"]
    assert written == {**BOTH_TRY, "preference": "PreemptionOverBorrowing"}
