"""Studies over the API: one run per policy, enqueued after commit, then metrics, CDFs and
series per run; finance view for finance and admin only."""

import os

import pytest

from planner.studies.models import Run

pytestmark = pytest.mark.django_db


def test_a_study_runs_every_policy_and_reports_metrics(admin_api, study):
    body = admin_api.get(f"/api/studies/{study.pk}/").json()
    assert body["status"] == "succeeded"
    assert [run["policy_name"] for run in body["runs"]] == ["aws-example", "all-reserve"]
    assert body["baseline"] == study.runs.first().policy_id
    first = body["runs"][0]
    assert first["summary"]["jobs"] == 4
    # AWS example: p2 is preempted across shares when QS2's job arrives, p3 in-share when p1 is raised.
    assert first["summary"]["preemptions"] == {
        "cross_share": 1,
        "in_share": 1,
        "fair_sharing": 0,
        "capacity": 0,
    }
    assert body["runs"][1]["summary"]["preemptions"] == {
        "cross_share": 0,
        "in_share": 0,
        "fair_sharing": 0,
        "capacity": 0,
    }


def test_run_sub_resources_give_cdfs_and_series(admin_api, study):
    run = study.runs.first()
    wait = admin_api.get(f"/api/runs/{run.pk}/cdf/", {"kind": "wait"}).json()
    assert wait["n"] == 4 and wait["y"][-1] == pytest.approx(1.0)
    qs1 = admin_api.get(f"/api/runs/{run.pk}/cdf/", {"kind": "jct", "share": "QS1"}).json()
    assert qs1["n"] == 3
    assert admin_api.get(f"/api/runs/{run.pk}/cdf/", {"share": "nobody"}).status_code == 404
    assert admin_api.get(f"/api/runs/{run.pk}/cdf/", {"kind": "runtime"}).status_code == 400
    series = admin_api.get(f"/api/runs/{run.pk}/series/").json()
    assert set(series["shares"]) == {"QS1", "QS2", "QS3"}
    assert admin_api.get(f"/api/runs/{run.pk}/metrics/").json()["summary"]["jobs"] == 4


def test_the_finance_view_is_for_finance_and_admin(client_for, admin_api, study):
    run = study.runs.first()
    assert admin_api.get(f"/api/runs/{run.pk}/finance/").status_code == 200
    finance = client_for("finance").get(f"/api/runs/{run.pk}/finance/")
    assert finance.status_code == 200
    assert {share["name"] for share in finance.json()["shares"]} == {"QS1", "QS2", "QS3"}
    assert client_for("viewer").get(f"/api/runs/{run.pk}/finance/").status_code == 403


def test_the_snapshot_keeps_the_policy_as_replayed(admin_api, study, aws_policy):
    aws_policy.shares.filter(name="QS1").update(strategy="LEND")
    run = admin_api.get(f"/api/runs/{study.runs.first().pk}/").json()
    assert run["policy_snapshot"]["shares"][0]["strategy"] == "LEND_AND_BORROW"


def test_runs_are_not_enqueued_before_the_study_commits(
    admin_api, aws_policy, aws_trace, eager_celery, django_capture_on_commit_callbacks
):
    payload = {"name": "later", "trace": aws_trace.pk, "policies": [aws_policy.pk]}
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = admin_api.post("/api/studies/", payload, format="json")
    assert response.status_code == 201
    assert Run.objects.get().status == "queued"
    assert len(callbacks) == 1


def test_a_baseline_outside_the_study_is_refused(admin_api, aws_policy, aws_trace):
    other = aws_policy.duplicate("other")
    payload = {"name": "x", "trace": aws_trace.pk, "policies": [aws_policy.pk], "baseline": other.pk}
    response = admin_api.post("/api/studies/", payload, format="json")
    assert response.status_code == 400
    assert "baseline" in response.json()


def test_a_viewer_cannot_start_a_study(viewer_api, aws_policy, aws_trace):
    payload = {"name": "x", "trace": aws_trace.pk, "policies": [aws_policy.pk]}
    assert viewer_api.post("/api/studies/", payload, format="json").status_code == 403


def test_a_trace_used_by_a_study_cannot_be_deleted(admin_api, study):
    assert admin_api.delete(f"/api/traces/{study.trace_id}/").status_code == 409


def test_deleting_a_study_removes_its_result_files(admin_api, study):
    paths = [run.result_file.path for run in study.runs.all()]
    assert all(os.path.exists(path) for path in paths)
    assert admin_api.delete(f"/api/studies/{study.pk}/").status_code == 204
    assert not any(os.path.exists(path) for path in paths)


def test_lists_carry_the_run_summary_not_the_full_metrics(admin_api, study):
    run = admin_api.get("/api/studies/").json()["results"][0]["runs"][0]
    assert "metrics" not in run and "series" not in run["summary"]
    assert {share["name"] for share in run["summary"]["shares"]} == {"QS1", "QS2", "QS3"}
    assert "p95" in run["summary"]["shares"][0]["wait_seconds"]
