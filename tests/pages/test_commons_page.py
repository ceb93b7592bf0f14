"""The commons-games page in a real browser: a viewer opens it from the top bar, every chart draws
something (priority mix, bursts per user and per week, stranded RESERVE quota), and the trace,
run and unit chosen stay in the URL."""

from __future__ import annotations

import re

import pytest

from tests.pages.conftest import look_at
from tests.service.test_commons_api import bursty_columns, commons_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles):
    return commons_study("games", bursty_columns(1500), variants=1)


def test_a_viewer_sees_every_game_with_charts(page_as, study):
    page = page_as("viewer")
    page.goto("/")
    page.locator(".menu-group summary", has_text="Reports").click()
    page.locator(".topnav").get_by_role("link", name="Commons").click()
    page.wait_for_url(re.compile(r"/commons/"))
    assert page.locator('.topnav a[aria-current="page"]').text_content() == "Commons"
    for heading in ("Priority inflation", "Job splitting", "RESERVE hoarding"):
        assert page.get_by_role("heading", name=heading).count() == 1
    assert "research-01" in page.locator("#offenders-table").text_content()
    assert "vision" in page.locator("#hoarding-table").inner_text()
    assert page.locator("#inflation-table tbody tr").count() == 4  # the demo trace's four teams
    look_at(page, "commons-priority", "#priority-top-chart")
    look_at(page, "commons-high", "#priority-high-chart")
    look_at(page, "commons-offenders", "#offenders-chart")
    look_at(page, "commons-bursts", "#bursts-chart")
    look_at(page, "commons-stranded", "#stranded-chart")


def test_choices_stay_in_the_url(page_as, study):
    page = page_as("finance")  # the $ unit is for finance and admin
    page.goto("/commons/")
    other = study.runs.exclude(policy=study.baseline).get()
    page.get_by_label("Run (for RESERVE hoarding)").select_option(str(other.pk))
    page.wait_for_url(re.compile(rf"run={other.pk}"))
    page.get_by_label("Stranded quota in").select_option("usd")
    page.wait_for_url(re.compile(r"unit=usd"))
    assert f"policy {other.policy_name}" in page.locator("#hoarding-run").inner_text()
    page.goto(page.url)
    assert page.get_by_label("Run (for RESERVE hoarding)").input_value() == str(other.pk)
    assert page.get_by_label("Stranded quota in").input_value() == "usd"
    assert "($)" in page.locator("#stranded-chart").get_attribute("aria-label")
    look_at(page, "commons-stranded-usd", "#stranded-chart")
