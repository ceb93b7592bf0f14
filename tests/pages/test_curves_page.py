"""The capacity-curve and worth-search pages in a real browser: a curve's three charts (one line per
policy) with $ columns for finance only; an admin starts a worth search from the form and reads the
answer in one sentence; the overview and the study page link here. Screenshots go to
tests/pages/screenshots/."""

from __future__ import annotations

import pytest
from django.test import Client

from planner.capacity.models import Policy
from planner.curves.launch import CurveLaunch, start_curve
from planner.curves.models import CapacityCurve, WorthSearch
from planner.curves.tasks import replay_curve_point
from planner.demo.loader import full_pooling, static_split
from scheduling.capacity_plans import TrainingPlan
from tests.pages.conftest import GPU_TYPE, look_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def urls_imported(db) -> None:
    """The URL conf imported before the browser's first request (seconds on a busy machine)."""
    Client().get("/login/")


@pytest.fixture
def page_of(page_as):
    """``page_as`` with 30 s to load a page: the list page's forms and the study page take a while
    on a busy 2-core machine (this is no timing check)."""

    def build(role: str):
        page = page_as(role)
        page.set_default_navigation_timeout(30_000)
        page.set_default_timeout(30_000)
        return page

    return build


@pytest.fixture
def family(roles, small_policy) -> list[Policy]:
    """lab-policy, its static split and its full pooling, on the 4-instance lab pool."""
    base = small_policy.to_policy_dict()
    made = [small_policy]
    for name, transform in (("lab-split", static_split), ("lab-pooled", full_pooling)):
        made.append(Policy.create_from_dict(transform(base), pool=small_policy.pool, name=name))
    return made


def replayed(curve: CapacityCurve) -> CapacityCurve:
    """``curve`` with each of its points replayed here, all succeeded."""
    for pk in curve.points.values_list("pk", flat=True):
        replay_curve_point.apply(args=[pk])
    assert curve.status == "succeeded"
    return curve


@pytest.fixture
def curve(family, small_trace):
    made = start_curve(CurveLaunch(trace=small_trace, policies=family, sizes=[2, 3, 4, 6, 8]), enqueue=False)
    return replayed(made)


def test_a_curve_draws_one_line_per_policy(page_of, curve):
    page = page_of("finance")
    page.goto(f"/curves/{curve.pk}/")
    look_at(page, "curve-finance", "#curve-wait")
    names = page.locator("#curve-wait").evaluate("el => el._fullData.map(t => [t.name, t.x.length])")
    assert names == [["lab-policy", 5], ["lab-split", 5], ["lab-pooled", 5]]
    # the split at 2 instances: train's quota rounds to 1, and its 2-instance job can never run.
    assert page.locator("#curve-points tbody tr").count() == 15
    assert "Pool, $ a month" in page.locator("#curve-points").inner_text()
    page.get_by_label("against").select_option("usd")
    page.get_by_role("button", name="Show").click()
    page.wait_for_url("**x=usd**")
    axis = page.locator("#curve-rerun").evaluate("el => el.layout.xaxis.title.text")
    assert axis == "pool, $ a month at list price"


def test_viewers_see_gpus_not_dollars(page_of, curve):
    page = page_of("viewer")
    page.goto(f"/curves/{curve.pk}/")
    look_at(page, "curve-viewer", "#curve-utilization")
    text = page.locator("main").inner_text()
    assert "$" not in text and "GPU-hours a month" in text
    assert page.get_by_label("against").count() == 0


def test_an_admin_finds_what_pooling_is_worth(page_of, family, small_trace, eager_celery):
    page = page_of("admin")
    page.goto(f"/curves/?trace={small_trace.pk}&policies={family[1].pk}&policies={family[2].pk}")
    look_at(page, "curves-list-empty")
    form = page.locator("#worth-form")
    # the link filled the form: A is the first policy named, B the last
    assert form.get_by_label("Policy A").input_value() == str(family[1].pk)
    assert form.get_by_label("Policy B").input_value() == str(family[2].pk)
    form.get_by_label("Parallel", exact=True).fill("2")
    form.get_by_role("button", name="Search").click()
    page.wait_for_url("**/curves/worth/*/")
    search = WorthSearch.objects.get()
    assert search.status == "succeeded" and search.created_by.username == "admin"
    sentence = page.locator("#worth-sentence").inner_text()
    assert sentence.startswith("lab-split ") and "lab-pooled" in sentence and "$" in sentence
    look_at(page, "worth-search", "#worth-chart")
    page.goto("/")
    assert sentence in page.locator("#overview-worth").inner_text()  # the overview's answer


def test_bad_sizes_are_shown_next_to_the_field(page_of, family, small_trace):
    page = page_of("admin")
    page.goto("/curves/")
    form = page.locator("#curve-form")
    form.get_by_label("Trace", exact=True).select_option(label="lab-week")
    form.get_by_label("Policies").select_option(label="lab-split")
    form.get_by_label("Sizes").fill("4, four")
    form.get_by_role("button", name="Replay at every size").click()
    errors = page.locator('#curve-form [data-errors-for="curve-sizes"]')
    assert "'four' is not a whole number" in errors.inner_text()


def test_the_study_page_links_to_a_curve_of_its_policies(page_of, family, small_trace, eager_celery):
    from planner.studies.launch import StudyLaunch, launch_study

    study = launch_study(StudyLaunch(name="lab", trace=small_trace, policies=family[:2]))
    page = page_of("viewer")
    page.goto(f"/studies/{study.pk}/")
    href = page.locator("#curve-link").get_attribute("href")
    assert href == f"/curves/?trace={small_trace.pk}&policies={family[0].pk}&policies={family[1].pk}"


@pytest.fixture
def planned_curve(family, small_trace):
    """The split and the pooling at 2 to 6 instances, and one more instance for train during the
    first two hours on the split: t2 (submitted at 0.5 h) no longer waits for t1's hour to end."""
    plan = TrainingPlan(GPU_TYPE, 1, "train", 0, 7200)
    made = start_curve(
        CurveLaunch(
            trace=small_trace,
            policies=family[1:],
            sizes=[2, 4, 6],
            plans=[(family[1], plan)],
        ),
        enqueue=False,
    )
    return replayed(made)


def test_a_training_plan_is_a_labelled_star_and_a_sentence(page_of, planned_curve):
    page = page_of("finance")
    page.goto(f"/curves/{planned_curve.pk}/")
    look_at(page, "curve-plan-finance", "#curve-wait")
    traces = page.locator("#curve-wait").evaluate(
        "el => el._fullData.map(t => [t.name, t.x.length, t.marker && t.marker.symbol])"
    )
    assert traces[-1] == ["lab-split +1 x ml.g5.xlarge for train, hours 0-2", 1, "star"]
    sentence = page.locator("#curve-plans .plan-sentence").inner_text()
    assert sentence.startswith("The plan cuts train's p95 wait from ") and "$" in sentence
    assert "per $1,000" in sentence
    assert page.get_by_role("button", name="Make this plan a policy").count() == 0  # finance reads only


def test_viewers_read_a_plan_in_gpu_hours(page_of, planned_curve):
    page = page_of("viewer")
    page.goto(f"/curves/{planned_curve.pk}/")
    look_at(page, "curve-plan-viewer", "#curve-wait")
    text = page.locator("#curve-plans").inner_text()
    assert "GPU-hours" in text and "per 1,000 GPU-hours" in text and "$" not in text


def test_an_admin_makes_the_plan_a_policy_and_compares_it_in_a_study(page_of, family, planned_curve):
    page = page_of("admin")
    page.goto(f"/curves/{planned_curve.pk}/")
    page.get_by_role("button", name="Make this plan a policy").click()
    page.wait_for_url("**/studies/new/**")
    made = Policy.objects.get(parent=family[1])
    assert made.name == "lab-split + 1 x ml.g5.xlarge for train" and len(made.change_specs()) == 4
    checked = page.locator("input[name=policies]:checked").evaluate_all("els => els.map(e => e.value)")
    assert {str(family[1].pk), str(made.pk)} <= set(checked)
    assert "lab-split + 1 x ml.g5.xlarge for train made" in page.locator("main").inner_text()
    assert (
        page.get_by_label("Name").input_value()
        == "lab-split with and without +1 x ml.g5.xlarge for train, hours 0-2"
    )
    look_at(page, "curve-plan-study-form")
