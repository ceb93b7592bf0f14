"""The overview answers each role's first question (planner/web/views/first_screens.py): finance
reads the idle and stranded $ of the newest priced study per policy, a team member finds their job
(and the forecasts)."""

import re

import pytest

from planner.capacity.models import InstanceType
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(small_policy, small_trace, eager_celery):
    return launch_study(StudyLaunch(name="lab", trace=small_trace, policies=[small_policy]))


def _money(run: Run) -> tuple[float, float, float]:
    metrics = run.metrics
    return (
        metrics["pool"]["capacity_usd"],
        metrics["pool"]["idle_usd"],
        sum(share["stranded_usd"] for share in metrics["shares"]),
    )


def test_finance_reads_idle_and_stranded_dollars_first(page_as, study):
    run = study.runs.get()
    pool, idle, stranded = _money(run)
    # 4 GPUs at $1.5 for 2.5 h (t2 runs from 0.5 h to 2.5 h) = $15; the jobs used 2x1 h + 1x2 h
    # + 1x0.25 h = 4.25 GPU-hours ($6.375; i2 needs 2 and infer, quota 1, may not borrow): $8.625 idle.
    assert run.summary["horizon"]["seconds"] == 9000
    assert pool == pytest.approx(15.0)
    assert idle == pytest.approx(8.625)
    page = page_as("finance")
    page.goto("/")
    first = page.locator("main section").first
    assert first.get_attribute("id") == "overview-money"
    answer = page.locator("#money-answer").inner_text()
    assert "$8.62 of the pool's $15.00 sat idle (57.5 %)" in answer  # cents below $100
    assert f"${stranded:,.2f} was stranded" in answer
    cells = page.locator("#money-table tbody tr").first.locator("td").all_inner_texts()
    assert cells[0].startswith("lab-policy") and cells[1:] == ["15.00", "8.62", f"{stranded:,.2f}"]
    report = page.locator("#overview-money").get_by_role("link", name=re.compile("finance report"))
    assert report.get_attribute("href") == f"/finance/?study={study.pk}"
    look_at(page, "overview-finance", full_page=False)


def test_a_study_without_prices_is_not_finances_answer(client_as, study):
    InstanceType.objects.update(hourly_price=0)
    launch_study(StudyLaunch(name="unpriced", trace=study.trace, policies=[study.baseline]))
    page = client_as("finance").get("/").content.decode()
    assert "1 newer study has no prices" in page  # the $1.5 one is shown, the $0 one said
    InstanceType.objects.update(hourly_price=0)
    Run.objects.filter(study=study).delete()
    page = client_as("finance").get("/").content.decode()
    assert "No finished study has prices yet" in page


def test_a_viewer_sees_no_dollars_and_finds_their_job(page_as, study):
    page = page_as("viewer", width=390)
    page.goto("/")
    assert page.locator("#overview-money").count() == 0 and "$" not in page.locator("main").inner_text()
    assert page.locator("main section").first.get_attribute("id") == "overview-find-job"
    page.get_by_label("Find my job: id, user or name").fill("i1")
    page.get_by_role("button", name="Find my job").click()
    page.wait_for_url(f"**/studies/{study.pk}/jobs/?q=i1")
    assert "i1" in page.locator("#job-results").inner_text()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


def test_the_overview_links_forecasts(client_as, study):
    page = client_as("viewer").get("/").content.decode()
    assert '<a href="/forecasts/" id="overview-forecasts">Forecasts</a>' in page
