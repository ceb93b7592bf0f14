"""The "worth in GPUs" search: the verdicts it asks for, step by step, and the sentence it ends on."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.worth import Criterion, Metric, SearchRange, conclusion, matches, next_sizes, worth_sentence


def point(unschedulable=0, mean=100.0, **p95):
    return {
        "unschedulable": unschedulable,
        "wait": {"mean": mean},
        "shares": {name: {"wait": {"p95": value}} for name, value in p95.items()},
    }


def run_search(search: SearchRange, needed: int) -> list[list[int]]:
    """Every step's sizes when A matches from ``needed`` instances up (waits fall with size)."""
    verdicts: dict[int, bool] = {}
    steps = []
    while sizes := next_sizes(search, verdicts):
        steps.append(sizes)
        verdicts.update({size: size >= needed for size in sizes})
    return steps, conclusion(search, verdicts)


def test_first_step_is_today_and_the_first_rungs_up():
    # 1,560 x 1.125 = 1,755 and x 1.25 = 1,950, rounded up.
    assert next_sizes(SearchRange(today=1560, parallel=3), {}) == [1560, 1755, 1950]


def test_a_bracket_is_split_at_evenly_spaced_sizes():
    # short at 1,755, matching at 1,950: gap 195 split in 4 -> +49, +98, +146 (rounded).
    verdicts = {1560: False, 1755: False, 1950: True}
    assert next_sizes(SearchRange(today=1560, parallel=3), verdicts) == [1804, 1853, 1901]


def test_the_search_ends_on_a_whole_instance():
    # The static split needs 1,872: the bracket closes on (1,871, 1,872).
    steps, found = run_search(SearchRange(today=1560, parallel=3), needed=1872)
    assert found.done and found.exact and found.size == 1872 and found.bracket == (1871, 1872)
    # each step replays at most 3 sizes; from a 195-wide bracket, about log4(195) + 1 steps.
    assert all(len(step) <= 3 for step in steps) and len(steps) <= 6


def test_a_policy_that_already_matches_is_searched_downward():
    # Lend-and-borrow matches the static split with fewer GPUs: found below today's 100.
    steps, found = run_search(SearchRange(today=100, parallel=2), needed=70)
    assert steps[1] == [87, 75]  # the ladder down: x0.875, x0.75
    assert found.size == 70 and found.exact


def test_a_policy_that_never_matches_stops_at_the_upper_bound():
    steps, found = run_search(SearchRange(today=10, upper=20, parallel=2), needed=10**6)
    assert found.done and found.size is None and found.bracket == (20, None)
    assert steps[-1][-1] == 20


def test_one_size_a_step_is_a_bisection():
    steps, found = run_search(SearchRange(today=8, parallel=1), needed=13)
    assert all(len(step) == 1 for step in steps) and found.size == 13


def test_matching_on_every_share_allows_a_minute_or_two_percent():
    target = point(a=3600.0, b=0.0)
    # a: 3,600 s + max(60, 72) = 3,672 s allowed; b: 0 + 60 s.
    assert matches(point(a=3672.0, b=60.0), target, Criterion()) == (True, "matches")
    ok, why = matches(point(a=3700.0, b=0.0), target, Criterion())
    assert not ok and why == "a: 61.7 min against 60.0 min"


def test_refusing_more_jobs_is_never_as_good():
    ok, why = matches(point(unschedulable=3, a=0.0), point(unschedulable=1, a=10.0), Criterion())
    assert not ok and why == "3 unschedulable jobs, against 1"


def test_urgent_and_mean_criteria_compare_one_value():
    target = point(mean=500.0, a=100.0, b=9000.0)
    # only a is urgent: b's long p95 does not count.
    assert matches(point(a=120.0, b=99999.0), target, Criterion(Metric.URGENT_P95, ("a",)))[0]
    assert not matches(point(mean=600.0, a=0.0, b=0.0), target, Criterion(Metric.MEAN_WAIT))[0]


def test_the_sentence_says_gpus_the_change_and_the_money():
    sentence = worth_sentence(
        policy_a="The static split", policy_b="lend-and-borrow", metric_words="p95 waits",
        today_gpus=1560, answer_gpus=1872, top_gpus=6240,
        extra_monthly_usd=569_400, b_rerun_monthly_usd=12_345.6,
    )  # fmt: skip
    assert sentence == (
        "The static split needs 1,872 GPUs (+312, +20%) to match lend-and-borrow's p95 waits at "
        "1,560: $569,400 a month more at list price, against $12,346 a month of rerun cost under "
        "lend-and-borrow."
    )


def test_the_sentence_without_money_says_rerun_gpu_hours():
    sentence = worth_sentence(
        policy_a="pooling", policy_b="split", metric_words="mean wait", today_gpus=100,
        answer_gpus=90, top_gpus=400, b_rerun_gpu_hours_month=12.4,
    )  # fmt: skip
    assert sentence == (
        "pooling needs only 90 GPUs (-10, -10%) to match split's mean wait at 100, against 12 "
        "GPU-hours a month of reruns under split."
    )
    assert "$" not in sentence


def test_bad_ranges_name_their_field():
    with pytest.raises(InputError, match="parallel"):
        SearchRange(today=10, parallel=0)
    with pytest.raises(InputError, match="upper"):
        SearchRange(today=10, upper=5)


def test_the_sentence_when_a_matches_at_todays_size():
    sentence = worth_sentence(
        policy_a="pooling", policy_b="split", metric_words="mean wait", today_gpus=100,
        answer_gpus=100, top_gpus=400, extra_monthly_usd=0.0, b_rerun_monthly_usd=5.0,
    )  # fmt: skip
    assert sentence == "pooling already matches split's mean wait at 100 GPUs."
