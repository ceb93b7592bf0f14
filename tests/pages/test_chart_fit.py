"""Charts fit what they show: no title under a legend (the study's usage charts, finance's
weekly chart, commons: planner.js pushes a wrapped legend below the title), the Pareto front's
axes fit its points (not from 0), and the shares table of a policy fits 1280 px."""

import pytest

from planner.web.charts import fit_range
from tests.pages.conftest import look_at
from tests.pages.test_study_page import open_sections
from tests.service.test_commons_api import bursty_columns, commons_study
from tests.service.test_reports_views import replayed_study

pytestmark = pytest.mark.django_db(transaction=True)

# Every drawn chart with a title and a legend: [id, title box, legend box], in page pixels.
BOXES = """() => Array.from(document.querySelectorAll('[data-plotly][data-drawn="yes"]')).flatMap(el => {
    const title = el.querySelector('.gtitle'), legend = el.querySelector('.legend');
    if (!title || !legend) return [];
    const box = r => [r.left, r.top, r.right, r.bottom];
    return [[el.id, box(title.getBoundingClientRect()), box(legend.getBoundingClientRect())]];
})"""


def _draw_all(page) -> None:
    """Open the folded sections (the study page draws their charts only then) and bring every chart
    into view until it is drawn."""
    if page.locator("#usage-section").count():
        open_sections(page)
    charts = page.locator("[data-plotly]")
    for index in range(charts.count()):
        charts.nth(index).scroll_into_view_if_needed()
        page.wait_for_function("el => el.dataset.drawn", arg=charts.nth(index).element_handle())


def _overlapping(page) -> list:
    _draw_all(page)

    def apart(t, legend) -> bool:
        return legend[0] >= t[2] or legend[2] <= t[0] or legend[1] >= t[3] or legend[3] <= t[1]

    return [(chart, t, legend) for chart, t, legend in page.evaluate(BOXES) if not apart(t, legend)]


def test_the_axis_range_fits_the_points():
    assert fit_range([40.0, 50.0], floor=0, ceiling=100) == pytest.approx([39.0, 51.0])
    assert fit_range([0.5, 2.5], floor=0.0) == pytest.approx([0.3, 2.7])
    assert fit_range([0.0, 1.0], floor=0.0) == [0.0, 1.1]  # never below the floor
    assert fit_range([99.0, 100.0], ceiling=100.0) == [98.9, 100.0]
    assert fit_range([5.0]) == [4.5, 5.5]  # one point: a tenth of it each side
    assert fit_range([]) is None


@pytest.mark.parametrize("width", [1280, 390])
def test_no_title_sits_under_a_legend_on_the_study_and_finance_pages(page_as, roles, width):
    study = replayed_study("legends", jobs=800, variants=2)
    page = page_as("finance", width=width)
    page.goto(f"/studies/{study.pk}/")
    assert _overlapping(page) == []
    look_at(page, f"legends-study-{width}")
    page.goto(f"/finance/?study={study.pk}&period=week")
    assert _overlapping(page) == []
    look_at(page, f"legends-finance-{width}")


@pytest.mark.parametrize("width", [1280, 390])
def test_no_title_sits_under_a_legend_on_commons(page_as, roles, width):
    commons_study("legend-games", bursty_columns(1500), variants=1)
    page = page_as("viewer", width=width)
    page.goto("/commons/")
    assert _overlapping(page) == []


def test_the_shares_table_of_a_policy_fits_1280_px(page_as, roles):
    study = replayed_study("wide", jobs=300, variants=1)
    page = page_as("admin")
    page.goto(f"/policies/{study.baseline_id}/")
    table = page.locator("#shares-table")
    width = table.evaluate("t => t.scrollWidth")
    assert width <= table.evaluate("t => t.parentElement.clientWidth"), width  # was 1,316 px
