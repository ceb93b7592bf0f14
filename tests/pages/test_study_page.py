"""The study page in a real browser: the comparison of a replayed study (verdict cards, charts
drawn, sortable tables with the state in the URL, CSV), and progress bars that follow running
runs and turn into the comparison by themselves. Screenshots go to tests/pages/screenshots/."""

from __future__ import annotations

import re

import pytest
from django.utils import timezone

from planner.studies.models import Run, RunStatus
from tests.pages.conftest import look_at
from tests.service.test_reports_views import read_csv, replayed_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles):
    return replayed_study("pages", jobs=1500, variants=2)


def test_the_comparison_shows_verdicts_charts_and_tables(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    cards = page.locator(".verdict .card")
    assert cards.count() == 3
    assert "baseline" in cards.first.inner_text()
    other = cards.nth(1).inner_text()
    assert "p95 wait, research" in other and "Rerun cost" in other and "Unschedulable jobs" in other
    assert re.search(r", (better|worse|same)", other)  # the difference in words, not colour alone
    look_at(page, "study-comparison", "#wait-percentiles")
    for chart in ("#preemptions", "#rerun-cost", "#jct-percentiles", "#wait-reasons"):
        look_at(page, "study-comparison", chart)
    drawn = page.locator("[data-plotly]")
    assert drawn.count() == 3 + 5 + 5  # usage per policy, wait CDF per share and all jobs, five bars
    for index in range(drawn.count()):
        assert drawn.nth(index).get_attribute("data-drawn") == "yes"


def test_the_usage_view_and_table_order_are_kept_in_the_url(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    page.get_by_label("Show").select_option("vision")
    page.wait_for_url(re.compile(r"usage=vision"))
    assert "Usage of vision's quota" in page.locator("#usage-title ~ .reports-usage").inner_text()
    header = page.locator("#table-data-policies thead th", has_text="Wait p95 (h)")
    header.locator("button").click()
    header.locator("button").click()
    assert "sort=policies" in page.url and "desc" in page.url
    shared = page.url
    page.goto(shared)
    column = page.locator("#table-data-policies thead th").all_inner_texts().index(header.inner_text())
    cells = page.locator(f"#table-data-policies tbody tr td:nth-child({column + 1})")
    values = [float(cells.nth(i).get_attribute("data-value")) for i in range(cells.count())]
    assert values == sorted(values, reverse=True)
    assert page.locator("#usage-view").input_value() == "vision"
    look_at(page, "study-usage-one-share", f"#usage-{study.runs.order_by('id').first().pk}")


def test_csv_download_of_the_share_table(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    with page.expect_download() as download:
        page.locator("#table-shares").locator("xpath=..").get_by_text("Download CSV").click()
    path = download.value.path()
    with open(path, "rb") as stream:
        content = stream.read()

    class Response:
        streaming = False

    response = Response()
    response.content = content
    rows = read_csv(response)
    assert rows[0][:3] == ["Share", "Policy", "Jobs"]
    assert {row[1] for row in rows[1:]} == {"pages-configured", "pages-static-split", "pages-full-pooling"}


def test_progress_bars_follow_running_runs_and_the_page_shows_the_comparison_when_done(page_as, study):
    runs = list(study.runs.order_by("id"))
    finished = {run.pk: run.metrics for run in runs}
    now = timezone.now()
    Run.objects.filter(pk=runs[0].pk).update(
        status=RunStatus.RUNNING, progress=0.3, heartbeat=now, metrics=None
    )
    Run.objects.filter(pk=runs[1].pk).update(status=RunStatus.QUEUED, progress=0.0, metrics=None)
    Run.objects.filter(pk=runs[2].pk).update(
        status=RunStatus.FAILED, error="row 12, duration: -5 is negative", metrics=None
    )
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    bar = page.locator(f'tr[data-run="{runs[0].pk}"] progress')
    assert float(bar.get_attribute("value")) == pytest.approx(0.3)
    assert "row 12, duration: -5 is negative" in page.locator(f'tr[data-run="{runs[2].pk}"]').inner_text()
    look_at(page, "study-running")

    Run.objects.filter(pk=runs[0].pk).update(progress=0.8, heartbeat=timezone.now())
    Run.objects.filter(pk=runs[1].pk).update(status=RunStatus.RUNNING, progress=0.1, heartbeat=timezone.now())
    page.wait_for_function(
        f"document.querySelector('tr[data-run=\"{runs[0].pk}\"] progress').value > 0.75", timeout=10_000
    )
    assert page.locator(f'tr[data-run="{runs[1].pk}"] .status').inner_text() == "running"
    page.reload()  # the bars survive a reload: they come from the database
    assert float(
        page.locator(f'tr[data-run="{runs[0].pk}"] progress').get_attribute("value")
    ) == pytest.approx(0.8)

    for run in runs[:2]:
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.SUCCEEDED, progress=1.0, metrics=finished[run.pk]
        )
    page.locator(".verdict .card").first.wait_for(timeout=15_000)  # reloaded by itself
    assert page.locator(".verdict .card").count() == 2
    assert "row 12, duration: -5 is negative" in page.locator(".reports-failed").inner_text()
    look_at(page, "study-done-after-progress", "#wait-percentiles")


def test_the_comparison_fits_a_narrow_screen(page_as, study):
    page = page_as("viewer", width=390, height=800)
    page.goto(f"/studies/{study.pk}/")
    page.locator("#wait-percentiles[data-drawn='yes']").wait_for()
    # Wide tables scroll inside their own box; the page itself does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    look_at(page, "study-narrow", "#wait-percentiles")
