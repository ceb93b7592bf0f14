"""The page cache (planner.web.page_cache) on the study and finance pages: a second reader gets the
kept parts, but a reader of another role, another query, figures written again (a rerun) or a
renamed study or policy never gets parts made for something else."""

from __future__ import annotations

import copy
import re

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client, RequestFactory
from django.utils import timezone

from planner.capacity.models import Policy, Pool
from planner.reports.views import study_parts_key
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, Study, recorded_metrics
from planner.studies.tasks import replay_run
from planner.web import page_cache
from tests.service.test_reports_views import replayed_study

MONEY_AMOUNT = re.compile(r"\$\s?[0-9]")  # as tests/security/test_roles_matrix.py reads $ figures


@pytest.fixture(scope="module")
def study_db(django_db_setup, django_db_blocker):
    """One study of two runs whose figures were written as a worker writes them (with a digest)."""
    with django_db_blocker.unblock():
        study = replayed_study("cached", jobs=800, variants=1)
        for run in study.runs.all():
            Run.objects.filter(pk=run.pk).update(**recorded_metrics(run.metrics), finished_at=timezone.now())
    yield study
    with django_db_blocker.unblock():
        policies = list(study.policies.all())
        trace = study.trace
        Study.objects.filter(pk=study.pk).delete()
        Policy.objects.filter(pk__in=[p.pk for p in policies]).delete()
        Pool.objects.filter(pk__in={p.pool_id for p in policies}).delete()
        trace.delete()


@pytest.fixture
def study(study_db, db):
    page_cache.clear()
    yield study_db
    page_cache.clear()


def user(role: str) -> User:
    made = User.objects.create_user(username=f"cache-{role}-{User.objects.count()}", password="pw")
    made.groups.add(Group.objects.get(name=role))
    return made


def client(role: str) -> Client:
    signed_in = Client()
    signed_in.force_login(user(role))
    return signed_in


def page(role: str, study: Study, query: str = "") -> str:
    response = client(role).get(f"/studies/{study.pk}/{query}")
    assert response.status_code == 200
    return response.content.decode()


def key(study: Study, role: str, query: str = "") -> str:
    request = RequestFactory().get(f"/studies/{study.pk}/{query}")
    request.user = user(role)
    runs = list(Run.objects.filter(study=study).order_by("id").defer("metrics"))
    return study_parts_key(request, study, runs)


def test_a_second_reader_gets_the_kept_comparison(study):
    first = page("finance", study)
    assert page_cache.stats == {"hits": 0, "misses": 1}
    second = page("finance", study)
    assert page_cache.stats == {"hits": 1, "misses": 1}
    mark = 'id="verdict-title"'  # the comparison; above it, each reader's own name and CSRF token
    assert first[first.index(mark) :] == second[second.index(mark) :]


def test_a_viewer_never_gets_the_comparison_made_for_finance(study):
    assert MONEY_AMOUNT.search(page("finance", study))  # the rerun cost in $
    viewed = page("viewer", study)
    assert page_cache.stats == {"hits": 0, "misses": 2}  # the viewer's is made for the viewer
    assert not MONEY_AMOUNT.search(viewed)
    assert page("admin", study) and page_cache.stats["hits"] == 1  # admin reads $, as finance


def test_keys_differ_by_role_query_and_rerun(study):
    finance, viewer = key(study, "finance"), key(study, "viewer")
    assert finance != viewer
    assert key(study, "admin") == finance  # both read $: the same page
    assert key(study, "finance", "?sort=shares:3:desc") != finance
    assert key(study, "finance", "?share=a&share=b") != key(study, "finance", "?share=a")
    run = study.runs.order_by("id").last()
    Run.objects.filter(pk=run.pk).update(finished_at=timezone.now())  # a rerun with the same figures
    assert key(study, "finance") != finance


def test_a_rerun_shows_its_new_figures(study):
    page("finance", study)
    run = study.runs.order_by("id").first()
    metrics = copy.deepcopy(Run.objects.get(pk=run.pk).metrics)
    metrics["shares"][0]["jobs"] = 987654
    Run.objects.filter(pk=run.pk).update(**recorded_metrics(metrics), finished_at=timezone.now())
    assert "987,654" in page("finance", study)


def test_figures_written_without_a_digest_are_never_kept(study):
    run = study.runs.order_by("id").first()
    Run.objects.filter(pk=run.pk).update(metrics_digest="")
    assert key(study, "finance") is None
    page("finance", study)
    page("finance", study)
    assert page_cache.stats["hits"] == 0


def test_an_edited_study_and_policy_name_show_up(study):
    page("finance", study)
    run = study.runs.order_by("id").last()
    Run.objects.filter(pk=run.pk).update(policy_name="renamed-variant")
    Study.objects.filter(pk=study.pk).update(name="renamed study")
    html = page("finance", study)
    assert "renamed-variant" in html and "renamed study" in html
    Policy.objects.filter(pk=study.baseline_id).update(name="renamed-baseline")
    assert "renamed-baseline" in page("finance", study)


def test_finance_keeps_its_body_per_choice_and_rerun(study):
    finance = client("finance")
    base = f"/finance/?study={study.pk}"
    mark = 'id="answer-title"'
    first = finance.get(base).content.decode()
    assert first[first.index(mark) :] in finance.get(base).content.decode()
    assert page_cache.stats == {"hits": 1, "misses": 1}
    finance.get(base + "&idle=quota")
    assert page_cache.stats == {"hits": 1, "misses": 2}  # another choice: made anew
    run = study.runs.get(policy=study.baseline)
    metrics = copy.deepcopy(Run.objects.get(pk=run.pk).metrics)
    metrics["summary"]["rerun_marker"] = 1  # figures written again, the same on the page
    Run.objects.filter(pk=run.pk).update(**recorded_metrics(metrics), finished_at=timezone.now())
    finance.get(base)
    assert page_cache.stats == {"hits": 1, "misses": 3}  # made from the new figures, not the kept ones
    Study.objects.filter(pk=study.pk).update(name="finance renamed")
    assert "finance renamed" in finance.get(base).content.decode()
    assert client("viewer").get(base).status_code == 403


def test_a_cache_of_no_entries_keeps_nothing(study, settings):
    settings.PLANNER_PAGE_CACHE_ENTRIES = 0
    page("finance", study)
    page("finance", study)
    assert page_cache.stats["hits"] == 0


def test_the_metrics_api_keeps_its_body_per_role_and_rerun(study):
    run = study.runs.order_by("id").first()
    url = f"/api/runs/{run.pk}/metrics/"
    finance = client("finance").get(url)
    assert finance.status_code == 200 and finance["Content-Type"] == "application/json"
    assert client("finance").get(url).content == finance.content
    assert page_cache.stats == {"hits": 1, "misses": 1}
    viewed = client("viewer").get(url)  # made for the viewer: without any $ field
    assert page_cache.stats == {"hits": 1, "misses": 2}
    assert b"_usd" in finance.content and b"_usd" not in viewed.content
    metrics = copy.deepcopy(Run.objects.get(pk=run.pk).metrics)
    metrics["summary"]["rerun_marker"] = 1
    Run.objects.filter(pk=run.pk).update(**recorded_metrics(metrics), finished_at=timezone.now())
    assert b"rerun_marker" in client("finance").get(url).content
    assert client("finance").get(url + "?format=api").status_code == 200  # the browsable API as before


def test_the_job_finder_keeps_its_body_per_search_and_rerun(aws_policy, aws_trace):
    page_cache.clear()
    finder_study = launch_study(
        StudyLaunch(name="finder", trace=aws_trace, policies=[aws_policy]), enqueue=False
    )
    run = finder_study.runs.get()
    assert replay_run.apply(args=[run.pk]).get() == "succeeded"
    reader = client("viewer")
    url = f"/studies/{finder_study.pk}/jobs/?run={run.pk}"
    first = reader.get(url).content.decode()
    mark = "<h1>Find a job</h1>"
    assert first[first.index(mark) :] in reader.get(url).content.decode()
    assert page_cache.stats == {"hits": 1, "misses": 1}
    job = aws_trace.load_jobs().job_id[0]
    assert str(job) in reader.get(f"{url}&q={job}").content.decode()  # another search: made anew
    assert page_cache.stats == {"hits": 1, "misses": 2}
    Run.objects.filter(pk=run.pk).update(policy_name="renamed-in-finder", finished_at=timezone.now())
    assert "renamed-in-finder" in reader.get(url).content.decode()
    Study.objects.filter(pk=finder_study.pk).update(name="finder renamed")
    assert "finder renamed" in reader.get(url).content.decode()
