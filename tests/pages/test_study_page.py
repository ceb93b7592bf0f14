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


def open_sections(page) -> None:
    """Open every folded chart section of the study page (each fetches and draws its charts)."""
    for section in ("#usage-section", "#waits-section", "#reasons-section", "#preemptions-section"):
        if page.locator(section).get_attribute("open") is None:
            page.locator(f"{section} > summary").click()


def test_the_comparison_shows_verdicts_charts_and_tables(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    # the answer first, in words: the decision sentence names the share and the numbers
    decision = page.locator("#decision").inner_text()
    assert "longest-waiting share's p95 wait" in decision and " h " in decision
    assert "$" not in decision  # a viewer reads no $
    cards = page.locator(".verdict .card")
    assert cards.count() == 3
    assert "baseline" in cards.first.inner_text()
    other = cards.nth(1).inner_text()
    assert "p95 wait, all jobs" in other and "Rerun cost" in other and "Unschedulable jobs" in other
    assert "Stranded quota" in other and "Idle capacity" in other
    assert re.search(r", (better|worse|same)", other)  # the difference in words, not colour alone
    # every share's p95 wait in one table, each share a link to its detail
    assert page.locator("#share-waits tbody tr").count() == 4
    look_at(page, "study-comparison", "#focus-cdf")
    # the folded charts are not drawn (nor carried in the page) until their section opens
    assert page.locator("[data-plotly-url]").count() == 3 + 5 + 5
    assert page.locator("[data-drawn='yes']").count() == 1
    open_sections(page)
    for chart in ("#wait-percentiles", "#preemptions", "#rerun-cost", "#jct-percentiles", "#wait-reasons"):
        look_at(page, "study-comparison", chart)
    drawn = page.locator("[data-plotly]")
    assert drawn.count() == 1 + 3 + 5 + 5  # the share's curve; usage per policy, CDF per share and all, bars
    for index in range(drawn.count()):
        drawn.nth(index).scroll_into_view_if_needed()
        page.wait_for_function("el => el.dataset.drawn === 'yes'", arg=drawn.nth(index).element_handle())


def test_plotly_is_loaded_only_by_pages_that_draw_a_chart(page_as, study):
    """Plotly is 4.8 MB: the study list (no chart) never fetches it, the study page (a chart on its
    first screen) fetches it once and draws, whatever its folded sections fetch later."""
    page = page_as("viewer")
    fetched: list[str] = []
    page.on("request", lambda request: fetched.append(request.url))
    page.goto("/studies/")
    page.wait_for_load_state("networkidle")
    assert not [url for url in fetched if "plotly" in url]
    page.goto(f"/studies/{study.pk}/")
    page.wait_for_function("() => document.querySelector('#focus-cdf').dataset.drawn === 'yes'")
    open_sections(page)
    page.wait_for_function("() => document.querySelector('#wait-reasons').dataset.drawn === 'yes'")
    assert len([url for url in fetched if "plotly" in url and url.endswith(".js")]) == 1


def test_a_share_picked_shows_its_detail(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    page.locator("#share-waits").get_by_role("link", name="vision").click()
    page.wait_for_url(re.compile(r"focus=vision"))
    assert page.locator("#focus-share").input_value() == "vision"
    assert page.locator("#table-data-focus thead th").first.inner_text() == "vision"
    assert "Wait time of vision" in page.locator("#focus-cdf").get_attribute("aria-label")
    page.get_by_role("combobox", name="Share").select_option("research")
    page.wait_for_url(re.compile(r"focus=research"))
    assert page.locator("#table-data-focus thead th").first.inner_text() == "research"
    # the shares drawn in the folded charts (a repeated parameter) survive picking a share
    page.goto(f"/studies/{study.pk}/?share=nlp&share=vision")
    page.locator("#share-waits").get_by_role("link", name="research").click()
    page.wait_for_url(re.compile(r"focus=research"))
    assert "share=nlp" in page.url and "share=vision" in page.url
    page.get_by_role("combobox", name="Share").select_option("nlp")
    page.wait_for_url(re.compile(r"focus=nlp"))
    assert "share=nlp" in page.url and "share=vision" in page.url


def test_the_usage_view_and_table_order_are_kept_in_the_url(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    page.locator("#usage-section > summary").click()
    page.get_by_label("Show", exact=True).select_option("vision")
    page.wait_for_url(re.compile(r"usage=vision"))
    # the section stays open with the choice, and its charts are drawn for it
    page.locator(f"#usage-{study.runs.order_by('id').first().pk}[data-drawn='yes']").wait_for()
    assert "Usage of vision's quota" in page.locator("#usage-section .reports-usage").inner_text()
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
    page.locator("details.long-table > summary").click()  # the share table is folded: 12 rows
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
    assert "failed and was not compared" in page.locator("#decision").inner_text()
    look_at(page, "study-done-after-progress", "#focus-cdf")


def test_the_comparison_fits_a_narrow_screen(page_as, study):
    page = page_as("viewer", width=390, height=800)
    page.goto(f"/studies/{study.pk}/")
    page.locator("#waits-section > summary").click()
    page.locator("#wait-percentiles[data-drawn='yes']").wait_for()
    # Wide tables scroll inside their own box; the page itself does not scroll sideways.
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    look_at(page, "study-narrow", "#wait-percentiles")
