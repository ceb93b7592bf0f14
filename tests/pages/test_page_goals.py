"""The goals every page is held to, in headless Chromium: at most 1 MB of HTML, the load event
within 1.5 s at 1280 px, and no horizontal page scroll at 390 px (wide tables scroll inside their
card). Over the whole demo, loaded from the repository alone, and over a stored million-job study.

Speed is judged by benchmarks, not by the suite: the load event is measured and printed here,
and held to 1.5 s only with PLANNER_CHECK_LOAD_TIME=1 (on a quiet machine, as a benchmark)."""

from __future__ import annotations

import os

import pytest

from planner.demo.loader import DemoLoader
from planner.studies.models import Run, Study
from planner.traces.models import Trace
from tests.pages.conftest import look_at
from tests.pages.million import million_job_study

pytestmark = pytest.mark.django_db(transaction=True)

MAX_HTML_BYTES = 1_000_000
MAX_LOAD_SECONDS = 1.5
# A study page at a glance (issue 26): 3 policies x 10 shares fit 3,000 px at 1280 px wide and
# 400 KB once drawn, loaded within 1 s; finance's report within 4,000 px.
MAX_STUDY_HEIGHT = 3000
MAX_STUDY_RENDERED_BYTES = 400_000
MAX_STUDY_LOAD_SECONDS = 1.0
MAX_FINANCE_HEIGHT = 4000
CHECK_LOAD_TIME = os.environ.get("PLANNER_CHECK_LOAD_TIME") == "1"
NARROW = 390


def load_seconds(page) -> float:
    """From navigation start to the end of the load event, as the browser measured it."""
    timing = page.evaluate(
        "() => { const t = performance.getEntriesByType('navigation')[0]; return t.loadEventEnd; }"
    )
    return timing / 1000


def check_pages(page_as, role: str, paths: list[str]) -> dict[str, tuple[int, float]]:
    wide, narrow = page_as(role), page_as(role, width=NARROW, height=844)
    measured = {}
    for path in paths:
        # A first visit warms the server (and puts a finished study on its common window, once).
        wide.goto(path, timeout=120_000)
        response = wide.goto(path, wait_until="load", timeout=60_000)
        assert response.status == 200, path
        size, seconds = len(response.body()), load_seconds(wide)
        measured[path] = (size, seconds)
        assert size <= MAX_HTML_BYTES, f"{path}: {size:,} bytes of HTML"
        if CHECK_LOAD_TIME:
            assert seconds <= MAX_LOAD_SECONDS, f"{path}: load event after {seconds:.2f} s"
        narrow.goto(path, wait_until="load", timeout=60_000)
        overflow = narrow.evaluate("() => document.documentElement.scrollWidth")
        assert overflow <= NARROW, f"{path}: the page scrolls sideways at {NARROW} px ({overflow} px wide)"
    return measured


def at_a_glance(page, path: str, drawn: str | None = None) -> tuple[int, int, float]:
    """(page height in px, rendered HTML in bytes once its charts are drawn, load event in s)."""
    page.goto(path, timeout=120_000)  # warm
    page.goto(path, wait_until="load", timeout=60_000)
    seconds = load_seconds(page)
    if drawn:
        page.locator(f"{drawn}[data-drawn='yes']").wait_for()
    height = page.evaluate("() => document.documentElement.scrollHeight")
    rendered = page.evaluate("() => new Blob([document.documentElement.outerHTML]).size")
    return height, rendered, seconds


def test_a_million_job_study_meets_the_goals(page_as, roles):
    study = million_job_study()
    other = study.runs.order_by("-id").first()
    paths = [
        f"/studies/{study.pk}/",
        f"/finance/?study={study.pk}",
        f"/finance/?study={study.pk}&compare={other.pk}&period=day",
        f"/studies/{study.pk}/jobs/",
        f"/studies/{study.pk}/jobs/?q=job-00001&share=research",
    ]
    measured = check_pages(page_as, "finance", paths)
    print(
        "\nmillion-job study, HTML and load event at 1280 px:",
        {path: f"{size / 1024:.0f} KB, {seconds:.2f} s" for path, (size, seconds) in measured.items()},
    )


def test_the_demo_from_the_repository_alone_meets_the_goals(page_as, roles, settings, tmp_path):
    settings.BASE_DIR = tmp_path / "fresh-clone" / "planner"  # no ../shared beside it
    studies = DemoLoader().load(itp=True)
    # the ITP study comes from the trace the planner ships
    assert [s.name for s in studies][-1].startswith("ITP 2021") and Trace.objects.get(
        name="itp-2021"
    ).job_count == 69351
    paths = [
        "/",
        "/policies/",
        "/traces/",
        "/studies/",
        "/studies/new/",
        "/commons/",
        "/calibration/",
        "/advisor/",
    ]
    paths += [
        f"/policies/{pk}/" for pk in Study.objects.values_list("runs__policy", flat=True).distinct()[:3]
    ]
    paths += [f"/traces/{trace.pk}/" for trace in Trace.objects.all()]
    for study in Study.objects.all():
        run = Run.objects.filter(study=study).order_by("id").first()
        paths += [
            f"/studies/{study.pk}/",
            f"/finance/?study={study.pk}",
            f"/studies/{study.pk}/jobs/",
            f"/studies/{study.pk}/why/?run={run.pk}&job_id={study.trace.load_jobs().job_id[0]}",
        ]
    measured = check_pages(page_as, "admin", paths)
    print(
        "\ndemo, HTML and load event at 1280 px:",
        {p: f"{n / 1024:.0f} KB, {t:.2f} s" for p, (n, t) in measured.items()},
    )
    # the calibration page says where the worked example comes from and how to add it
    page = page_as("viewer")
    page.goto("/calibration/")
    assert "does not ship them" in page.locator("#openb-note").inner_text()
    itp = Study.objects.get(name__startswith="ITP")
    wide = page_as("finance")
    glance = {}
    for study in Study.objects.all():
        glance[f"/studies/{study.pk}/"] = at_a_glance(wide, f"/studies/{study.pk}/", "#focus-cdf")
        glance[f"/finance/?study={study.pk}"] = at_a_glance(wide, f"/finance/?study={study.pk}")
    print(
        "\ndemo at a glance, 1280 px (height, rendered HTML, load event):",
        {p: f"{h:,} px, {n / 1024:.0f} KB, {t:.2f} s" for p, (h, n, t) in glance.items()},
    )
    height, rendered, seconds = glance[f"/studies/{itp.pk}/"]
    assert itp.runs.count() == 3 and len(itp.runs.first().metrics["shares"]) == 10
    assert height <= MAX_STUDY_HEIGHT, f"the ITP study page is {height:,} px tall"
    assert rendered <= MAX_STUDY_RENDERED_BYTES, f"the ITP study page is {rendered:,} bytes drawn"
    if CHECK_LOAD_TIME:
        assert seconds <= MAX_STUDY_LOAD_SECONDS, f"the ITP study page loads in {seconds:.2f} s"
    for study in Study.objects.all():
        height = glance[f"/finance/?study={study.pk}"][0]
        assert height <= MAX_FINANCE_HEIGHT, f"finance of {study.name}: {height:,} px"
    # the decision sentence of the ITP study, from its runs
    wide.goto(f"/studies/{itp.pk}/")
    decision = wide.locator("#decision").inner_text()
    assert "itp-2021-full-pooling cuts the longest-waiting share's p95 wait from" in decision
    assert "(cluster03)" in decision and "itp-2021-no-preemption changes nothing" in decision
    page.goto(f"/studies/{itp.pk}/")
    look_at(page, "demo-itp-study", "#focus-cdf")
    page.locator("#waits-section > summary").click()
    look_at(page, "demo-itp-study-waits", "#wait-percentiles")
    narrow = page_as("finance", width=NARROW, height=844)
    narrow.goto(f"/finance/?study={itp.pk}")
    look_at(narrow, "demo-itp-finance-390")
