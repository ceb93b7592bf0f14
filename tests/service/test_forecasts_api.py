"""Forecasts through the API, their chunks replayed by (eager) Celery tasks on SQLite.

The scenario: a pool of 2 one-GPU instances at $2 an hour, one share ``a`` owning both. At T0 = 1000
r1 (started at 400, 600 s left) and r2 (started at 900, 3,600 s left) run; p1 (submitted at 500, bob,
1,800 s) and p2 (submitted at 800, alice, 600 s) wait, p1 first (FIFO). With every duration given
and no arrivals, every sample is the same replay: r1 ends at 1600 and p1 starts then, ends at 3400,
and p2 starts at 3400 (r2 holds the other instance until 4600).
"""

from __future__ import annotations

import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.forecasts import bounds
from planner.forecasts.launch import ForecastLaunch, conclude, start_forecast
from planner.forecasts.models import Forecast, ForecastChunk, ForecastJob
from planner.forecasts.tasks import sample_chunk
from planner.traces.models import Trace, read_upload

SAMPLES = Path(__file__).resolve().parents[2] / "samples" / "forecast"
T0 = 1000.0
SNAPSHOT = {
    "time": T0,
    "running": [
        {"job_id": "r1", "share": "a", "instance_type": "gpu", "instance_count": 1, "started_at": 400,
         "remaining_seconds": 600},
        {"job_id": "r2", "share": "a", "instance_type": "gpu", "instance_count": 1, "started_at": 900,
         "remaining_seconds": 3600},
    ],
    "pending": [
        {"job_id": "p1", "share": "a", "instance_type": "gpu", "instance_count": 1, "submit_time": 500,
         "duration": 1800, "user": "bob"},
        {"job_id": "p2", "share": "a", "instance_type": "gpu", "instance_count": 1, "submit_time": 800,
         "duration": 600, "user": "alice"},
    ],
}  # fmt: skip
# A week of history in share a: 40 one-GPU jobs of 600 s to 4,500 s (two classes' worth of draws).
HISTORY_CSV = "job_id,submit_time,share,instance_type,duration\n" + "".join(
    f"h{i},{i * 14_000},a,gpu,{600 + (i * 37) % 40 * 100}\n" for i in range(40)
)


@pytest.fixture
def capture(django_capture_on_commit_callbacks):
    """Run the on-commit callbacks (the chunks' tasks) of a request inside the test's transaction."""
    return django_capture_on_commit_callbacks


@pytest.fixture
def policy(db) -> Policy:
    InstanceType.objects.create(name="gpu", gpus=1, hourly_price=2.0)
    pool = Pool.objects.create(name="two")
    pool.set_capacity({"gpu": 2})
    policy = Policy.objects.create(name="two-gpus", pool=pool)
    policy.replace_shares([ShareSpec("a", "RESERVE", None, "never", "any", {"gpu": 2})])
    return policy


@pytest.fixture
def history(db) -> Trace:
    columns = read_upload(io.BytesIO(HISTORY_CSV.encode()), format="planner-csv")
    return Trace.store(columns, name="a week of a")


def post(client: APIClient, payload: dict, capture, **kwargs):
    with capture(execute=True):
        return client.post("/api/forecasts/", payload, format=kwargs.pop("format", "json"), **kwargs)


def created(client: APIClient, payload: dict, capture) -> dict:
    response = post(client, payload, capture)
    assert response.status_code == 201, response.json()
    return client.get(f"/api/forecasts/{response.json()['id']}/").json()


def jobs_of(client: APIClient, pk: int, query: str = "") -> dict:
    response = client.get(f"/api/forecasts/{pk}/jobs/{query}")
    assert response.status_code == 200, response.json()
    return response.json()


def test_a_forecast_with_every_duration_given_is_the_one_replay(viewer_api, policy, eager_celery, capture):
    detail = created(viewer_api, {"snapshot": SNAPSHOT, "policy": policy.pk, "samples": 4}, capture)
    assert detail["status"] == "succeeded" and detail["progress"] == 1.0, detail
    assert (detail["running_jobs"], detail["pending_jobs"], detail["arrivals"]) == (2, 2, "none")
    jobs = {job["job_id"]: job for job in jobs_of(viewer_api, detail["id"])["results"]}
    # p1 starts when r1's 600 s left are done, at T0 + 600; p2 when p1 ends, 1,800 s later
    assert jobs["p1"]["start"] == {"p10": 1600.0, "p50": 1600.0, "p90": 1600.0}
    assert jobs["p1"]["end"]["p50"] == 3400.0
    assert jobs["p2"]["start"] == {"p10": 3400.0, "p50": 3400.0, "p90": 3400.0}
    assert (jobs["p1"]["position"], jobs["p2"]["position"]) == (1, 2)
    assert jobs["r2"]["state"] == "RUNNING" and jobs["r2"]["end"]["p50"] == 4600.0
    assert jobs["p2"]["user"] == "alice" and jobs["p1"]["p_start_within"] == {"1h": 1.0, "24h": 1.0}
    # FORECAST.json whole, as the engine wrote it
    result = viewer_api.get(f"/api/forecasts/{detail['id']}/result/").json()
    assert result["time"] == T0 and result["samples"] == 4 and len(result["jobs"]) == 4


def test_the_snapshot_may_be_an_uploaded_file_or_its_text(viewer_api, policy, eager_celery, capture):
    text = json.dumps(SNAPSHOT).encode()
    upload = SimpleUploadedFile("snapshot.json", text, content_type="application/json")
    by_file = post(
        viewer_api,
        {"snapshot_file": upload, "snapshot_format": "planner", "policy": policy.pk, "samples": 2},
        capture,
        format="multipart",
    )
    assert by_file.status_code == 201, by_file.json()
    as_text = created(
        viewer_api,
        {"snapshot": json.dumps(SNAPSHOT), "policy": policy.pk, "samples": 2},
        capture,
    )
    first = Forecast.objects.get(pk=by_file.json()["id"])
    assert first.snapshot == Forecast.objects.get(pk=as_text["id"]).snapshot
    assert first.source == "api" and first.status == "succeeded"


def test_a_malformed_snapshot_is_a_400_naming_the_record_and_field_and_nothing_is_stored(
    viewer_api, policy, eager_celery, capture
):
    broken = json.loads(json.dumps(SNAPSHOT))
    broken["pending"][1]["instance_count"] = -2
    response = post(viewer_api, {"snapshot": broken, "policy": policy.pk}, capture)
    assert response.status_code == 400
    message = " ".join(response.json()["snapshot"])
    assert "pending[1]" in message and "instance_count" in message, message
    not_json = post(viewer_api, {"snapshot": "{running: [", "policy": policy.pk}, capture)
    assert not_json.status_code == 400 and "snapshot" in not_json.json()
    assert Forecast.objects.count() == 0 and ForecastChunk.objects.count() == 0


def test_a_snapshot_share_the_policy_lacks_is_a_400_on_policy(viewer_api, policy, eager_celery, capture):
    other = json.loads(json.dumps(SNAPSHOT))
    other["pending"][0]["share"] = "b"
    response = post(viewer_api, {"snapshot": other, "policy": policy.pk}, capture)
    assert response.status_code == 400
    said = " ".join(response.json()["policy"])
    assert "pending[0] (job 'p1').share" in said and "unknown share 'b'" in said, said
    assert Forecast.objects.count() == 0


def test_every_bound_is_a_400_that_names_it(viewer_api, policy, settings, monkeypatch, eager_celery, capture):
    def refused(payload: dict, field: str, bound: str) -> None:
        response = post(viewer_api, {"snapshot": SNAPSHOT, "policy": policy.pk, **payload}, capture)
        assert response.status_code == 400, (payload, response.json())
        assert bound in " ".join(response.json()[field]), response.json()

    refused({"samples": bounds.MAX_SAMPLES + 1}, "samples", "MAX_SAMPLES")
    refused({"samples": 0}, "samples", "MAX_SAMPLES")
    refused({"horizon_days": bounds.MAX_HORIZON_DAYS + 1}, "horizon_days", "MAX_HORIZON_DAYS")
    refused({"horizon_days": 0}, "horizon_days", "MAX_HORIZON_DAYS")
    # 4 jobs x 3 samples = 12 job-samples, over a bound of 10: at most 10 // 4 = 2 samples
    settings.PLANNER_FORECAST_MAX_JOB_SAMPLES = 10
    refused({"samples": 3}, "samples", "ask for at most 2 samples")
    settings.PLANNER_FORECAST_MAX_JOB_SAMPLES = bounds.DEFAULT_MAX_JOB_SAMPLES
    monkeypatch.setattr(bounds, "MAX_SNAPSHOT_JOBS", 3)
    refused({}, "snapshot", "MAX_SNAPSHOT_JOBS")
    settings.PLANNER_FORECAST_MAX_SNAPSHOT_BYTES = 100
    upload = SimpleUploadedFile("s.json", json.dumps(SNAPSHOT).encode())
    response = post(
        viewer_api, {"snapshot_file": upload, "policy": policy.pk}, capture,
        format="multipart",
    )  # fmt: skip
    assert response.status_code == 400 and "MAX_SNAPSHOT_BYTES" in " ".join(response.json()["snapshot_file"])
    empty = post(viewer_api, {"snapshot": {"time": 5, "running": [], "pending": []}, "policy": policy.pk},
                 capture)  # fmt: skip
    assert empty.status_code == 400 and "no running or pending job" in " ".join(empty.json()["snapshot"])
    assert Forecast.objects.count() == 0


def test_one_person_has_at_most_so_many_forecasts_unfinished(viewer_api, client_for, policy, settings):
    settings.PLANNER_FORECAST_MAX_UNFINISHED_PER_USER = 2
    payload = {"snapshot": SNAPSHOT, "policy": policy.pk, "samples": 2}
    # the test's transaction never commits, so no chunk is sent: both forecasts stay queued
    made = [viewer_api.post("/api/forecasts/", payload, format="json") for _ in range(2)]
    assert [response.status_code for response in made] == [201, 201]
    third = viewer_api.post("/api/forecasts/", payload, format="json")
    assert third.status_code == 400
    assert "MAX_UNFINISHED_PER_USER" in " ".join(third.json()["non_field_errors"])
    other = client_for("finance").post("/api/forecasts/", payload, format="json")
    assert other.status_code == 201  # another person's forecasts count for them
    assert Forecast.objects.count() == 3


def test_history_arrivals_need_the_week_before_the_snapshot(
    viewer_api, policy, history, eager_celery, capture
):
    # the history's jobs are submitted from 0 to 546,000 s; a snapshot at 10,000,000 s is 100 days later
    late = {**SNAPSHOT, "time": 10_000_000}
    late["running"] = [{**job, "started_at": 9_999_000} for job in SNAPSHOT["running"]]
    late["pending"] = [{**job, "submit_time": 9_999_500} for job in SNAPSHOT["pending"]]
    payload = {"snapshot": late, "policy": policy.pk, "history": history.pk}
    response = post(viewer_api, payload, capture)
    assert response.status_code == 400
    said = response.json()["arrivals"][0]
    assert "no job submitted in the 7 days before the snapshot's time 10,000,000" in said, said
    assert post(viewer_api, {**payload, "arrivals": "none"}, capture).status_code == 201
    assert Forecast.objects.count() == 1


def test_history_arrivals_need_a_history(viewer_api, policy, eager_celery, capture):
    response = post(
        viewer_api, {"snapshot": SNAPSHOT, "policy": policy.pk, "arrivals": "history"},
        capture,
    )  # fmt: skip
    assert response.status_code == 400 and "history" in " ".join(response.json()["arrivals"])


def test_search_finds_jobs_by_id_and_user_a_page_at_a_time(viewer_api, policy, eager_celery, capture):
    pk = created(viewer_api, {"snapshot": SNAPSHOT, "policy": policy.pk, "samples": 2}, capture)["id"]
    assert [job["job_id"] for job in jobs_of(viewer_api, pk, "?search=alice")["results"]] == ["p2"]
    assert [job["job_id"] for job in jobs_of(viewer_api, pk, "?search=P1")["results"]] == ["p1"]  # any case
    assert jobs_of(viewer_api, pk, "?search=carol")["count"] == 0
    first = jobs_of(viewer_api, pk, "?limit=3")
    assert first["count"] == 4 and len(first["results"]) == 3 and first["next"]
    assert [job["job_id"] for job in jobs_of(viewer_api, pk, "?limit=3&offset=3")["results"]] == ["p2"]
    backwards = jobs_of(viewer_api, pk, "?state=RUNNABLE&ordering=-position")["results"]
    assert [job["job_id"] for job in backwards] == ["p2", "p1"]
    assert viewer_api.get("/api/forecasts/999999/jobs/").status_code == 404


def test_every_role_forecasts_only_admins_delete_and_viewers_see_no_dollars(
    client_for, policy, eager_celery, capture
):
    viewer, finance, admin = client_for("viewer"), client_for("finance"), client_for("admin")
    pk = created(finance, {"snapshot": SNAPSHOT, "policy": policy.pk, "samples": 2}, capture)["id"]
    # queued work: p1 0.5 h + p2 1/6 h on one GPU each, at $2 an hour
    share = finance.get(f"/api/forecasts/{pk}/").json()["shares"][0]
    assert share["queued_gpu_hours"] == pytest.approx(2 / 3) and share["queued_usd"] == pytest.approx(4 / 3)
    assert (share["running"], share["pending"], share["first_start_p50"], share["last_start_p50"]) == (
        2, 2, 1600.0, 3400.0,
    )  # fmt: skip
    seen = viewer.get(f"/api/forecasts/{pk}/").json()["shares"][0]
    assert "queued_usd" not in seen and seen["queued_gpu_hours"] == pytest.approx(2 / 3)
    assert [f["id"] for f in viewer.get("/api/forecasts/").json()["results"]] == [pk]
    nobody = client_for(None)
    assert nobody.get("/api/forecasts/").status_code == 403
    assert post(nobody, {"snapshot": SNAPSHOT, "policy": policy.pk}, capture).status_code == 403
    assert APIClient().get("/api/forecasts/").status_code == 401
    assert viewer.delete(f"/api/forecasts/{pk}/").status_code == 403
    assert admin.delete(f"/api/forecasts/{pk}/").status_code == 204
    assert not ForecastJob.objects.exists() and not ForecastChunk.objects.exists()


def test_a_session_signed_in_viewer_forecasts_too(user_with_role, policy, eager_celery, capture):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user_with_role("session-viewer", "viewer"))
    assert client.get("/api/forecasts/").status_code == 200
    # A session needs the CSRF token to write, as on every endpoint
    assert post(client, {"snapshot": SNAPSHOT, "policy": policy.pk}, capture).status_code == 403


def forecast_with_history(policy, history, samples: int) -> Forecast:
    pending_without_durations = {
        **SNAPSHOT,
        "pending": [{k: v for k, v in job.items() if k != "duration"} for job in SNAPSHOT["pending"]],
    }
    return start_forecast(
        ForecastLaunch(
            snapshot=pending_without_durations,
            policy=policy,
            history=history,
            samples=samples,
            seed=7,
            arrivals="none",
        ),
        enqueue=False,
    )  # fmt: skip


def run_chunks(forecast: Forecast) -> None:
    for chunk in forecast.chunk_rows.order_by("index"):
        sample_chunk.apply(args=[chunk.pk])


def test_chunks_merged_give_the_forecast_of_one_chunk(policy, history, settings):
    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 5
    split = forecast_with_history(policy, history, 12)
    assert list(split.chunk_rows.values_list("first", "count")) == [(0, 5), (5, 5), (10, 2)]
    run_chunks(split)
    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 12
    whole = forecast_with_history(policy, history, 12)
    assert whole.chunks == 1
    run_chunks(whole)
    split.refresh_from_db()
    whole.refresh_from_db()
    assert split.status == whole.status == "succeeded"
    assert split.result == whole.result
    # the draws differ between samples (durations from history), so the merge had something to keep
    p2 = next(job for job in whole.result["jobs"] if job["job_id"] == "p2")
    assert p2["start"]["p10"] < p2["start"]["p90"]
    assert list(split.job_rows.values_list("job_id", "start_p50")) == list(
        whole.job_rows.values_list("job_id", "start_p50")
    )


@pytest.mark.parametrize("alive", [True, False])
def test_a_stale_chunk_is_sent_again_only_once_its_process_ended(
    policy, history, live_process, dead_process, alive, django_capture_on_commit_callbacks
):
    from datetime import timedelta

    from django.utils import timezone

    from planner.forecasts.launch import reap_forecasts

    forecast = forecast_with_history(policy, history, samples=4)
    chunk = forecast.chunk_rows.first()
    ForecastChunk.objects.filter(pk=chunk.pk).update(
        status="running", attempts=1, heartbeat=timezone.now() - timedelta(hours=1),
        worker_process=live_process if alive else dead_process,
    )  # fmt: skip
    with django_capture_on_commit_callbacks(execute=False):
        outcome = reap_forecasts(Forecast.objects.filter(pk=forecast.pk))
    assert outcome["requeued"] == ([] if alive else [chunk.pk])
    assert ForecastChunk.objects.get(pk=chunk.pk).status == ("running" if alive else "queued")


def test_progress_is_chunks_done_over_chunks_and_the_last_chunk_merges(policy, history, settings):
    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 2
    forecast = forecast_with_history(policy, history, 6)
    chunks = list(forecast.chunk_rows.order_by("index"))
    assert (forecast.status, forecast.progress) == ("queued", 0.0)
    sample_chunk.apply(args=[chunks[2].pk])  # any order: no chunk waits on another
    forecast.refresh_from_db()
    assert (forecast.status, forecast.chunks_done, forecast.progress) == ("running", 1, pytest.approx(1 / 3))
    assert not forecast.job_rows.exists() and forecast.result is None
    sample_chunk.apply(args=[chunks[0].pk])
    sample_chunk.apply(args=[chunks[1].pk])
    forecast.refresh_from_db()
    assert (forecast.status, forecast.progress) == ("succeeded", 1.0)
    assert forecast.job_rows.count() == 4
    # the raw starts served the merge; a second conclude (a redelivered task) changes nothing
    assert not ForecastChunk.objects.filter(forecast=forecast, starts__isnull=False).exists()
    assert conclude(forecast.pk) == "finished" and forecast.job_rows.count() == 4


def test_a_chunk_that_keeps_crashing_is_retried_then_fails_the_forecast_with_the_reason(
    policy, history, settings, monkeypatch
):
    import planner.forecasts.tasks as tasks

    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 5
    settings.PLANNER_RUN_MAX_ATTEMPTS = 2
    settings.PLANNER_RETRY_DELAY_SECONDS = 0
    real = tasks.run_samples

    def crash_on_the_second_chunk(inputs, first, count):
        if first == 5:
            raise RuntimeError("the worker ran out of memory")
        return real(inputs, first, count)

    monkeypatch.setattr(tasks, "run_samples", crash_on_the_second_chunk)
    forecast = forecast_with_history(policy, history, 12)
    run_chunks(forecast)
    forecast.refresh_from_db()
    assert forecast.status == "failed"
    expected = "samples 5-9 (chunk 2 of 3) failed: attempt 2 failed: RuntimeError"
    assert forecast.error.startswith(expected), forecast.error
    assert "ran out of memory" in forecast.error
    assert forecast.chunk_rows.get(index=1).attempts == 2
    assert not forecast.job_rows.exists()


def test_a_merge_that_breaks_fails_the_forecast_once_with_the_reason(policy, monkeypatch):
    import planner.forecasts.conclude as merging

    def broken(inputs, parts):
        raise KeyError("p9")

    monkeypatch.setattr(merging, "merge_samples", broken)
    forecast = start_forecast(ForecastLaunch(snapshot=SNAPSHOT, policy=policy, samples=2), enqueue=False)
    run_chunks(forecast)
    forecast.refresh_from_db()
    assert (forecast.status, forecast.error) == ("failed", "merging the samples: KeyError: 'p9'")
    assert conclude(forecast.pk) == "finished"  # read again: no second attempt, no error page


def test_a_chunk_after_the_forecast_failed_is_not_replayed(policy, history, settings, monkeypatch):
    import planner.forecasts.tasks as tasks
    from scheduling.errors import InputError

    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 5
    calls = []

    def bad_input_first(inputs, first, count):
        calls.append(first)
        raise InputError("the history has no duration for share a", field="history")

    monkeypatch.setattr(tasks, "run_samples", bad_input_first)
    forecast = forecast_with_history(policy, history, 12)
    run_chunks(forecast)
    forecast.refresh_from_db()
    # bad input is not retried: the first chunk fails the forecast, the others are not replayed
    assert calls == [0]
    assert forecast.status == "failed" and "history: the history has no duration" in forecast.error
    assert set(forecast.chunk_rows.values_list("status", flat=True)) == {"failed"}


def test_the_forecast_page_shows_finance_dollars_and_a_viewer_none(
    user_with_role, policy, eager_celery, capture
):
    from django.test import Client

    forecast = start_forecast(ForecastLaunch(snapshot=SNAPSHOT, policy=policy, samples=2), enqueue=False)
    run_chunks(forecast)
    pages = {}
    for role in ("viewer", "finance"):
        client = Client()
        client.force_login(user_with_role(f"page-{role}", role))
        pages[role] = client.get(f"/forecasts/{forecast.pk}/").content.decode()
        found = client.get(f"/forecasts/{forecast.pk}/?search=alice").content.decode()
        table = found.split('id="forecast-jobs"')[1]
        assert "1 job matching" in found and '<th scope="row">p2</th>' in table and ">p1<" not in table
    assert "Queued work ($)" in pages["finance"] and "$1" in pages["finance"]
    assert not re.search(r"\$\s?[0-9]", pages["viewer"]) and "Queued work ($)" not in pages["viewer"]
    assert "in 0.2 h" in pages["viewer"]  # p1 starts 600 s after T0


KUEUE_T0 = datetime(2026, 9, 20, 12, tzinfo=UTC)  # the List's "time": 2026-09-20T12:00:00Z


def policy_from_sample(name: str) -> Policy:
    """A policy from samples/forecast/ on a pool of its own capacity (as the demo loader makes them)."""
    data = json.loads((SAMPLES / name).read_text())
    for type_name, spec in data["instance_types"].items():
        InstanceType.objects.get_or_create(name=type_name, defaults={"gpus": spec["gpus"], "hourly_price": 0})
    pool = Pool.objects.create(name=data["name"])
    pool.set_capacity(data["capacity"])
    return Policy.create_from_dict(data, pool=pool)


@pytest.mark.parametrize(
    "snapshot, policy_file, fmt, running, pending, t0",
    [
        # kubectl get workloads -A -o json (with the planner's "time" key): 5 admitted, 4 waiting
        ("kueue-workloads.json", "kueue-policy.json", "kueue-workloads", 5, 4, KUEUE_T0),
        ("kueue-workloads.json", "kueue-policy.json", "auto", 5, 4, KUEUE_T0),
        # AWS Batch list-service-jobs pages and describe-service-job: 4 running or starting, 4 runnable
        ("aws-batch-snapshot.json", "aws-batch-policy.json", "aws-batch", 4, 4, None),
    ],
)
def test_snapshots_from_live_systems_are_read_by_format(
    viewer_api, eager_celery, capture, snapshot, policy_file, fmt, running, pending, t0
):
    policy = policy_from_sample(policy_file)
    text = (SAMPLES / snapshot).read_bytes()
    upload = SimpleUploadedFile(snapshot, text, content_type="application/json")
    response = post(
        viewer_api, {"snapshot_file": upload, "snapshot_format": fmt, "policy": policy.pk, "samples": 2},
        capture, format="multipart",
    )  # fmt: skip
    assert response.status_code == 201, response.json()
    detail = viewer_api.get(f"/api/forecasts/{response.json()['id']}/").json()
    assert detail["status"] == "succeeded", detail["error"]
    counts = (detail["running_jobs"], detail["pending_jobs"], detail["snapshot_format"])
    assert counts == (running, pending, fmt)
    if t0 is not None:
        assert detail["snapshot_time"] == t0.timestamp()
    jobs = jobs_of(viewer_api, detail["id"], "?state=RUNNABLE")["results"]
    assert len(jobs) == pending and all(job["position"] for job in jobs)


def test_a_kueue_list_with_a_broken_workload_names_it(viewer_api, capture):
    policy = policy_from_sample("kueue-policy.json")
    listing = json.loads((SAMPLES / "kueue-workloads.json").read_text())
    workload = next(i for i, item in enumerate(listing["items"]) if item["kind"] == "Workload")
    listing["items"][workload]["spec"]["podSets"][0]["count"] = "two"
    payload = {"snapshot": listing, "snapshot_format": "kueue-workloads", "policy": policy.pk}
    response = post(viewer_api, payload, capture)
    assert response.status_code == 400
    said = " ".join(response.json()["snapshot"])
    assert f"items[{workload}]" in said and "count" in said, said
    assert not Forecast.objects.exists()


def test_the_django_admin_lists_a_forecast_and_its_chunks(policy, db):
    from django.contrib.auth.models import User
    from django.test import Client

    forecast = start_forecast(ForecastLaunch(snapshot=SNAPSHOT, policy=policy, samples=2), enqueue=False)
    run_chunks(forecast)
    client = Client()
    client.force_login(User.objects.create_superuser("root", password="root-password-123"))
    assert client.get("/admin/forecasts/forecast/").status_code == 200
    page = client.get(f"/admin/forecasts/forecast/{forecast.pk}/change/")
    assert page.status_code == 200 and "two-gpus" in page.content.decode()


def test_kueue_workloads_are_read_with_the_policy_gpus_per_instance(viewer_api, eager_celery, capture):
    # a100-80gb instances of 8 GPUs: pretrain-7b-0001 asks 2 pods x 8 GPUs, so 2 instances (not 16)
    data = json.loads((SAMPLES / "kueue-policy.json").read_text())
    data["name"] = "ml-cohort-8"
    data["instance_types"]["a100-80gb"]["gpus"] = 8
    data["capacity"]["a100-80gb"] = 6
    for share in data["shares"]:
        for key in ("capacity", "borrowing_limit", "lending_limit"):
            if isinstance(share.get(key), dict) and "a100-80gb" in share[key]:
                share[key]["a100-80gb"] = max(1, share[key]["a100-80gb"] // 8)
    InstanceType.objects.create(name="a100-80gb", gpus=8, hourly_price=0)
    InstanceType.objects.create(name="l4", gpus=1, hourly_price=0)
    pool = Pool.objects.create(name="ml-cohort-8")
    pool.set_capacity(data["capacity"])
    policy = Policy.create_from_dict(data, pool=pool)
    listing = json.loads((SAMPLES / "kueue-workloads.json").read_text())
    listing["items"] = [
        item for item in listing["items"]
        if item["kind"] == "LocalQueue" or item["metadata"]["name"] == "pretrain-7b-0001"
    ]  # fmt: skip
    payload = {"snapshot": listing, "snapshot_format": "auto", "policy": policy.pk, "samples": 2}
    detail = created(viewer_api, payload, capture)
    assert detail["status"] == "succeeded", detail["error"]
    (job,) = jobs_of(viewer_api, detail["id"])["results"]
    assert (job["job_id"], job["instance_type"], job["instance_count"], job["gpus"]) == (
        "nlp/pretrain-7b-0001", "a100-80gb", 2, 16.0,
    )  # fmt: skip


def test_a_snapshot_pasted_or_uploaded_on_the_page(user_with_role, policy, eager_celery, capture):
    from django.test import Client

    client = Client()
    client.force_login(user_with_role("paster", "viewer"))
    form = {"snapshot_format": "auto", "policy": policy.pk, "samples": 2, "seed": 0, "horizon_days": 30}
    with capture(execute=True):
        pasted = client.post("/forecasts/", {**form, "snapshot": json.dumps(SNAPSHOT)})
    forecast = Forecast.objects.get()
    assert pasted.status_code == 302 and pasted["Location"] == f"/forecasts/{forecast.pk}/"
    assert (forecast.source, forecast.status) == ("pasted", "succeeded")
    assert forecast.created_by.username == "paster"
    with capture(execute=True):
        upload = SimpleUploadedFile("s.json", json.dumps(SNAPSHOT).encode())
        uploaded = client.post("/forecasts/", {**form, "snapshot_file": upload})
    assert uploaded.status_code == 302 and Forecast.objects.latest("id").source == "uploaded"
    broken = json.loads(json.dumps(SNAPSHOT))
    broken["running"][0]["started_at"] = "soon"
    refused = client.post("/forecasts/", {**form, "snapshot": json.dumps(broken)})
    page = refused.content.decode()
    assert refused.status_code == 400 and 'id="id_snapshot_error"' in page
    assert "running[0] (job &#x27;r1&#x27;).started_at" in page, page[page.find("errorlist") :][:300]
    both = client.post("/forecasts/", form)
    assert both.status_code == 400 and "paste a snapshot or upload a file" in both.content.decode()
    assert Forecast.objects.count() == 2


@pytest.mark.django_db  # the chart's colours are the site's (planner.web.palette reads the shares)
def test_the_chart_shows_a_job_id_as_text_not_markup():
    from planner.forecasts.figures import band_figure

    job = ForecastJob(job_id="<b>x</b>", share="a&b", state="RUNNABLE", start_p10=3600.0, start_p50=7200.0,
                      start_p90=10800.0)  # fmt: skip
    figure = band_figure([job], 0.0, ["a&b"])
    band, marks = figure["data"]
    # one hour to three hours after T0, the p50 at two
    assert band["x"] == [1.0, 3.0, None] and marks["x"] == [2.0]
    assert band["y"][0] == marks["y"][0] == "&lt;b&gt;x&lt;/b&gt;" and band["name"] == "a&amp;b: p10-p90"
    assert figure["layout"]["yaxis"]["categoryarray"] == ["&lt;b&gt;x&lt;/b&gt;"]
