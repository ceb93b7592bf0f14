"""The advisor pages in a real browser: the Pareto front chart (utilization against the urgent p95
wait) and its table; a running sweep shows progress and turns into the front by itself; an admin
starts a sweep from the form and saves a variant as a policy. Screenshots go to
tests/pages/screenshots/."""

from __future__ import annotations

import pytest

from planner.advisor.launch import SweepLaunch, start_sweep
from planner.advisor.models import Sweep
from planner.capacity.models import Policy
from planner.studies.models import Run
from planner.studies.tasks import replay_run
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)

# infer (LEND in the base) tried as RESERVE and as LEND_AND_BORROW unlimited or without borrowing:
# three variants, and the base.
INFER_KNOBS = {
    "shares": ["infer"],
    "strategy": ["RESERVE", "LEND", "LEND_AND_BORROW"],
    "borrow_limit_percent": [-1, 0],
    "lending_limit": [None],
    "in_share_preemption": ["never"],
}


def launch(small_policy, small_trace, **options) -> Sweep:
    return start_sweep(
        SweepLaunch(
            trace=small_trace,
            base_policy=small_policy,
            name="infer options",
            knobs=INFER_KNOBS,
            urgent_shares=["infer"],
            **options,
        ),
        enqueue=False,
    )


def replay_all(sweep: Sweep) -> None:
    for run_id in Run.objects.filter(study=sweep.study).values_list("pk", flat=True):
        replay_run.apply(args=[run_id])


@pytest.fixture
def sweep(roles, small_policy, small_trace) -> Sweep:
    made = launch(small_policy, small_trace)
    replay_all(made)
    assert made.status == "succeeded"
    return made


def test_the_front_is_drawn_and_tabled(page_as, sweep):
    page = page_as("viewer")
    page.goto(f"/advisor/{sweep.pk}/")
    look_at(page, "advisor-front", "#advisor-front")
    drawn = page.locator("#advisor-front").evaluate("el => el._fullData.map(t => [t.name, t.x.length])")
    assert sum(count for _, count in drawn) == 4  # three variants and the base
    assert "Base policy" in [name for name, _ in drawn] and "On the front" in [name for name, _ in drawn]
    # The axes fit the points (charts.fit_range: their span and 12 % of it each side), not from 0.
    axes = page.locator("#advisor-front").evaluate(
        """el => ['x', 'y'].map(a => [el._fullLayout[a + 'axis'].range,
                  el._fullData.flatMap(t => t[a])])"""
    )
    for (low, high), values in axes:
        span = max(values) - min(values)
        assert low <= min(values) and high >= max(values)
        if span == 0:  # all points equal (no wait at all): a unit around them, not 0 to anything
            assert high - low <= 2 * max(1.0, 0.12 * abs(max(values)))
        else:
            assert low >= max(0.0, min(values) - 0.13 * span - 1e-9)
            assert high <= max(values) + 0.13 * span + 1e-9
    rows = page.locator("#front-table tbody tr")
    assert rows.count() == 4
    assert rows.filter(has_text="on the front").count() >= 1
    assert "infer: RESERVE, no in-share preemption" in page.locator("#front-table").inner_text()
    assert page.get_by_role("button", name="Save as policy").count() == 0  # viewers read only
    assert page.locator("#sweep-form").count() == 0


def test_a_constraint_breaker_is_marked(page_as, roles, small_policy, small_trace):
    made = launch(small_policy, small_trace, constraints=[{"metric": "utilization", "min": 0.99}])
    replay_all(made)
    page = page_as("viewer")
    page.goto(f"/advisor/{made.pk}/")
    assert "utilization >= 99%" in page.locator("#constraints").inner_text()
    assert page.locator("#front-table").get_by_text("breaks utilization >= 99%").count() == 4
    look_at(page, "advisor-constrained", "#advisor-front")


def test_a_running_sweep_shows_progress_and_then_the_front(page_as, roles, small_policy, small_trace):
    waiting = launch(small_policy, small_trace)
    page = page_as("viewer")
    page.goto(f"/advisor/{waiting.pk}/")
    assert page.locator("#sweep-body progress").get_attribute("value") == "0.0"
    assert "0 of 4 replays done" in page.locator("#sweep-body").inner_text()
    look_at(page, "advisor-running")
    replay_all(waiting)
    look_at(page, "advisor-done-after-progress", "#advisor-front")


def test_an_admin_sweeps_from_the_form_and_saves_a_point(
    page_as, roles, small_policy, small_trace, eager_celery
):
    page = page_as("admin")
    page.goto("/advisor/")
    assert "No sweep yet" in page.locator("main").inner_text()
    look_at(page, "advisor-list-empty")
    page.get_by_label("Trace", exact=True).select_option(label="lab-week")
    page.get_by_label("Base policy", exact=True).select_option(label="lab-policy")
    page.get_by_label("Shares", exact=True).fill("infer")
    page.get_by_label("Variants", exact=True).fill("5")
    page.get_by_label("Urgent shares", exact=True).fill("infer")
    page.get_by_label("Constraints", exact=True).fill("train p95 wait <= 2 h")
    page.get_by_role("button", name="Sweep and replay").click()
    page.wait_for_url("**/advisor/*/")
    look_at(page, "advisor-started", "#advisor-front")
    sweep = Sweep.objects.get()
    assert sweep.variants.count() == 5 and sweep.created_by.username == "admin"
    assert sweep.constraints == [{"metric": "p95_wait_seconds", "max": 7200.0, "share": "train"}]
    first = sweep.variants.get(number=1)
    page.get_by_label("Name for variant 1").fill("infer-kept")
    page.locator("#front-table tr", has=page.get_by_label("Name for variant 1")).get_by_role(
        "button", name="Save as policy"
    ).click()
    page.wait_for_url(f"**/policies/{first.policy_id}/")
    assert Policy.objects.get(pk=first.policy_id).name == "infer-kept"
    page.goto("/advisor/")
    assert "infer options" not in page.content()  # the sweep was named after its base and trace
    assert page.locator("#sweep-table").get_by_text("lab-policy on lab-week").count() == 1
    look_at(page, "advisor-list")


def test_bad_constraints_are_shown_next_to_the_field(page_as, roles, small_policy, small_trace):
    page = page_as("admin")
    page.goto("/advisor/")
    page.get_by_label("Trace", exact=True).select_option(label="lab-week")
    page.get_by_label("Base policy", exact=True).select_option(label="lab-policy")
    page.get_by_label("Constraints", exact=True).fill("nobody p95 wait <= 1 h")
    page.get_by_role("button", name="Sweep and replay").click()
    error = page.locator('[data-errors-for="constraints"]')
    assert "'nobody' is not a share of the base policy" in error.inner_text()
    assert not Sweep.objects.exists()
