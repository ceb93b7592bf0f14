"""A training plan as the policy changes of SEMANTICS.md section 9."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.training_plans import TrainingPlan, with_training_plan

POOL = {
    "name": "pool",
    "capacity": {"gpu": 10},
    "shares": [{"name": "a", "capacity": {"gpu": 6}}, {"name": "b", "capacity": {"gpu": 4}}],
}


def test_a_plan_on_a_fixed_pool_is_four_changes():
    # +4 for a from 100 to 200: pool 10 -> 14 and a 6 -> 10 at 100, both back at 200.
    out = with_training_plan(POOL, TrainingPlan("a", "gpu", 4, 100, 200))
    assert out["changes"] == [
        {"time": 100, "capacity": {"gpu": 14}},
        {"time": 100, "share": "a", "capacity": {"gpu": 10}},
        {"time": 200, "capacity": {"gpu": 10}},
        {"time": 200, "share": "a", "capacity": {"gpu": 6}},
    ]
    assert "changes" not in POOL  # the input is left alone


def test_a_plan_adds_on_top_of_changes_already_planned():
    # The pool grows to 12 at 150 (hardware arrives): during the plan it is 12 + 4 = 16, and the plan
    # ends on 12, not on the 10 it started from.
    policy = {**POOL, "changes": [{"time": 150, "capacity": {"gpu": 12}}]}
    out = with_training_plan(policy, TrainingPlan("a", "gpu", 4, 100, 200))
    assert out["changes"] == [
        {"time": 100, "capacity": {"gpu": 14}},
        {"time": 100, "share": "a", "capacity": {"gpu": 10}},
        {"time": 150, "capacity": {"gpu": 16}},
        {"time": 200, "capacity": {"gpu": 12}},
        {"time": 200, "share": "a", "capacity": {"gpu": 6}},
    ]


def test_iso_times_are_kept_as_written_and_ordered_as_times():
    out = with_training_plan(POOL, TrainingPlan("b", "gpu", 2, "2026-01-01T00:00:00Z", "2026-02-01"))
    assert [change["time"] for change in out["changes"]] == [
        "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", "2026-02-01", "2026-02-01"
    ]  # fmt: skip
    assert out["changes"][1] == {"time": "2026-01-01T00:00:00Z", "share": "b", "capacity": {"gpu": 6}}


@pytest.mark.parametrize(
    "plan, field",
    [
        (TrainingPlan("c", "gpu", 1, 0, 10), "share"),
        (TrainingPlan("a", "tpu", 1, 0, 10), "instance_type"),
        (TrainingPlan("a", "gpu", 0, 0, 10), "count"),
        (TrainingPlan("a", "gpu", 1, 10, 10), "end"),
        (TrainingPlan("a", "gpu", 1, "yesterday", 10), "start"),
    ],
)
def test_a_plan_that_does_not_fit_names_its_field(plan, field):
    with pytest.raises(InputError) as caught:
        with_training_plan(POOL, plan)
    assert caught.value.field == field
