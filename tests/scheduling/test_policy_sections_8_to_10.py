"""Parsing and validating the policy keys of SEMANTICS.md sections 8-10: fair sharing, dated
changes of capacity and quotas, and the RUNNABLE time limit."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.model import Change, FairSharing, FairStrategy, Policy, parse_policy

FINAL = FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE
INITIAL = FairStrategy.LESS_THAN_INITIAL_SHARE


def policy_dict(**extra) -> dict:
    """4 GPUs: A holds 2, B holds 1, one unassigned."""
    return {
        "name": "p",
        "capacity": {"gpu": 4},
        "shares": [{"name": "A", "capacity": {"gpu": 2}}, {"name": "B", "capacity": {"gpu": 1}}],
        **extra,
    }


def error_of(data: dict) -> InputError:
    with pytest.raises(InputError) as caught:
        parse_policy(data)
    return caught.value


def test_defaults_leave_sections_8_to_10_off():
    policy = parse_policy(policy_dict())
    assert policy.fair_sharing is None
    assert policy.changes == ()
    assert policy.runnable_timeout_seconds is None
    assert [s.fair_weight for s in policy.shares] == [1.0, 1.0]
    # nothing new is written for a policy that uses none of it
    assert set(policy.to_dict()) == {
        "name",
        "instance_types",
        "capacity",
        "queueing",
        "startup_seconds",
        "shares",
    }


def test_fair_sharing_without_a_list_takes_both_strategies():
    assert parse_policy(policy_dict(fair_sharing={})).fair_sharing == FairSharing((FINAL, INITIAL))


@pytest.mark.parametrize("listed", [[FINAL.value], [INITIAL.value], [FINAL.value, INITIAL.value]])
def test_each_list_kueue_accepts_is_read_and_written_back(listed):
    policy = parse_policy(policy_dict(fair_sharing={"preemption_strategies": listed}))
    assert [s.value for s in policy.fair_sharing.preemption_strategies] == listed
    assert parse_policy(policy.to_dict()) == policy


@pytest.mark.parametrize(
    "listed", [[], [INITIAL.value, FINAL.value], [FINAL.value, FINAL.value], "LessThanInitialShare"]
)
def test_other_strategy_lists_are_refused(listed):
    err = error_of(policy_dict(fair_sharing={"preemption_strategies": listed}))
    assert err.field == "fair_sharing.preemption_strategies"


def test_an_unknown_strategy_is_named_by_its_index():
    err = error_of(policy_dict(fair_sharing={"preemption_strategies": [FINAL.value, "Fairest"]}))
    assert err.field == "fair_sharing.preemption_strategies[1]"
    assert "'Fairest'" in err.reason


def test_fair_sharing_null_is_off():
    assert parse_policy(policy_dict(fair_sharing=None)).fair_sharing is None


def test_fair_weight_is_read_and_may_be_zero_but_not_negative():
    data = policy_dict()
    data["shares"][0]["fair_weight"] = 0
    data["shares"][1]["fair_weight"] = 2.5
    policy = parse_policy(data)
    assert [s.fair_weight for s in policy.shares] == [0, 2.5]
    assert parse_policy(policy.to_dict()) == policy
    data["shares"][1]["fair_weight"] = -1
    assert error_of(data).field == "shares[1].fair_weight"


def test_a_training_plan_is_four_changes_sorted_by_time_and_read_back():
    # B gets 2 more GPUs from t=100 to t=200; written out of order on purpose
    changes = [
        {"time": 200, "share": "B", "capacity": {"gpu": 1}},
        {"time": 200, "capacity": {"gpu": 4}},
        {"time": 100, "capacity": {"gpu": 6}},
        {"time": 100, "share": "B", "capacity": {"gpu": 3}},
    ]
    policy = parse_policy(policy_dict(changes=changes))
    assert [(c.time, c.share) for c in policy.changes] == [(100, None), (100, "B"), (200, "B"), (200, None)]
    assert parse_policy(policy.to_dict()) == policy
    # in force from T on: before 100 the initial values, at 100 the plan, at 200 back
    assert policy.capacity_at(99.9) == {"gpu": 4}
    assert policy.capacity_at(100) == {"gpu": 6}
    assert policy.quota_at("B", 100) == {"gpu": 3}
    assert policy.quota_at("B", 199) == {"gpu": 3}
    assert policy.quota_at("B", 200) == {"gpu": 1}
    assert policy.capacity_at(200) == {"gpu": 4}
    assert policy.quota_at("A", 150) == {"gpu": 2}


def test_change_times_may_be_iso_8601_like_traces():
    policy = parse_policy(policy_dict(changes=[{"time": "2024-05-01T00:00:00Z", "capacity": {"gpu": 5}}]))
    assert policy.changes == (Change(time=1714521600.0, capacity={"gpu": 5}),)


def test_changes_at_one_time_apply_together():
    # growing B to 3 needs the pool at 6 first; both at t=50 make a valid instant in either order
    changes = [{"time": 50, "share": "B", "capacity": {"gpu": 3}}, {"time": 50, "capacity": {"gpu": 6}}]
    assert parse_policy(policy_dict(changes=changes)).quota_at("B", 50) == {"gpu": 3}


def test_a_quota_over_the_pool_at_some_instant_names_the_change():
    # at t=10 the pool drops to 2 while A and B hold 3: invalid from then on
    err = error_of(
        policy_dict(
            changes=[
                {"time": 5, "share": "A", "capacity": {"gpu": 1}},
                {"time": 10, "capacity": {"gpu": 2}},
                {"time": 20, "share": "A", "capacity": {"gpu": 2}},
            ]
        )
    )
    # A is at 1 from t=5, so t=10 is valid (1 + 1 <= 2); t=20 raises A back: 3 > 2
    assert err.field == "changes[2].capacity.gpu"
    assert "at 20 s" in err.reason and "add up to 3" in err.reason and "pool's 2" in err.reason


def field_of_change(change) -> str:
    return error_of(policy_dict(changes=change)).field


def test_a_change_to_an_unknown_share_or_type_or_a_negative_count_is_refused():
    assert field_of_change([{"time": 1, "share": "Z", "capacity": {"gpu": 1}}]) == ("changes[0].share")
    assert field_of_change([{"time": 1, "capacity": {"tpu": 1}}]) == "changes[0].capacity.tpu"
    assert field_of_change([{"time": 1, "capacity": {"gpu": -3}}]) == "changes[0].capacity.gpu"
    assert field_of_change([{"time": -1, "capacity": {"gpu": 3}}]) == "changes[0].time"
    assert field_of_change([{"time": 1, "capacity": {}}]) == "changes[0].capacity"
    assert field_of_change([{"time": 1}]) == "changes[0].capacity"
    assert field_of_change([{"time": 1, "capacity": {"gpu": 4}, "until": 2}]) == ("changes[0].until")
    assert field_of_change({"time": 1}) == "changes"


def test_runnable_timeout_is_read_and_must_be_positive():
    policy = parse_policy(policy_dict(runnable_timeout_seconds=3600))
    assert policy.runnable_timeout_seconds == 3600
    assert policy.to_dict()["runnable_timeout_seconds"] == 3600
    assert error_of(policy_dict(runnable_timeout_seconds=0)).field == "runnable_timeout_seconds"
    assert error_of(policy_dict(runnable_timeout_seconds="soon")).field == "runnable_timeout_seconds"


def test_policies_built_in_code_compare_with_their_parsed_form():
    policy = Policy.from_dict(policy_dict(changes=[{"time": 1, "capacity": {"gpu": 5}}]))
    assert Policy.from_dict(policy.to_dict()).changes == policy.changes
