"""The studies list, the overview's headline and the launch form through the Django test client.
Headlines are read from hand-written run metrics: utilization, and the p95 wait of the share
that waits longest under the baseline."""

import pytest

from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus, Study, run_summary

pytestmark = pytest.mark.django_db


def finish(run: Run, utilization: float, p95_hours: dict[str, float]) -> None:
    """Mark ``run`` succeeded with just the metrics a headline reads (and their summary, as the
    replay task stores it)."""
    run.status = RunStatus.SUCCEEDED
    run.progress = 1
    run.metrics = {
        "summary": {"utilization": utilization, "useful_utilization": utilization - 0.1},
        "shares": [
            {"name": name, "wait_seconds": {"p95": hours * 3600}} for name, hours in p95_hours.items()
        ],
    }
    run.summary = run_summary(run.metrics)
    run.save()


@pytest.fixture
def study(small_policy, small_trace) -> Study:
    variant = small_policy.duplicate("lab pooled")
    return launch_study(
        StudyLaunch(
            name="pool or not",
            trace=small_trace,
            policies=[small_policy, variant],
        ),
        enqueue=False,
    )


def test_the_headline_follows_the_share_that_waits_longest_under_the_baseline(client_as, study):
    baseline, pooled = study.runs.order_by("id")
    finish(baseline, 0.62, {"train": 1.0, "infer": 3.0})  # infer waits longest under the baseline
    finish(pooled, 0.81, {"train": 2.0, "infer": 0.5})
    for url in ("/", "/studies/"):
        page = client_as("viewer").get(url).content.decode()
        assert "62.0 %" in page and "81.0 %" in page, url
        assert '3.00 h <span class="muted">(infer)</span>' in page, url
        assert '0.50 h <span class="muted">(infer)</span>' in page, url


def test_running_studies_show_progress_and_ask_to_be_refreshed(client_as, study):
    baseline, pooled = study.runs.order_by("id")
    finish(baseline, 0.5, {"train": 1.0})
    Run.objects.filter(pk=pooled.pk).update(status=RunStatus.RUNNING, progress=0.4)
    page = client_as("viewer").get("/studies/").content.decode()
    assert 'data-refresh-url="/studies/"' in page
    assert '<progress max="1" value="0.4"' in page and "running 40 %" in page
    Run.objects.filter(pk=pooled.pk).update(status=RunStatus.FAILED)
    assert "data-refresh-url" not in client_as("viewer").get("/studies/").content.decode()


def test_the_launch_form_goes_through_the_apis_path_and_opens_the_study(client_as, small_policy, small_trace):
    response = client_as("admin").post(
        "/studies/new/",
        {"name": "one policy", "trace": small_trace.pk, "policies": [small_policy.pk], "baseline": ""},
    )
    study = Study.objects.get(name="one policy")
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/"
    run = study.runs.get()
    assert run.policy_snapshot["shares"][0]["name"] == "train"  # snapshot made by launch_study
    assert study.baseline_id == small_policy.pk and study.created_by.username == "admin"


def test_a_baseline_outside_the_chosen_policies_is_refused_on_its_field(client_as, small_policy, small_trace):
    other = small_policy.duplicate("other")
    response = client_as("admin").post(
        "/studies/new/",
        {"name": "x", "trace": small_trace.pk, "policies": [small_policy.pk], "baseline": other.pk},
    )
    assert response.status_code == 400
    assert response.context["form"].errors["baseline"] == ["the baseline must be one of the study's policies"]
    assert not Study.objects.exists()


def test_empty_lists_say_what_to_do(client_as):
    assert "upload one" in client_as("admin").get("/traces/").content.decode()
    assert "start one" in client_as("admin").get("/studies/").content.decode()
    assert "There is no trace to replay yet" in client_as("admin").get("/studies/new/").content.decode()
