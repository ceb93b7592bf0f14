"""The sweep form: constraints written in words become the API's JSON, limits in words and percent
become knob values, and what cannot be read is refused by line and field."""

import pytest

from planner.advisor.forms import SweepForm, parse_constraint_lines

pytestmark = pytest.mark.django_db


def test_constraints_in_words():
    text = "prod p95 wait <= 1.5 h\n\n  urgent  p95 wait <= 2 h\nutilization >= 70%\nrerun <= 50 GPU-hours"
    assert parse_constraint_lines(text) == [
        {"metric": "p95_wait_seconds", "max": 5400.0, "share": "prod"},
        {"metric": "urgent_p95_wait_seconds", "max": 7200.0},
        {"metric": "utilization", "min": 0.7},
        {"metric": "rerun_gpu_hours", "max": 50.0},
    ]


def test_an_unreadable_constraint_names_its_line():
    with pytest.raises(ValueError, match="line 2: 'prod waits little' is not a constraint"):
        parse_constraint_lines("utilization >= 50%\nprod waits little")


def test_knobs_from_the_form(aws_policy, aws_trace):
    form = SweepForm(
        {
            "trace": aws_trace.pk,
            "base_policy": aws_policy.pk,
            "shares": "QS2, QS3",
            "strategy": ["LEND", "LEND_AND_BORROW"],
            "borrow_limit_percent": "unlimited, 50%",
            "lending_limit": "all, 25",
            "in_share_preemption": ["never"],
            "mode": "random",
            "size": 20,
            "seed": 3,
            "urgent_shares": "QS1",
            "constraints": "QS1 p95 wait <= 1 h",
        }
    )
    assert form.is_valid(), form.errors
    assert form.knobs() == {
        "strategy": ["LEND", "LEND_AND_BORROW"],
        "borrow_limit_percent": [-1, 50],
        "lending_limit": [None, 0.25],
        "in_share_preemption": ["never"],
        "shares": ["QS2", "QS3"],
    }
    assert form.urgent() == ["QS1"]


def test_a_limit_that_is_no_number_is_refused_on_its_field(aws_policy, aws_trace):
    form = SweepForm({"trace": aws_trace.pk, "base_policy": aws_policy.pk, "strategy": ["LEND"],
                      "borrow_limit_percent": "lots", "lending_limit": "all",
                      "in_share_preemption": ["never"], "mode": "grid", "size": 5, "seed": 0})  # fmt: skip
    assert not form.is_valid()
    assert form.errors["borrow_limit_percent"] == ["'lots' is not a number"]


def test_fair_weights_and_fair_sharing_from_the_form(aws_policy, aws_trace):
    form = SweepForm({"trace": aws_trace.pk, "base_policy": aws_policy.pk, "strategy": ["LEND"],
                      "borrow_limit_percent": "unlimited", "lending_limit": "all",
                      "in_share_preemption": ["never"], "fair_weight": "0.5, 1, 2", "fair_sharing": "both",
                      "mode": "grid", "size": 5, "seed": 0})  # fmt: skip
    assert form.is_valid(), form.errors
    knobs = form.knobs()
    # the weights go to every varied share; "both" makes fair sharing one more grid dimension
    assert (knobs["fair_weight"], knobs["fair_sharing"]) == ([0.5, 1, 2], [False, True])
