"""The job finder in a real browser: search by id and by user, each share's longest waits and
most preempted jobs, and every row linking to the job's timeline; a million-job study too."""

from __future__ import annotations

import re

import pytest

from planner.studies.launch import StudyLaunch, launch_study
from tests.pages.conftest import look_at
from tests.pages.million import million_job_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles, small_policy, small_trace, eager_celery):
    """The lab trace replayed by the task (result file and finder indexes written as in production)."""
    return launch_study(StudyLaunch(name="lab", trace=small_trace, policies=[small_policy]))


def test_a_researcher_finds_a_job_by_id_and_opens_its_timeline(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    page.get_by_role("link", name="Find a job").first.click()
    page.wait_for_url(re.compile(rf"/studies/{study.pk}/jobs/"))
    page.get_by_label("Job id").fill("t")
    page.get_by_role("button", name="Find").click()
    page.wait_for_url(re.compile(r"q=t"))
    # t1 and t2 start with "t" (train's two jobs), in submit order
    assert page.locator("#job-results tbody td:first-child").all_inner_texts() == ["t1", "t2"]
    look_at(page, "job-finder-search")
    page.locator("#job-results").get_by_role("link", name="t2").click()
    page.wait_for_url(re.compile(r"/why/\?run=\d+&job_id=t2"))
    assert "Job t2 of train" in page.locator("#timeline-title").inner_text()


def test_each_share_lists_its_longest_waits_linked_to_timelines(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/jobs/")
    rows = page.locator("#longest-waits tbody tr")
    # at most three jobs a share: train's t1 and t2, infer's i1 (i2 asks for 2 instances, over
    # infer's quota of 1, and LEND may not borrow: it never starts, so it has no wait)
    assert rows.count() == 3
    links = page.locator("#longest-waits tbody td:first-child a")
    assert all("/why/?run=" in href for href in links.evaluate_all("els => els.map(e => e.href)"))
    page.get_by_label("Share", exact=True).select_option("infer")
    page.get_by_role("button", name="Find").click()
    page.wait_for_url(re.compile(r"share=infer"))
    assert set(page.locator("#longest-waits tbody td:nth-child(2)").all_inner_texts()) == {"infer"}


def test_a_million_job_study_is_searched_by_user(page_as, roles):
    study = million_job_study()
    page = page_as("viewer")
    response = page.goto(f"/studies/{study.pk}/jobs/?q=research-0&share=research")
    assert response.status == 200 and len(response.body()) < 1_000_000
    users = page.locator("#job-results tbody td:nth-child(3)").all_inner_texts()
    assert users and all(u.lower().startswith("research-0") for u in users)
    assert page.locator("#longest-waits tbody tr").count() == 20
    look_at(page, "job-finder-million")
