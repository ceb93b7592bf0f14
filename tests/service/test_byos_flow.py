"""Bring your scheduler, end to end on the committed samples: over the API (policy import from the
live configuration export, history upload with its format, calibration, study) and through the page's
five steps (Django's test client; the browser test is tests/pages/test_byos_page.py). Bad input at each
step names the file / job and the field and stores nothing: a 400 for a configuration, a failed
trace (its worker's verdict, as for every upload) for a history."""

import io
from pathlib import Path

import pytest
from django.test import Client

from planner.accounts.roles import ADMIN
from planner.calibration.models import Calibration
from planner.capacity.models import Policy, Pool
from planner.studies.models import Study
from planner.traces.models import Trace
from planner.web.variants import study_presets
from tests.service.conftest import make_user
from tests.uploads import upload_trace

pytestmark = pytest.mark.django_db

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
AWS_CONFIGURATION = SAMPLES / "aws-batch" / "configuration.json"
AWS_HISTORY = SAMPLES / "aws-batch" / "describe-service-jobs.json"
KUEUE_CONFIGURATION = SAMPLES / "kueue" / "configuration.yaml"
KUEUE_MANAGER = SAMPLES / "kueue" / "kueue-manager-config.yaml"
KUEUE_HISTORY = SAMPLES / "kueue" / "workloads.json"


def upload(path: Path):
    return path.open("rb")


def test_aws_pair_through_the_api(admin_api, eager_celery, django_capture_on_commit_callbacks):
    # the four describe outputs in one file -> a policy on a new pool of 11 p4d and 8 g5 instances
    with upload(AWS_CONFIGURATION) as config:
        response = admin_api.post(
            "/api/policy-imports/",
            {"format": "aws-batch", "pool": "ml-training", "file": config},
            format="multipart",
        )
    assert response.status_code == 201, response.json()
    policy = Policy.objects.get(pk=response.json()["id"])
    assert policy.pool.capacity_dict() == {"ml.p4d.24xlarge": 11, "ml.g5.12xlarge": 8}
    assert sorted(s.name for s in policy.shares.all()) == ["nlp", "prod-tuning", "research", "vision"]
    # the job queue cancels jobs RUNNABLE for a day (jobStateTimeLimitActions): section 10's limit
    assert policy.runnable_timeout_seconds == 86400 and "jobStateTimeLimitActions" in policy.description
    with upload(AWS_HISTORY) as history:
        response = upload_trace(
            admin_api, {"name": "aws history", "format": "aws-batch-jobs", "file": history}
        )
    assert response.json()["status"] == "ready", response.json()
    trace = Trace.objects.get(pk=response.json()["id"])
    # 412 jobs exported, 50 still queued and 9 running at the export: 353 replayable
    assert trace.job_count == 353
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/calibrations/", {"trace": trace.pk, "policy": policy.pk}, format="json"
        )
    assert response.status_code == 201, response.json()
    calibration = Calibration.objects.get(pk=response.json()["id"])
    assert calibration.status == "succeeded", calibration.error
    overall = calibration.metrics["all"]
    # the describe records carry preemptionSummary.preemptedAttemptCount: 95 in all (the generator's count)
    assert overall["preemptions"]["recorded"] == 95
    assert overall["preemptions"]["verdict"].startswith("simulated preemptions are")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post(
            "/api/studies/",
            {"name": "aws what-if", "trace": trace.pk, "policies": [policy.pk]},
            format="json",
        )
    assert response.status_code == 201, response.json()
    assert Study.objects.get(pk=response.json()["id"]).runs.get().status == "succeeded"


def test_kueue_pair_through_the_api(admin_api):
    # the kubectl List and the Kueue Configuration as two file parts
    with upload(KUEUE_CONFIGURATION) as config, upload(KUEUE_MANAGER) as manager:
        response = admin_api.post(
            "/api/policy-imports/",
            {"format": "kueue", "pool": "gpu-cluster", "file": [config, manager]},
            format="multipart",
        )
    assert response.status_code == 201, response.json()
    policy = Policy.objects.get(pk=response.json()["id"])
    # 48 A100 and 16 L4 GPUs: the ClusterQueues' quotas plus the Cohort's own 8 A100
    assert policy.pool.capacity_dict() == {"a100-80gb": 48, "l4": 16}
    assert (
        "fair sharing on" in policy.description
        and policy.fair_sharing
        and policy.shares.get(name="team-nlp").fair_weight == 2
    )
    with upload(KUEUE_HISTORY) as history:
        response = upload_trace(
            admin_api, {"name": "kueue history", "format": "kueue-workloads", "file": history}
        )
    assert response.json()["status"] == "ready", response.json()
    assert Trace.objects.get(pk=response.json()["id"]).job_count == 351


def test_a_describe_output_of_another_kind_is_a_400_and_stores_nothing(admin_api):
    # describe-compute-environments instead of describe-service-environments
    body = b'{"computeEnvironments": [{"computeEnvironmentName": "ecs-ce", "type": "MANAGED"}]}'
    response = admin_api.post(
        "/api/policy-imports/",
        {"format": "aws-batch", "pool": "p", "file": _named(body, "compute.json")},
        format="multipart",
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["field"] == "compute.json.computeEnvironments"
    assert "describe-compute-environments" in error["message"]
    assert not Policy.objects.exists() and not Pool.objects.exists()


def test_a_history_record_with_stopped_before_started_fails_the_trace_naming_the_job(admin_api):
    job = (
        b'{"jobId": "j-1", "jobName": "a", "quotaShareName": "nlp", "status": "SUCCEEDED", "createdAt": 1000,'
        b' "startedAt": 5000, "stoppedAt": 4000,'
        b' "capacityUsage": [{"capacityUnit": "ml.g5.xlarge", "quantity": 1}]}'
    )
    body = upload_trace(
        admin_api, {"name": "bad", "format": "aws-batch-jobs", "file": _named(job, "jobs.json")}
    ).json()
    assert body["status"] == "failed"
    assert body["error"] == {
        "row": 1,
        "field": "stoppedAt",
        "message": "row 1, stoppedAt: job j-1: stoppedAt 4000 is before startedAt 5000",
    }
    trace = Trace.objects.get()  # the failed upload, holding its message and nothing else
    assert trace.job_count == 0 and not trace.jobs_file


def _named(content: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, content)


# -- the page -------------------------------------------------------------------------------------


@pytest.fixture
def admin_browser(db) -> Client:
    user = make_user("byos-admin", ADMIN)
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "scheduler, configuration, history_file, jobs",
    [("kueue", KUEUE_CONFIGURATION, KUEUE_HISTORY, 351), ("aws-batch", AWS_CONFIGURATION, AWS_HISTORY, 353)],
)
def test_the_page_walks_a_sample_pair(
    admin_browser,
    eager_celery,
    django_capture_on_commit_callbacks,
    scheduler,
    configuration,
    history_file,
    jobs,
):
    with upload(configuration) as config:
        response = admin_browser.post(
            "/byos/",
            {"step": "configuration", "scheduler": scheduler, "files": [config], "pool": "gpu-cluster"},
        )
    assert response.status_code == 302
    policy = Policy.objects.get()
    assert response["Location"] == f"/byos/?scheduler={scheduler}&policy={policy.pk}"
    here = response["Location"]
    with upload(history_file) as history:  # a preview needs no name yet
        response = admin_browser.post(here, {"step": "history", "file": history, "action": "preview"})
    assert response.status_code == 200
    assert f"{jobs} jobs would be imported".encode() in response.content
    assert not Trace.objects.exists()  # a preview stores nothing
    with upload(history_file) as history:
        response = admin_browser.post(
            here, {"step": "history", "file": history, "name": "wl", "action": "store"}
        )
    trace = Trace.objects.get()
    here = response["Location"]
    assert here == f"/byos/?scheduler={scheduler}&policy={policy.pk}&trace={trace.pk}"
    with upload(history_file) as history:  # the name is taken now: refused next to it
        again = admin_browser.post(
            here, {"step": "history", "file": history, "name": "wl", "action": "store"}
        )
    assert again.context["history_form"].errors["name"] == ["a trace named 'wl' already exists"]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_browser.post(here, {"step": "calibrate"})
    calibration = Calibration.objects.get()
    here = response["Location"]
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_browser.post(here, {"step": "study"})
    study = Study.objects.get()
    # the policy as configured and its presets, each replayed: the usual three, flattened for a policy
    # with a tree, and not "no fallback": each job of the samples ran on one type, so it changes nothing
    labels = [preset.label for preset in study_presets(policy, trace)]
    assert labels[:3] == ["static split", "full pooling", "preemption off"]
    assert "no fallback" not in labels and ("flattened" in labels) == policy.cohorts.exists()
    assert sorted(run.policy_name for run in study.runs.all()) == sorted(
        [policy.name] + [f"{policy.name} ({label})" for label in labels]
    )
    page = admin_browser.get(response["Location"])
    assert page.status_code == 200
    text = page.content.decode()
    assert calibration.metrics["all"]["preemptions"]["verdict"] in text
    assert f"/api/policies/{policy.pk}/export/kueue/" in text
    assert f"/api/policies/{policy.pk}/export/aws-batch/" in text


def test_the_page_puts_a_share_missing_from_the_configuration_next_to_the_history_file(admin_browser):
    with upload(AWS_CONFIGURATION) as config:
        response = admin_browser.post(
            "/byos/", {"step": "configuration", "scheduler": "aws-batch", "files": [config], "pool": "ml"}
        )
    here = response["Location"]
    job = (
        b'{"jobId": "j-9", "quotaShareName": "ml-ops", "status": "SUCCEEDED", "createdAt": 1000,'
        b' "startedAt": 2000, "stoppedAt": 9000,'
        b' "capacityUsage": [{"capacityUnit": "ml.g5.12xlarge", "quantity": 1}]}'
    )
    response = admin_browser.post(
        here, {"step": "history", "file": _named(job, "h.json"), "name": "h", "action": "store"}
    )
    assert response.status_code == 400
    errors = response.context["history_form"].errors
    assert errors["file"] == [
        "quotaShareName: job j-9: 'ml-ops' is not a share of ml-quota-policy "
        "(the imported configuration has nlp, vision, research, prod-tuning)"
    ]
    assert not Trace.objects.exists()


def test_calibrating_under_a_configuration_without_the_history_share_names_the_job(admin_api):
    with upload(KUEUE_CONFIGURATION) as config:
        policy = admin_api.post(
            "/api/policy-imports/", {"format": "kueue", "pool": "c", "file": config}, format="multipart"
        ).json()["id"]
    with upload(AWS_HISTORY) as history:
        trace = upload_trace(admin_api, {"name": "aws", "format": "aws-batch-jobs", "file": history}).json()[
            "id"
        ]
    response = admin_api.post("/api/calibrations/", {"trace": trace, "policy": policy}, format="json")
    assert response.status_code == 400
    message = response.json()["policy"][0]
    # the AWS history's first job (of quota share nlp) is the first the Kueue configuration cannot take
    jobs = Trace.objects.get(pk=trace).load_jobs()
    assert jobs.share_names[jobs.share[0]] == "nlp"
    assert f"(quotaShareName: job {jobs.job_id[0]}: 'nlp' is not a share of ml-cohort" in message
    assert not Calibration.objects.exists()


def test_the_trace_upload_page_previews_a_kueue_history_with_its_mapping(admin_browser):
    with upload(KUEUE_HISTORY) as history:
        response = admin_browser.post(
            "/traces/upload/",
            {
                "file": history,
                "name": "wl",
                "format": "kueue-workloads",
                "share_column": "namespace",
                "action": "preview",
            },
        )
    assert response.status_code == 200
    preview = response.context["preview"]
    # the fields a mapping may name, and the first jobs with the namespace as their share
    assert preview["columns"][:4] == ["clusterQueue", "queueName", "namespace", "name"]
    assert {row["share"] for row in preview["rows"]} <= {"nlp", "vision", "research", "prod"}
    assert not Trace.objects.exists()


def test_load_scheduler_samples_imports_and_calibrates_both_pairs_once():
    from django.core.management import call_command

    out = io.StringIO()
    call_command("load_scheduler_samples", stdout=out)
    call_command("load_scheduler_samples", stdout=out)  # again: nothing new
    assert sorted(Policy.objects.values_list("name", flat=True)) == ["aws-batch-sample", "kueue-sample"]
    assert Trace.objects.count() == 2 and Calibration.objects.count() == 2
    assert all(c.status == "succeeded" for c in Calibration.objects.all())
    assert "aws-batch sample calibration ready: /calibration/" in out.getvalue()
