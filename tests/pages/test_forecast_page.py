"""The forecast page in a real browser, as a viewer: "the demo pool now" (the ITP demo cut at its
busiest instant) -> the table of jobs with the chart of their start bands and each share's queue ->
the search box finds one job. Screenshots go to tests/pages/screenshots/."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from planner.demo.loader import DemoLoader, itp_trace_path
from planner.traces.models import Trace, read_upload
from scheduling.quota_tables import itp_policy_dict
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)

MONEY_AMOUNT = re.compile(r"\$\s?[0-9]")


@pytest.fixture(autouse=True)
def urls_imported(db) -> None:
    """The URL conf imported before the browser's first request (seconds on a busy machine)."""
    Client().get("/login/")


@pytest.fixture
def itp_demo(roles) -> None:
    """The part of ``manage.py load_demo`` the demo pool needs: the ITP trace and its policy."""
    DemoLoader().policy_family(itp_policy_dict(name="itp-2021", hourly_price=2.5), "itp-2021")
    Trace.store(read_upload(itp_trace_path(), format="itp-2021"), name="itp-2021", format="itp-2021")


def test_a_viewer_forecasts_the_demo_pool_now_and_finds_a_job(page_as, itp_demo, eager_celery):
    page = page_as("viewer")
    page.set_default_timeout(180_000)  # the cut replays the ITP trace once, on a busy 2-core machine
    page.set_default_navigation_timeout(180_000)
    page.goto("/forecasts/")
    # (the menu item sits in the closed "Plan" dropdown)
    assert page.locator('nav a[href="/forecasts/"]').get_attribute("aria-current") == "page"
    page.locator("#id_demo-samples").fill("2")
    page.locator("#id_demo-horizon_days").fill("1")
    page.get_by_role("button", name="Forecast the demo pool now").click()
    page.wait_for_url(re.compile(r"/forecasts/\d+/$"))
    page.locator("#forecast-jobs").wait_for()

    heading = page.locator("h1").inner_text()
    assert heading.startswith("The demo pool now (ITP 2021, day ")
    # 295 running and 1,735 waiting at the busiest instant; the table shows the first page of 50
    assert "295 jobs running and 1,735 waiting" in page.locator(".lede").inner_text()
    rows = page.locator("#forecast-jobs tbody tr")
    assert rows.count() == 50
    assert "page 1 of 41" in page.locator("#job-count").inner_text()
    assert page.locator("#share-queues tbody tr").count() == 10  # ten clusters, ten shares
    look_at(page, "forecast-demo-viewer", chart="#forecast-bands")
    assert not MONEY_AMOUNT.search(page.locator("main").inner_text())
    assert "Queued work ($)" not in page.content()

    # waiting jobs first, soonest start first; the running ones are on the last pages
    assert rows.nth(0).locator("td").nth(2).inner_text() == "waiting"
    page.locator("nav.pager a[rel=next]").click()
    page.wait_for_url(re.compile(r"page=2"))
    page.locator("#forecast-jobs").wait_for()
    # "my job": a waiting one from the second page, found by a part of its id
    mine = page.locator("#forecast-jobs tbody tr").nth(3)
    job_id = mine.locator("th").inner_text()
    assert mine.locator("td").nth(2).inner_text() == "waiting"
    page.get_by_label("Find my job (job id or user)").fill(job_id[:13])
    page.get_by_role("button", name="Search").click()
    page.wait_for_url(re.compile(r"search="))
    found = page.locator("#forecast-jobs tbody tr")
    assert job_id in [found.nth(i).locator("th").inner_text() for i in range(found.count())]
    assert f"matching “{job_id[:13]}”" in page.locator("#job-count").inner_text()
    look_at(page, "forecast-demo-search")
