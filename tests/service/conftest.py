"""Fixtures for the service tests: media in a temporary folder, the AWS example policy of
SEMANTICS.md section 4, users of each role with API clients, and Celery in eager mode."""

from __future__ import annotations

import io
import subprocess

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from planner.capacity.models import Policy, ShareSpec
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.liveness import WorkerProcess, start_time
from planner.studies.models import Run, Study
from planner.traces.models import Trace, read_upload
from tests import fixtures

eager_celery = fixtures.eager_celery  # a fixture (tests/fixtures.py)
media_root = fixtures.media_root  # a fixture (tests/fixtures.py)

AWS_TYPE = "ml.g5.xlarge"

# The AWS example: QS1 submits priorities 3, 2, 1 at t=0; QS2 submits at t=10; p1 is raised to 4 at t=20.
AWS_TRACE_JSON = b"""{"jobs": [
 {"job_id": "p3", "submit_time": 0, "share": "QS1", "priority": 3, "duration": 100},
 {"job_id": "p2", "submit_time": 0, "share": "QS1", "priority": 2, "duration": 100},
 {"job_id": "p1", "submit_time": 0, "share": "QS1", "priority": 1, "duration": 100},
 {"job_id": "q2", "submit_time": 10, "share": "QS2", "priority": 0, "duration": 50}],
 "priority_updates": [{"time": 20, "job_id": "p1", "priority": 4}]}"""


@pytest.fixture
def aws_policy(db) -> Policy:
    """3 x ml.g5.xlarge; QS1 (1, LEND_AND_BORROW 200%, in-share preemption), QS2 (1, LEND),
    QS3 (1, RESERVE)."""
    pool = fixtures.one_type_pool("aws-example", AWS_TYPE, 3, hourly_price=1.41)
    shares = [
        ShareSpec("QS1", "LEND_AND_BORROW", 200, "lower_priority", "any", {AWS_TYPE: 1}),
        ShareSpec("QS2", "LEND", None, "never", "any", {AWS_TYPE: 1}),
        ShareSpec("QS3", "RESERVE", None, "never", "any", {AWS_TYPE: 1}),
    ]
    return fixtures.policy_with_shares("aws-example", pool, shares)


@pytest.fixture
def aws_trace(db) -> Trace:
    return Trace.store(read_upload(io.BytesIO(AWS_TRACE_JSON), format="planner-json"), name="aws-example")


def make_user(username: str, role: str | None) -> User:
    user = User.objects.create_user(username=username, password="pw-" + username)
    if role:
        user.groups.add(Group.objects.get(name=role))
    return user


@pytest.fixture
def user_with_role(db):
    """``user_with_role("viewer")``: a new user in that role group (None: no role)."""
    return make_user


@pytest.fixture
def client_for(db):
    """``client_for("admin")``: an API client signed in (by token) as a user of that role."""
    from rest_framework.authtoken.models import Token

    def build(role: str | None) -> APIClient:
        user = make_user(f"user-{role or 'none'}", role)
        client = APIClient()
        client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
        client.user = user
        return client

    return build


@pytest.fixture
def admin_api(client_for) -> APIClient:
    return client_for("admin")


@pytest.fixture
def viewer_api(client_for) -> APIClient:
    return client_for("viewer")


@pytest.fixture
def live_process():
    """The record of a process computing an attempt that still runs, on this host."""
    child = subprocess.Popen(["sleep", "600"])
    yield process_record(child.pid)
    child.kill()
    child.wait()


@pytest.fixture
def dead_process():
    """The record of a process on this host that has ended (its worker was killed)."""
    child = subprocess.Popen(["sleep", "600"])
    record = process_record(child.pid)
    child.kill()
    child.wait()
    return record


def process_record(pid: int) -> dict:
    """What a claim records for the process ``pid`` of this host, in worker celery@w1."""
    mine = WorkerProcess.current()
    started = start_time(pid) or ""
    return WorkerProcess(mine.host, mine.namespace, pid, started, "celery@w1", "task-1").record()


@pytest.fixture
def study(admin_api, aws_policy, aws_trace, eager_celery, django_capture_on_commit_callbacks):
    """The AWS example's policy and its all-RESERVE copy, studied over the API (replayed inline)."""
    variant = aws_policy.duplicate("all-reserve")
    variant.shares.update(strategy="RESERVE", borrow_limit_percent=None, in_share_preemption="never")
    payload = {"name": "reserve or lend", "trace": aws_trace.pk, "policies": [aws_policy.pk, variant.pk]}
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post("/api/studies/", payload, format="json")
    assert response.status_code == 201, response.json()
    return Study.objects.get(pk=response.json()["id"])


@pytest.fixture
def run(aws_policy, aws_trace, django_capture_on_commit_callbacks) -> Run:
    """A queued run whose task was not sent."""
    with django_capture_on_commit_callbacks(execute=False):
        study = launch_study(StudyLaunch(name="s", trace=aws_trace, policies=[aws_policy]))
    return study.runs.get()
