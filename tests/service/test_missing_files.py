"""A stored file gone from MEDIA_ROOT (a run's outcomes, a trace's jobs: a restored database
without its media folder, a disk cleaned by hand) is an HTTP 410 naming the file, on the pages and
on the API, never a 500; the pages that read no file still answer."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from planner.studies.jobs import finder_root
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run
from planner.studies.tasks import replay_run

pytestmark = pytest.mark.django_db


@pytest.fixture
def run(aws_policy, aws_trace, django_capture_on_commit_callbacks) -> Run:
    """A run replayed by the task, with its outcomes file; its job finder index not yet built."""
    with django_capture_on_commit_callbacks(execute=False):
        study = launch_study(StudyLaunch(name="files", trace=aws_trace, policies=[aws_policy]))
    run = study.runs.get()
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    run.refresh_from_db()
    for folder in finder_root().glob("*"):  # as on a server whose index was never built
        for file in sorted(folder.rglob("*"), reverse=True):
            file.unlink() if file.is_file() else file.rmdir()
        folder.rmdir()
    return run


@pytest.fixture
def reader(db) -> Client:
    user = User.objects.create_user(username="files-reader", password="pw")
    user.groups.add(Group.objects.get_or_create(name="viewer")[0])
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def remove(field) -> str:
    Path(field.path).unlink()
    return field.name


def test_a_missing_outcomes_file_is_a_410_page_naming_it(run, reader):
    name = remove(run.result_file)
    page = reader.get(f"/studies/{run.study_id}/jobs/?run={run.pk}")
    assert page.status_code == 410
    text = page.content.decode()
    assert name in text and "restore the media folder" in text
    assert reader.get(f"/studies/{run.study_id}/").status_code == 200  # the comparison reads no file


def test_a_missing_outcomes_file_is_a_410_on_the_api(run, reader):
    job = run.study.trace.load_jobs().job_id[0]
    name = remove(run.result_file)
    for url in (f"/api/studies/{run.study_id}/jobs/", f"/api/runs/{run.pk}/job-timeline/?job_id={job}"):
        answer = reader.get(url)
        assert answer.status_code == 410, url
        assert answer.json()["missing"] == name and name in answer.json()["detail"]


def test_a_missing_trace_file_is_a_410(run, reader):
    name = remove(run.study.trace.jobs_file)
    page = reader.get(f"/studies/{run.study_id}/jobs/?run={run.pk}&q=1")
    assert page.status_code == 410 and name in page.content.decode()
    assert reader.get(f"/api/runs/{run.pk}/job-timeline/?job_id=x").json()["missing"] == name
