"""The Django admin: every list opens for the admin role, and raw edits go through the same
engine validator as the API."""

import pytest
from django.test import Client

from planner.capacity.models import ShareLimit

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_browser(user_with_role) -> Client:
    user = user_with_role("boss", "admin")
    user.is_staff = True
    user.save()
    client = Client()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "model",
    ["capacity/instancetype", "capacity/pool", "capacity/policy", "capacity/share", "traces/trace",
     "studies/study", "studies/run"],
)  # fmt: skip
def test_every_list_opens_for_an_admin(admin_browser, aws_policy, model):
    assert admin_browser.get(f"/admin/{model}/").status_code == 200


def test_a_viewer_cannot_open_the_admin(user_with_role):
    client = Client()
    client.force_login(user_with_role("v", "viewer"))
    assert client.get("/admin/capacity/policy/").status_code == 302  # to the login page


def test_a_share_quota_beyond_the_pool_is_refused_in_the_admin(admin_browser, aws_policy):
    qs3 = aws_policy.shares.get(name="QS3")
    limit = qs3.limits.get()
    form = {
        "policy": aws_policy.pk, "name": "QS3", "strategy": "RESERVE", "borrow_limit_percent": "",
        "in_share_preemption": "never", "reclaim": "any", "fair_weight": 1, "position": 2,
        "limits-TOTAL_FORMS": 1, "limits-INITIAL_FORMS": 1, "limits-MIN_NUM_FORMS": 0,
        "limits-MAX_NUM_FORMS": 1000,
        "limits-0-id": limit.pk, "limits-0-share": qs3.pk, "limits-0-instance_type": limit.instance_type_id,
        "limits-0-quota": 2, "limits-0-borrowing_limit": "", "limits-0-lending_limit": "",
    }  # fmt: skip
    response = admin_browser.post(f"/admin/capacity/share/{qs3.pk}/change/", form)
    assert response.status_code == 200  # the form again, with the error
    assert "add up to 4" in response.content.decode()
    assert ShareLimit.objects.get(pk=limit.pk).quota == 1
    form["limits-0-quota"] = 1
    form["strategy"] = "LEND"
    assert admin_browser.post(f"/admin/capacity/share/{qs3.pk}/change/", form).status_code == 302
    assert aws_policy.engine_policy().shares[2].strategy.value == "LEND"


def test_shrinking_a_pool_below_its_quotas_is_refused_in_the_admin(admin_browser, aws_policy):
    pool = aws_policy.pool
    row = pool.capacities.get()
    form = {
        "name": pool.name, "description": "",
        "capacities-TOTAL_FORMS": 1, "capacities-INITIAL_FORMS": 1, "capacities-MIN_NUM_FORMS": 0,
        "capacities-MAX_NUM_FORMS": 1000,
        "capacities-0-id": row.pk, "capacities-0-pool": pool.pk,
        "capacities-0-instance_type": row.instance_type_id, "capacities-0-count": 2,
    }  # fmt: skip
    response = admin_browser.post(f"/admin/capacity/pool/{pool.pk}/change/", form)
    assert response.status_code == 200
    assert "more than the pool&#x27;s 2" in response.content.decode()
    assert pool.capacity == {row.instance_type.name: 3}


def test_the_calendar_inline_refuses_a_pool_too_small_for_the_quotas(admin_browser, aws_policy):
    from planner.capacity.models import CalendarChange

    # quotas 1 + 1 + 1 = 3: a pool of 2 from t=60 cannot hold them; the row says so
    type_id = aws_policy.pool.capacities.get().instance_type_id
    form = {
        "name": aws_policy.name, "pool": aws_policy.pool_id, "description": "",
        "queueing": "best_effort_fifo", "startup_seconds": 0, "runnable_timeout_seconds": "",
        "fair_preemption_strategies": "LessThanOrEqualToFinalShare,LessThanInitialShare",
        "shares-TOTAL_FORMS": 0, "shares-INITIAL_FORMS": 0, "shares-MIN_NUM_FORMS": 0,
        "shares-MAX_NUM_FORMS": 1000,
        "changes-TOTAL_FORMS": 1, "changes-INITIAL_FORMS": 0, "changes-MIN_NUM_FORMS": 0,
        "changes-MAX_NUM_FORMS": 1000,
        "changes-0-time": 60, "changes-0-share": "", "changes-0-instance_type": type_id, "changes-0-count": 2,
    }  # fmt: skip
    response = admin_browser.post(f"/admin/capacity/policy/{aws_policy.pk}/change/", form)
    assert response.status_code == 200
    assert "change at 60 s, the pool, ml.g5.xlarge: at 60 s share quotas" in response.content.decode()
    assert not CalendarChange.objects.exists()
    form["changes-0-count"] = 3
    assert admin_browser.post(f"/admin/capacity/policy/{aws_policy.pk}/change/", form).status_code == 302
    assert aws_policy.engine_policy().capacity_at(60) == {"ml.g5.xlarge": 3}


def test_replay_again_runs_a_finished_run_from_scratch(
    admin_browser, study, django_capture_on_commit_callbacks, monkeypatch
):
    run = study.runs.first()
    first_finish, first_digest, first_summary = run.finished_at, run.metrics_digest, run.summary
    queued = []
    monkeypatch.setattr("planner.studies.launch.enqueue_runs", lambda pks, what: queued.extend(pks))
    with django_capture_on_commit_callbacks(execute=True):
        admin_browser.post("/admin/studies/run/", {"action": "replay_again", "_selected_action": [run.pk]})
    assert queued == [run.pk]
    run.refresh_from_db()
    # Back in the queue as if never replayed: the worker finds nothing of the last replay.
    assert (run.status, run.progress, run.error, run.attempts) == ("queued", 0, "", 0)
    assert run.heartbeat is run.started_at is run.finished_at is run.metrics is run.summary is None
    assert (run.metrics_digest, run.result_file.name) == ("", "")
    assert first_finish is not None and first_digest != "" and first_summary
