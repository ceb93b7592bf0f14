"""Issue 12 on the study page in a real browser: a viewer sees GPU-hours but no $ (cards, tables,
rerun chart), finance sees both; a run whose worker stopped answering says so, and the note follows
the run while the page polls. Screenshots go to tests/pages/screenshots/."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from planner.studies.models import Run, RunStatus
from tests.pages.conftest import look_at
from tests.service.test_reports_views import replayed_study

pytestmark = pytest.mark.django_db(transaction=True)
AMOUNT = re.compile(r"\$\s?[0-9]")


@pytest.fixture
def study(roles):
    return replayed_study("sec-pages", jobs=1500, variants=2)


def test_a_viewer_sees_gpu_hours_and_no_dollars_finance_sees_both(page_as, study):
    viewer = page_as("viewer")
    viewer.set_default_timeout(60_000)  # the comparison page with its charts, on a busy machine
    viewer.goto(f"/studies/{study.pk}/")
    viewer.locator(".verdict .card").first.wait_for()
    viewer.locator("#preemptions-section > summary").click()  # its charts are fetched when opened
    viewer.locator("#rerun-cost[data-drawn='yes']").wait_for()
    text = viewer.locator("main").inner_text()
    assert not AMOUNT.search(text), AMOUNT.search(text)
    assert "Rerun cost (GPU-hours)" in text and "Rerun cost ($)" not in text
    look_at(viewer, "study-viewer-no-dollars", "#rerun-cost")
    finance = page_as("finance")
    finance.set_default_timeout(60_000)
    finance.goto(f"/studies/{study.pk}/")
    finance.locator(".verdict .card").first.wait_for()
    assert "Rerun cost ($)" in finance.locator("main").inner_text()


def test_a_silent_worker_is_named_with_when_the_run_is_retried(page_as, study, settings):
    settings.PLANNER_HEARTBEAT_STALE_SECONDS = 120
    runs = list(study.runs.order_by("id"))
    Run.objects.filter(pk=runs[0].pk).update(
        status=RunStatus.RUNNING, progress=0.4, metrics=None, worker="celery@w1", attempts=1,
        heartbeat=timezone.now() - timedelta(seconds=40),
    )  # fmt: skip
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    row = page.locator(f'tr[data-run="{runs[0].pk}"]')
    assert re.search(r"celery@w1 stopped answering 4\d s ago; unless it answers again, it goes back to the "
                     r"queue at \d\d:\d\d:\d\d UTC for attempt 2 of 3", row.inner_text())  # fmt: skip
    look_at(page, "study-silent-worker")
    # the worker answers again: the note goes away at the next poll
    Run.objects.filter(pk=runs[0].pk).update(heartbeat=timezone.now(), progress=0.6)
    page.wait_for_function(
        f"!document.querySelector('tr[data-run=\"{runs[0].pk}\"]').innerText.includes('stopped answering')",
        timeout=15_000,
    )
