"""The study page carries only what its first screen draws: its other charts come one at a time
from ``/studies/<id>/charts/<name>.json`` (the same query string), as each role may read them."""

from __future__ import annotations

import json
import re

import pytest

from planner.studies.models import Study
from tests.service.test_reports_views import replayed_study, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def study(db) -> Study:
    return replayed_study("charts", jobs=400, variants=2)


def test_the_page_names_its_lazy_charts_and_carries_only_the_first(study):
    page = signed_in("viewer").get(f"/studies/{study.pk}/").content.decode()
    figures = re.findall(r'<script id="([^"]+)" type="application/json">', page)
    assert figures == ["focus-cdf-data"]  # one share's wait curve; the rest on demand
    urls = re.findall(r'data-plotly-url="([^"]+)"', page)
    assert len(urls) == 3 + 5 + 5  # usage per policy, CDF per share and all jobs, five bar charts
    viewer = signed_in("viewer")
    for url in urls:
        response = viewer.get(url.replace("&amp;", "&"))
        assert response.status_code == 200, url
        body = response.json()
        assert set(body) == {"figure", "empty"} and body["figure"]["data"], url
        assert "$" not in json.dumps(body["figure"]), url  # a viewer reads no $


def test_a_chart_follows_the_query_string_and_finance_reads_its_dollars(study):
    run = study.runs.order_by("id").first()
    url = f"/studies/{study.pk}/charts/usage-{run.pk}.json?usage=vision"
    figure = signed_in("viewer").get(url).json()["figure"]
    assert "vision" in figure["layout"]["title"]["text"]
    cdf = signed_in("viewer").get(f"/studies/{study.pk}/charts/wait-cdf-1.json?share=nlp").json()
    assert cdf["figure"]["layout"]["title"]["text"] == "Wait time of nlp, by policy"
    rerun = signed_in("finance").get(f"/studies/{study.pk}/charts/rerun-cost.json").json()["figure"]
    assert "$" in json.dumps(rerun)


def test_unknown_charts_and_strangers_are_refused(study):
    viewer = signed_in("viewer")
    for name in ("nothing", "wait-cdf-99", "wait-cdf-x", "usage-0"):
        assert viewer.get(f"/studies/{study.pk}/charts/{name}.json").status_code == 404, name
    assert signed_in(None).get(f"/studies/{study.pk}/charts/preemptions.json").status_code == 403
