"""Advisor sweeps over the API: admins create one (variants made as child policies, replayed as one
study with eager Celery), every role reads the front, constraints mark violators, a kept variant
survives the sweep's deletion and the others go with it."""

import pytest

from planner.advisor.models import Sweep
from planner.capacity.models import Policy
from planner.studies.models import RunStatus, Study

pytestmark = pytest.mark.django_db

# QS3 only, RESERVE or LEND, no in-share preemption, all lendable: the base (RESERVE) and one
# variant (QS3 LEND). In the AWS example p1 then borrows QS3's idle instance and waits 0 s instead of
# 100 s (until p3 ends): utilization goes up and QS1's p95 wait goes down.
QS3_KNOBS = {
    "shares": ["QS3"],
    "strategy": ["RESERVE", "LEND"],
    "lending_limit": [None],
    "in_share_preemption": ["never"],
}


@pytest.fixture
def sweep_payload(aws_policy, aws_trace):
    return {
        "name": "open QS3",
        "trace": aws_trace.pk,
        "base_policy": aws_policy.pk,
        "knobs": QS3_KNOBS,
        "urgent_shares": ["QS1"],
    }


@pytest.fixture
def create(admin_api, eager_celery, django_capture_on_commit_callbacks):
    def post(payload, client=None):
        with django_capture_on_commit_callbacks(execute=True):
            return (client or admin_api).post("/api/sweeps/", payload, format="json")

    return post


def test_a_sweep_replays_its_variants_and_gives_the_front(create, viewer_api, sweep_payload, aws_policy):
    response = create(sweep_payload)
    assert response.status_code == 201, response.json()
    sweep = Sweep.objects.get(pk=response.json()["id"])
    (variant,) = sweep.variants.all()
    assert variant.label == "QS3: LEND, lend all, no in-share preemption"
    assert variant.policy.parent == aws_policy
    assert variant.policy.name == f"open QS3 #{sweep.pk} v1"
    assert sweep.study.baseline == aws_policy
    assert set(sweep.study.runs.values_list("status", flat=True)) == {RunStatus.SUCCEEDED}

    body = viewer_api.get(f"/api/sweeps/{sweep.pk}/").json()
    assert body["status"] == "succeeded" and body["progress"] == 1.0 and body["variants"] == 1
    points = {point["variant"]: point for point in body["points"]}
    base, lend = points[None], points[1]
    # Base: p1 waits for p3 to end at 100 s; QS1's p95 over waits (0, 0, 100) is 90 s.
    assert base["share_p95_wait_seconds"]["QS1"] > lend["share_p95_wait_seconds"]["QS1"]
    # Both are measured over the study's one window, and neither loses work: the same busy GPU-hours
    # over the same hours are the same utilization (each over its own span, lending looked busier).
    assert lend["utilization"] == pytest.approx(base["utilization"])
    assert [point["variant"] for point in body["front"]] == [1]  # the variant dominates the base
    assert lend["on_front"] and not base["on_front"] and lend["violations"] == []


def test_constraints_mark_the_points_that_break_them(create, viewer_api, sweep_payload):
    payload = {**sweep_payload, "constraints": [{"metric": "utilization", "min": 0.99}]}
    sweep_id = create(payload).json()["id"]
    body = viewer_api.get(f"/api/sweeps/{sweep_id}/").json()
    assert body["front"] == []
    assert all(point["violations"] == ["utilization >= 99%"] for point in body["points"])


def test_only_admins_create_and_everyone_reads(client_for, admin_api, create, sweep_payload):
    clients = {"viewer": client_for("viewer"), "finance": client_for("finance"), "admin": admin_api}
    for role in ("viewer", "finance"):
        assert create(sweep_payload, client=clients[role]).status_code == 403
    assert Sweep.objects.count() == 0
    sweep_id = create(sweep_payload).json()["id"]
    for client in clients.values():
        assert client.get("/api/sweeps/").json()["count"] == 1
        assert client.get(f"/api/sweeps/{sweep_id}/").status_code == 200
    assert client_for(None).get("/api/sweeps/").status_code == 403
    assert clients["viewer"].delete(f"/api/sweeps/{sweep_id}/").status_code == 403
    assert clients["viewer"].post(f"/api/sweeps/{sweep_id}/variants/1/keep/", {}).status_code == 403


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"knobs": {"strategy": ["HOARD"]}}, "knobs"),
        ({"knobs": {"shares": ["QS9"]}}, "knobs"),
        ({"constraints": [{"metric": "p95_wait_seconds", "share": "QS9", "max": 60}]}, "constraints"),
        ({"urgent_shares": ["QS9"]}, "urgent_shares"),
        ({"mode": "spiral"}, "mode"),
        ({"size": 0}, "size"),
        ({"knobs": {"shares": ["QS3"], "strategy": ["RESERVE"], "in_share_preemption": ["never"]}}, "knobs"),
    ],
)
def test_bad_sweeps_are_refused_by_field_and_store_nothing(create, sweep_payload, change, field):
    policies = Policy.objects.count()
    response = create({**sweep_payload, **change})
    assert response.status_code == 400
    assert field in str(response.json())
    assert Sweep.objects.count() == 0 and Policy.objects.count() == policies


def test_a_kept_variant_survives_the_sweep(admin_api, create, sweep_payload, aws_policy):
    knobs = {**QS3_KNOBS, "in_share_preemption": ["never", "lower_priority"]}
    sweep = Sweep.objects.get(pk=create({**sweep_payload, "knobs": knobs}).json()["id"])
    assert sweep.variants.count() == 3  # RESERVE with preemption, LEND without and with
    kept = admin_api.post(f"/api/sweeps/{sweep.pk}/variants/2/keep/", {"name": "qs3-lends"}, format="json")
    assert kept.status_code == 200 and kept.json()["name"] == "qs3-lends"
    taken = admin_api.post(f"/api/sweeps/{sweep.pk}/variants/3/keep/", {"name": "aws-example"}, format="json")
    assert taken.status_code == 400
    study_id = sweep.study_id
    assert admin_api.delete(f"/api/sweeps/{sweep.pk}/").status_code == 204
    assert set(Policy.objects.values_list("name", flat=True)) == {"aws-example", "qs3-lends"}
    assert not Sweep.objects.exists() and not Study.objects.filter(pk=study_id).exists()


def test_a_variant_that_is_the_base_of_another_sweep_stays(admin_api, create, sweep_payload):
    first = Sweep.objects.get(pk=create(sweep_payload).json()["id"])
    variant_policy = first.variants.get().policy
    second = create({**sweep_payload, "name": "from the variant", "base_policy": variant_policy.pk})
    assert second.status_code == 201, second.json()
    assert admin_api.delete(f"/api/sweeps/{first.pk}/").status_code == 204
    assert Policy.objects.filter(pk=variant_policy.pk).exists()


def test_the_django_admin_lists_a_sweep_and_deletes_it_with_its_variants(admin_client, create, sweep_payload):
    sweep = Sweep.objects.get(pk=create(sweep_payload).json()["id"])
    variant_policy = sweep.variants.get().policy_id
    assert admin_client.get("/admin/advisor/sweep/").status_code == 200
    assert admin_client.get(f"/admin/advisor/sweep/{sweep.pk}/change/").status_code == 200
    response = admin_client.post(f"/admin/advisor/sweep/{sweep.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Sweep.objects.exists() and not Policy.objects.filter(pk=variant_policy).exists()
