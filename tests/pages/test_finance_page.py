"""The finance report in a real browser: who may open it, the choices kept in the URL, the
capacity check, the chart, a second policy side by side, and the CSV download."""

from __future__ import annotations

import math
import re

import pytest

from tests.pages.conftest import look_at
from tests.service.test_reports_views import replayed_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles):
    return replayed_study("finance", jobs=1500, variants=1)


@pytest.mark.parametrize("role", ["finance", "admin"])
def test_finance_and_admin_read_the_report(page_as, study, role):
    page = page_as(role)
    page.goto("/finance/")
    assert page.locator('.topnav a[aria-current="page"]').text_content() == "Finance"
    baseline = study.runs.get(policy=study.baseline)
    assert page.get_by_label("Policy (run)").input_value() == str(baseline.pk)
    assert "✓ Adds up" in page.locator("#check-title + p").inner_text()
    # The answer comes first: the pool's cost and what was idle, stranded, lent and rerun, and
    # the chargeback per share with its totals, on the first screen (900 px tall).
    headline = page.locator("#finance-headline")
    assert [t.split("\n")[0] for t in headline.locator("li").all_inner_texts()] == [
        "Pool cost",
        "Idle",
        "Stranded",
        "Lent",
        "Rerun",
    ]
    assert headline.bounding_box()["y"] < 900
    shares = baseline.metrics["shares"]
    assert page.locator("#chargeback tbody tr").count() == len(shares)
    assert page.locator("#chargeback tfoot td").first.inner_text() == "All shares"
    assert "Every figure here is measured over one window" in page.locator("#window-note").inner_text()
    # the glossary is folded at the end
    page.locator(".reports-definitions summary").click()
    definitions = page.locator(".reports-definitions").inner_text()
    for word in ("Lent", "Idle", "Stranded"):
        assert word in definitions
    assert "in proportion to what each had lendable" in definitions
    look_at(page, f"finance-{role}", "#finance-chart")


def test_a_viewer_is_refused_and_sees_no_finance_link(page_as, study):
    page = page_as("viewer")
    response = page.goto("/finance/")
    assert response.status == 403
    page.goto("/")
    assert page.locator(".topnav").get_by_text("Finance").count() == 0


def test_choices_are_kept_in_the_url_and_a_second_policy_is_compared(page_as, study):
    page = page_as("finance")
    page.goto("/finance/")
    page.get_by_label("Period", exact=True).select_option("week")
    page.wait_for_url(re.compile(r"period=week"))
    page.get_by_label("Idle capacity").select_option("usage")
    page.wait_for_url(re.compile(r"idle=usage"))
    periods = page.locator("#finance-periods tbody td:first-child").all_inner_texts()
    days = len(study.runs.get(policy=study.baseline).metrics["periods"]["day"])
    # a last week shorter than 7 days says so ("week 1 (partial: 6.0 of 7 days)")
    assert {p.split(" (partial")[0] for p in periods} == {f"week {n + 1}" for n in range(math.ceil(days / 7))}
    assert days % 7 == 0 or periods[-1].endswith(f"(partial: {days % 7:.1f} of 7 days)")
    headings = page.locator("#finance-periods thead th").all_inner_texts()
    assert any(h.startswith("Idle shared out") for h in headings)
    other = study.runs.exclude(policy=study.baseline).get()
    page.get_by_label("Compare with").select_option(str(other.pk))
    page.wait_for_url(re.compile(rf"compare={other.pk}"))
    assert f"against {other.policy_name}" in page.locator("#compare-title").inner_text()
    assert page.locator("#finance-compare tbody tr").count() >= 5  # two shares at least, unassigned, total
    shared = page.url
    page.goto(shared)
    assert page.get_by_label("Period", exact=True).input_value() == "week"
    assert page.get_by_label("Idle capacity").input_value() == "usage"
    assert page.get_by_label("Compare with").input_value() == str(other.pk)
    look_at(page, "finance-compared", "#finance-chart-other")


def test_csv_download_of_the_report(page_as, study):
    page = page_as("admin")
    page.goto("/finance/?period=month&idle=quota")
    with page.expect_download() as download:
        page.locator("#whole-title").locator("xpath=..").get_by_text("Download CSV").click()
    assert download.value.suggested_filename.endswith("-month-quota.csv")
    with open(download.value.path(), encoding="utf-8-sig") as stream:
        lines = stream.read().splitlines()
    assert lines[0].startswith("period,line,Capacity (GPU-hours),Capacity ($)")
    assert any(line.startswith("month 1 (30 days),Pool total,") for line in lines)
