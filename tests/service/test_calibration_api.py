"""Calibrations over the API: admins create (trace + policy in force), every role reads; the replay
runs as a Celery task (eager here) whose failures are recorded with the reason; a trace without
recorded start times is refused with a 400 that says why."""

import io
from datetime import timedelta

import pytest
from django.utils import timezone

from planner.calibration.launch import CalibrationLaunch, start_calibration
from planner.calibration.models import Calibration
from planner.calibration.tasks import calibrate_trace
from planner.traces.models import Trace, read_upload

pytestmark = pytest.mark.django_db

# The AWS example's shares with recorded starts: p1 recorded waiting 300 s; q2 started at once;
# q3 recorded nothing.
RECORDED_CSV = b"""job_id,submit_time,share,priority,duration,recorded_start
p3,0,QS1,3,100,0
p2,0,QS1,2,100,0
p1,0,QS1,1,100,300
q2,10,QS2,0,50,10
q3,20,QS3,0,50,
"""


@pytest.fixture
def recorded_trace(db) -> Trace:
    return Trace.store(read_upload(io.BytesIO(RECORDED_CSV), format="planner-csv"), name="recorded")


@pytest.fixture
def calibration(admin_api, aws_policy, recorded_trace, eager_celery, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/calibrations/", {"trace": recorded_trace.pk, "policy": aws_policy.pk}, format="json"
        )
    assert response.status_code == 201, response.json()
    return Calibration.objects.get(pk=response.json()["id"])


def test_an_admin_calibrates_and_the_detail_has_every_share(admin_api, calibration):
    body = admin_api.get(f"/api/calibrations/{calibration.pk}/").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0
    assert body["policy_name"] == "aws-example" and body["trace_name"] == "recorded"
    metrics = body["metrics"]
    assert [share["name"] for share in metrics["shares"]] == ["QS1", "QS2", "QS3"]
    assert metrics["all"]["compared"] == 4
    assert metrics["all"]["excluded"]["no_recorded_start"] == 1
    qs2 = metrics["shares"][1]
    # q2 reclaims its lent instance at once, as it did in the record: the same wait, KS 0.
    assert qs2["ks"]["distance"] == 0.0
    assert qs2["p95"]["ratio"] == 1.0
    assert qs2["verdict"].startswith("simulated waits are close")
    assert metrics["shares"][2]["verdict"].startswith("nothing to compare")
    assert {"recorded", "simulated"} <= set(metrics["shares"][0]["cdfs"])


def test_the_list_carries_the_summary_without_cdfs(viewer_api, calibration):
    body = viewer_api.get("/api/calibrations/").json()
    assert body["count"] == 1
    item = body["results"][0]
    assert "metrics" not in item
    assert [block["name"] for block in item["summary"]["blocks"]] == ["all", "QS1", "QS2", "QS3"]
    assert "cdfs" not in item["summary"]["blocks"][0]


def test_any_role_reads_only_admins_create_or_delete(client_for, aws_policy, recorded_trace, calibration):
    payload = {"trace": recorded_trace.pk, "policy": aws_policy.pk}
    for role in ("viewer", "finance"):
        api = client_for(role)
        assert api.get(f"/api/calibrations/{calibration.pk}/").status_code == 200
        assert api.post("/api/calibrations/", payload, format="json").status_code == 403
        assert api.delete(f"/api/calibrations/{calibration.pk}/").status_code == 403
    assert client_for(None).get("/api/calibrations/").status_code == 403
    assert Calibration.objects.count() == 1


def test_a_trace_without_recorded_starts_is_refused(admin_api, aws_policy, aws_trace):
    response = admin_api.post(
        "/api/calibrations/", {"trace": aws_trace.pk, "policy": aws_policy.pk}, format="json"
    )
    assert response.status_code == 400
    assert "records no start times" in response.json()["trace"][0]
    assert not Calibration.objects.exists()


def test_a_policy_without_the_traces_shares_is_refused(admin_api, aws_policy, recorded_trace):
    aws_policy.shares.filter(name="QS3").delete()
    response = admin_api.post(
        "/api/calibrations/", {"trace": recorded_trace.pk, "policy": aws_policy.pk}, format="json"
    )
    assert response.status_code == 400
    assert "QS3" in response.json()["policy"][0]


def test_bad_input_at_replay_fails_the_calibration_with_the_reason(aws_policy, recorded_trace):
    calibration = start_calibration(CalibrationLaunch(trace=recorded_trace, policy=aws_policy), enqueue=False)
    snapshot = calibration.policy_snapshot
    snapshot["shares"] = [share for share in snapshot["shares"] if share["name"] != "QS3"]
    snapshot["capacity"] = {"ml.g5.xlarge": 2}
    Calibration.objects.filter(pk=calibration.pk).update(policy_snapshot=snapshot)
    assert calibrate_trace.apply(args=[calibration.pk]).get() == "failed"
    calibration.refresh_from_db()
    assert calibration.status == "failed"
    assert "QS3" in calibration.error and calibration.metrics is None


def test_the_task_is_idempotent(calibration):
    finished_at = calibration.finished_at
    assert calibrate_trace.apply(args=[calibration.pk]).get() == "nothing to do"
    calibration.refresh_from_db()
    assert calibration.finished_at == finished_at and calibration.attempts == 1


def test_a_calibration_whose_worker_died_is_redone_when_read(
    admin_api, aws_policy, recorded_trace, eager_celery, django_capture_on_commit_callbacks
):
    calibration = start_calibration(CalibrationLaunch(trace=recorded_trace, policy=aws_policy), enqueue=False)
    stale = timezone.now() - timedelta(hours=1)
    Calibration.objects.filter(pk=calibration.pk).update(status="running", attempts=1, heartbeat=stale)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/calibrations/{calibration.pk}/")
    calibration.refresh_from_db()
    assert calibration.status == "succeeded" and calibration.attempts == 2


def test_a_calibration_whose_process_still_runs_is_not_redone_when_read(
    admin_api, aws_policy, recorded_trace, live_process, eager_celery, django_capture_on_commit_callbacks
):
    calibration = start_calibration(CalibrationLaunch(trace=recorded_trace, policy=aws_policy), enqueue=False)
    stale = timezone.now() - timedelta(hours=1)
    Calibration.objects.filter(pk=calibration.pk).update(
        status="running", attempts=1, heartbeat=stale, worker_process=live_process
    )
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/calibrations/{calibration.pk}/")
    calibration.refresh_from_db()
    assert (calibration.status, calibration.attempts) == ("running", 1)


def test_the_django_admin_lists_calibrations_and_computes_one_again(
    calibration, eager_celery, django_capture_on_commit_callbacks
):
    from django.contrib.auth.models import User
    from django.test import Client

    first_finish = calibration.finished_at
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="pw-root"))
    listing = client.get("/admin/calibration/calibration/")
    assert listing.status_code == 200 and b"aws-example" in listing.content
    assert client.get(f"/admin/calibration/calibration/{calibration.pk}/change/").status_code == 200
    with django_capture_on_commit_callbacks(execute=True):
        client.post(
            "/admin/calibration/calibration/",
            {"action": "compute_again", "_selected_action": [calibration.pk]},
        )
    calibration.refresh_from_db()
    assert calibration.status == "succeeded" and calibration.finished_at > first_finish
    assert calibration.attempts == 1  # attempts counted afresh
