"""What counts as a $ figure (planner.accounts.money), on a hand-made metrics-shaped value."""

from __future__ import annotations

from planner.accounts.money import is_money_key, strip_money


def test_every_dollar_field_goes_at_any_depth_and_gpu_hours_stay():
    metrics = {
        "summary": {"rerun_gpu_hours": 2.0, "rerun_cost_usd": 3.0},
        "shares": [{"name": "a", "own_gpu_hours": 5.0, "own_usd": 7.5, "by_type": {"gpu": {"own": 1}}}],
        "periods": {"shares": {"a": {"own": [1.0, 2.0], "usd": {"own": [1.5, 3.0]}}}},
        "types": {"gpu": {"gpus": 1, "hourly_price": 1.5}},
        "series": {"t": [0.0, 60.0, 120.0]},
    }
    assert strip_money(metrics) == {
        "summary": {"rerun_gpu_hours": 2.0},
        "shares": [{"name": "a", "own_gpu_hours": 5.0, "by_type": {"gpu": {"own": 1}}}],
        "periods": {"shares": {"a": {"own": [1.0, 2.0]}}},
        "types": {"gpu": {"gpus": 1}},
        "series": {"t": [0.0, 60.0, 120.0]},
    }
    assert metrics["summary"]["rerun_cost_usd"] == 3.0  # a copy: the stored metrics are untouched


def test_names_that_only_look_like_money_are_kept():
    assert is_money_key("idle_usd") and is_money_key("usd") and is_money_key("hourly_price")
    # the curves' keys: one rule for every app
    assert is_money_key("rerun_usd_per_month") and is_money_key("monthly_price_usd")
    assert not is_money_key("usd_share") and not is_money_key("users") and not is_money_key(3)
