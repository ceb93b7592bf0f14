"""Why did a job wait? The drill-down page and the API endpoint for one job of a run, in a real
browser and through the API (the timeline itself is tested in tests/scheduling/test_pending_timeline.py)."""

from __future__ import annotations

import pytest
from django.test import Client

from planner.studies.models import RunStatus
from planner.studies.tasks import replay_run
from scheduling.result import ReplayResult
from tests.pages.conftest import look_at
from tests.service.test_reports_views import replayed_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles, settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    study = replayed_study("why", jobs=600, variants=1)
    # The drill-down reads a run's stored outcomes: replay the runs through the real task.
    study.runs.update(status=RunStatus.QUEUED, metrics={})
    for run in study.runs.all():
        replay_run.apply(args=(run.pk,))
    return study


def a_job_that_waited(study) -> str:
    run = study.runs.order_by("id").first()
    trace = study.trace.load_jobs()
    with run.result_file.open("rb") as stored:
        outcomes = ReplayResult.load_outcomes(stored)
    waited = (outcomes.queued > 0).nonzero()[0]
    return trace.job_id[int(waited[0])]


def test_the_page_draws_a_waiting_jobs_timeline(page_as, study):
    job_id = a_job_that_waited(study)
    page = page_as("viewer")
    # the job finder's rows link here (tests/pages/test_job_finder.py); an id can also be typed
    page.goto(f"/studies/{study.pk}/why/")
    page.get_by_label("Job ID").fill(job_id)
    page.get_by_role("button", name="Show").click()
    page.wait_for_url(f"**job_id={job_id}**")
    text = page.inner_text("body")
    assert f"Job {job_id}" in text and "waiting" in text
    look_at(page, "study-why", "#job-timeline")


def test_an_unknown_job_is_named_next_to_the_form(page_as, study):
    page = page_as("viewer")
    response = page.goto(f"/studies/{study.pk}/why/?job_id=nope")
    assert response.status == 404
    assert "no job 'nope' in this trace" in page.locator("[role=alert]").inner_text()


def test_the_api_gives_the_same_timeline(client_as, study):
    job_id = a_job_that_waited(study)
    run = study.runs.order_by("id").first()
    response = client_as("viewer").get(f"/api/runs/{run.pk}/job-timeline/", {"job_id": job_id})
    assert response.status_code == 200
    body = response.json()
    assert body["job_id"] == job_id and any(s["state"] == "waiting" for s in body["segments"])
    assert sum(body["waited_by_reason_seconds"].values()) > 0
    assert client_as("viewer").get(f"/api/runs/{run.pk}/job-timeline/").status_code == 400
    assert client_as("viewer").get(f"/api/runs/{run.pk}/job-timeline/", {"job_id": "nope"}).status_code == 404
    anonymous = Client().get(f"/api/runs/{run.pk}/job-timeline/", {"job_id": job_id})
    assert anonymous.status_code in (401, 403)
