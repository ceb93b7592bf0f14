"""CRUD of instance types, pools, policies and shares over the API, checked by the engine's
validator; duplicate and export; read for every role, writes for admins only."""

import pytest

from tests.service.conftest import AWS_TYPE

pytestmark = pytest.mark.django_db


def new_policy_payload(pool_id: int, name: str = "two-teams") -> dict:
    return {
        "name": name,
        "pool": pool_id,
        "queueing": "strict_fifo",
        "startup_seconds": 60,
        "shares": [
            {
                "name": "a",
                "capacity": {AWS_TYPE: 2},
                "strategy": "LEND_AND_BORROW",
                "borrow_limit_percent": 50,
            },
            {"name": "b", "capacity": {AWS_TYPE: 1}, "strategy": "LEND", "lending_limit": {AWS_TYPE: 1}},
        ],
    }


def test_an_admin_creates_a_policy_with_its_shares_in_one_request(admin_api, aws_policy):
    response = admin_api.post("/api/policies/", new_policy_payload(aws_policy.pool_id), format="json")
    assert response.status_code == 201, response.json()
    body = response.json()
    assert [s["name"] for s in body["shares"]] == ["a", "b"]
    assert body["shares"][1]["lending_limit"] == {AWS_TYPE: 1}
    exported = admin_api.get(f"/api/policies/{body['id']}/export/").json()
    assert exported["queueing"] == "strict_fifo"
    assert exported["shares"][0]["borrow_limit_percent"] == 50


def test_quotas_beyond_the_pool_are_rejected_with_the_share_named(admin_api, aws_policy):
    payload = new_policy_payload(aws_policy.pool_id)
    payload["shares"][1]["capacity"] = {AWS_TYPE: 2}  # 2 + 2 on a pool of 3
    response = admin_api.post("/api/policies/", payload, format="json")
    assert response.status_code == 400
    assert "add up to 4, more than the pool's 3" in str(response.json()["shares"])


def test_an_unknown_instance_type_is_named(admin_api, aws_policy):
    payload = new_policy_payload(aws_policy.pool_id)
    payload["shares"][0]["capacity"] = {"ml.p5.48xlarge": 1}
    response = admin_api.post("/api/policies/", payload, format="json")
    assert response.status_code == 400
    assert "ml.p5.48xlarge" in str(response.json())


def test_a_viewer_reads_but_cannot_write(viewer_api, aws_policy):
    assert viewer_api.get("/api/policies/").status_code == 200
    assert viewer_api.get(f"/api/policies/{aws_policy.pk}/").json()["name"] == "aws-example"
    response = viewer_api.post("/api/policies/", new_policy_payload(aws_policy.pool_id), format="json")
    assert response.status_code == 403


def test_every_endpoint_needs_a_login(aws_policy):
    from rest_framework.test import APIClient

    anonymous = APIClient()
    for url in ("/api/policies/", "/api/pools/", "/api/traces/", "/api/studies/", "/api/runs/"):
        assert anonymous.get(url).status_code in (401, 403), url


def test_a_user_without_a_role_sees_nothing(client_for, aws_policy):
    assert client_for(None).get("/api/policies/").status_code == 403


def test_duplicate_makes_an_editable_variant(admin_api, aws_policy):
    response = admin_api.post(
        f"/api/policies/{aws_policy.pk}/duplicate/", {"name": "no-reserve"}, format="json"
    )
    assert response.status_code == 201
    variant = response.json()
    assert variant["parent"] == aws_policy.pk
    qs3 = next(s for s in variant["shares"] if s["name"] == "QS3")
    patched = admin_api.patch(f"/api/shares/{qs3['id']}/", {"strategy": "LEND"}, format="json")
    assert patched.status_code == 200, patched.json()
    assert (
        admin_api.get(f"/api/policies/{aws_policy.pk}/export/").json()["shares"][2]["strategy"] == "RESERVE"
    )


def test_patching_a_share_quota_beyond_the_pool_names_its_capacity_field(admin_api, aws_policy):
    qs3 = aws_policy.shares.get(name="QS3")
    response = admin_api.patch(f"/api/shares/{qs3.pk}/", {"capacity": {AWS_TYPE: 2}}, format="json")
    assert response.status_code == 400
    assert "add up to 4" in response.json()["capacity"][0]


def test_a_borrow_limit_on_a_lend_share_is_refused_on_that_field(admin_api, aws_policy):
    qs2 = aws_policy.shares.get(name="QS2")
    response = admin_api.patch(f"/api/shares/{qs2.pk}/", {"borrow_limit_percent": 100}, format="json")
    assert response.status_code == 400
    assert "only applies to LEND_AND_BORROW" in response.json()["borrow_limit_percent"][0]


def test_adding_a_share_to_a_full_pool_is_refused_until_the_pool_grows(admin_api, aws_policy):
    share = {"policy": aws_policy.pk, "name": "QS4", "strategy": "LEND", "capacity": {AWS_TYPE: 1}}
    assert admin_api.post("/api/shares/", share, format="json").status_code == 400
    grown = admin_api.patch(f"/api/pools/{aws_policy.pool_id}/", {"capacity": {AWS_TYPE: 4}}, format="json")
    assert grown.status_code == 200
    assert admin_api.post("/api/shares/", share, format="json").status_code == 201
    assert len(aws_policy.engine_policy().shares) == 4


def test_a_pool_cannot_shrink_below_the_quotas_of_its_policies(admin_api, aws_policy):
    response = admin_api.patch(
        f"/api/pools/{aws_policy.pool_id}/", {"capacity": {AWS_TYPE: 2}}, format="json"
    )
    assert response.status_code == 400
    assert "more than the pool's 2" in str(response.json()["capacity"])


def test_an_instance_type_in_use_cannot_be_deleted(admin_api, aws_policy):
    instance_type = admin_api.get("/api/instance-types/", {"name": AWS_TYPE}).json()["results"][0]
    assert admin_api.delete(f"/api/instance-types/{instance_type['id']}/").status_code == 409


def test_lists_are_paginated_and_filtered(admin_api, aws_policy):
    aws_policy.duplicate("variant-1")
    body = admin_api.get("/api/policies/", {"parent": aws_policy.pk}).json()
    assert body["count"] == 1 and body["results"][0]["name"] == "variant-1"
    assert (
        admin_api.get("/api/shares/", {"policy": aws_policy.pk, "strategy": "RESERVE"}).json()["count"] == 1
    )
    assert len(admin_api.get("/api/policies/", {"limit": 1}).json()["results"]) == 1
