"""The study page carries only what its first screen draws: the charts of each folded section
come in one request, ``/studies/<id>/charts/<section>.json`` (the same query string), as each role
may read them."""

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


def test_the_page_names_its_folded_charts_and_carries_only_the_first(study):
    page = signed_in("viewer").get(f"/studies/{study.pk}/").content.decode()
    figures = re.findall(r'<script id="([^"]+)" type="application/json">', page)
    assert figures == ["focus-cdf-data"]  # one share's wait curve; the rest on demand
    lazy = re.findall(r'id="([^"]+)" data-plotly="[^"]+" data-plotly-url="([^"]+)"', page)
    assert len(lazy) == 3 + 5 + 5  # usage per policy, CDF per share and all jobs, five bar charts
    urls = {url for _, url in lazy}
    assert {re.sub(r"\?.*", "", url).rsplit("/", 1)[1] for url in urls} == {
        "usage.json", "waits.json", "reasons.json", "preemptions.json",
    }  # fmt: skip
    viewer = signed_in("viewer")
    answers = {url: viewer.get(url.replace("&amp;", "&")) for url in urls}
    for url, response in answers.items():
        assert response.status_code == 200, url
        assert "$" not in response.content.decode(), url  # a viewer reads no $
    for element, url in lazy:  # every chart of the page is in its section's answer, with data
        chart = answers[url].json()["charts"][element]
        assert set(chart) == {"figure", "empty"} and chart["figure"]["data"], element


def test_a_section_follows_the_query_string_and_finance_reads_its_dollars(study):
    run = study.runs.order_by("id").first()
    usage = signed_in("viewer").get(f"/studies/{study.pk}/charts/usage.json?usage=vision").json()
    assert "vision" in usage["charts"][f"usage-{run.pk}"]["figure"]["layout"]["title"]["text"]
    waits = signed_in("viewer").get(f"/studies/{study.pk}/charts/waits.json?share=nlp").json()["charts"]
    assert sorted(waits) == ["jct-percentiles", "wait-cdf-1", "wait-cdf-2", "wait-percentiles"]
    assert waits["wait-cdf-1"]["figure"]["layout"]["title"]["text"] == "Wait time of nlp, by policy"
    rerun = signed_in("finance").get(f"/studies/{study.pk}/charts/preemptions.json").json()
    assert "$" in json.dumps(rerun["charts"]["rerun-cost"])


def test_unknown_sections_and_strangers_are_refused(study):
    viewer = signed_in("viewer")
    response = viewer.get(f"/studies/{study.pk}/charts/nothing.json")
    assert response.status_code == 404
    assert signed_in(None).get(f"/studies/{study.pk}/charts/preemptions.json").status_code == 403


def test_cards_of_a_pool_without_prices_are_in_gpu_hours_even_for_finance(study):
    def cards(client) -> str:
        page = client.get(f"/studies/{study.pk}/").content.decode()
        start = page.index('<ul class="cards verdict">')
        return page[start : page.index("</ul>", start)]

    priced = cards(signed_in("finance"))
    assert "Idle capacity" in priced and "$" in priced and "GPU-hours" in priced
    for run in study.runs.all():  # the pool's instance types lose their price
        metrics = run.metrics
        for spec in metrics["types"].values():
            spec["hourly_price"] = 0.0
        type(run).objects.filter(pk=run.pk).update(metrics=metrics)
    unpriced = cards(signed_in("finance"))
    assert "Idle capacity" in unpriced and "Stranded quota" in unpriced and "$" not in unpriced
    decision = signed_in("finance").get(f"/studies/{study.pk}/").content.decode()
    assert "No instance type of the pool has an hourly price" in decision
