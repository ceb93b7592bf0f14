"""At most PLANNER_MAX_HEAVY_TASKS_PER_USER studies, sweeps, curves, worth searches and calibrations
queued or running per user: the next is a 429 whose JSON names the limit, and nothing is stored."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from planner.calibration.models import Calibration
from planner.curves.models import CapacityCurve, WorthSearch
from planner.studies.limits import HeavyTaskLimit, check_heavy_task_limit, unfinished_heavy_tasks
from planner.studies.models import Run, Study
from tests.service.conftest import make_user

pytestmark = pytest.mark.django_db

MESSAGE = (
    "you have 2 studies, curves, searches or calibrations queued or running: the limit is 2 per user "
    "(PLANNER_MAX_HEAVY_TASKS_PER_USER); wait for one to finish, or delete one"
)


@pytest.fixture(autouse=True)
def limit_of_two(settings):
    settings.PLANNER_MAX_HEAVY_TASKS_PER_USER = 2


def post_study(client, trace, policy, name):
    # No worker: the runs stay queued, so each study counts until it is finished or deleted.
    return client.post(
        "/api/studies/", {"name": name, "trace": trace.pk, "policies": [policy.pk]}, format="json"
    )


def test_the_third_study_is_a_429_naming_the_limit_and_stores_nothing(admin_api, aws_trace, aws_policy):
    assert post_study(admin_api, aws_trace, aws_policy, "one").status_code == 201
    assert post_study(admin_api, aws_trace, aws_policy, "two").status_code == 201
    response = post_study(admin_api, aws_trace, aws_policy, "three")
    assert response.status_code == 429
    assert response.json() == {"detail": MESSAGE, "limit": 2, "setting": "PLANNER_MAX_HEAVY_TASKS_PER_USER"}
    assert Study.objects.count() == 2


def test_every_kind_of_heavy_task_counts_and_is_refused(admin_api, aws_trace, aws_policy):
    post_study(admin_api, aws_trace, aws_policy, "one")
    post_study(admin_api, aws_trace, aws_policy, "two")
    curve = admin_api.post(
        "/api/curves/", {"trace": aws_trace.pk, "policies": [aws_policy.pk], "sizes": [2, 3]}, format="json"
    )
    sweep = admin_api.post(
        "/api/sweeps/",
        {"trace": aws_trace.pk, "base_policy": aws_policy.pk, "knobs": {"QS1.lending_limit": [0, 100]}},
        format="json",
    )
    assert (curve.status_code, sweep.status_code) == (429, 429), (curve.json(), sweep.json())
    assert curve.json()["limit"] == sweep.json()["limit"] == 2
    assert not CapacityCurve.objects.exists()


def test_curves_searches_and_calibrations_are_counted(admin_api, aws_trace, aws_policy):
    user = admin_api.user
    assert unfinished_heavy_tasks(user) == 0
    curve = admin_api.post(
        "/api/curves/", {"trace": aws_trace.pk, "policies": [aws_policy.pk], "sizes": [2, 3]}, format="json"
    )
    assert curve.status_code == 201, curve.json()
    assert unfinished_heavy_tasks(user) == 1  # one curve, however many points
    WorthSearch.objects.create(
        name="w",
        trace=aws_trace,
        policy_a_name="a",
        policy_a_snapshot={},
        policy_b_name="b",
        policy_b_snapshot={},
        instance_type="t",
        today=1,
        upper=2,
        created_by=user,
    )
    assert unfinished_heavy_tasks(user) == 2
    with pytest.raises(HeavyTaskLimit):
        check_heavy_task_limit(user)
    WorthSearch.objects.update(status="succeeded")
    Calibration.objects.create(
        trace=aws_trace, policy=aws_policy, policy_name="p", policy_snapshot={}, created_by=user
    )
    assert unfinished_heavy_tasks(user) == 2
    Calibration.objects.update(status="failed")
    assert unfinished_heavy_tasks(user) == 1


def test_a_finished_task_frees_its_place_and_users_are_counted_apart(
    admin_api, client_for, aws_trace, aws_policy
):
    post_study(admin_api, aws_trace, aws_policy, "one")
    post_study(admin_api, aws_trace, aws_policy, "two")
    other = APIClient()
    other.force_authenticate(make_user("second-admin", "admin"))
    assert post_study(other, aws_trace, aws_policy, "theirs").status_code == 201
    Run.objects.filter(study__name="one").update(status="succeeded")
    assert post_study(admin_api, aws_trace, aws_policy, "three").status_code == 201


def test_the_study_form_shows_the_limit(aws_trace, aws_policy, client):
    user = make_user("form-admin", "admin")
    client.force_login(user)
    for name in ("one", "two"):
        Study.objects.create(name=name, trace=aws_trace, baseline=aws_policy, created_by=user).runs.create(
            policy=aws_policy, policy_name=aws_policy.name, policy_snapshot={}
        )
    response = client.post(
        "/studies/new/", {"name": "three", "trace": aws_trace.pk, "policies": [aws_policy.pk]}
    )
    assert response.status_code == 400
    assert "the limit is 2 per user (PLANNER_MAX_HEAVY_TASKS_PER_USER)" in response.content.decode()
    assert Study.objects.count() == 2


def test_the_schema_documents_the_429_on_each_heavy_task():
    from drf_spectacular.generators import SchemaGenerator

    paths = SchemaGenerator().get_schema(request=None, public=True)["paths"]
    documented = sorted(
        path for path, ops in paths.items() if "429" in ops.get("post", {}).get("responses", {})
    )
    assert documented == [
        "/api/calibrations/",
        "/api/curves/",
        "/api/studies/",
        "/api/sweeps/",
        "/api/worth-searches/",
    ]
