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
    page.goto(f"/studies/{itp.pk}/")
    look_at(page, "demo-itp-study", "#wait-percentiles")
    narrow = page_as("finance", width=NARROW, height=844)
    narrow.goto(f"/finance/?study={itp.pk}")
    look_at(narrow, "demo-itp-finance-390")
