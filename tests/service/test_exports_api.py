"""The exports API: a stored policy as AWS Batch CLI inputs and as Kueue YAML (any role), and the import of
either as a new policy (admins), on an existing pool of the same capacity or a new one."""

from __future__ import annotations

import yaml
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from planner.capacity.models import Policy, Pool
from scheduling.model import Policy as EnginePolicy

AWS_TYPE = "ml.g5.xlarge"


def aws_export(api, policy):
    return api.get(f"/api/policies/{policy.pk}/export/aws-batch/")


def kueue_export(api, policy, query: str = ""):
    return api.get(f"/api/policies/{policy.pk}/export/kueue/{query}")


def test_a_viewer_exports_the_aws_example_as_aws_batch_inputs(viewer_api, aws_policy):
    response = aws_export(viewer_api, aws_policy)
    assert response.status_code == 200
    body = response.json()
    assert body["policy"] == aws_policy.pk
    qs1 = body["documents"]["create-quota-share-QS1.json"]
    assert qs1["resourceSharingConfiguration"] == {"strategy": "LEND_AND_BORROW", "borrowLimit": 200}
    assert qs1["preemptionConfiguration"] == {"inSharePreemption": "ENABLED"}
    assert body["documents"]["create-service-environment.json"]["capacityLimits"] == [
        {"maxCapacity": 3, "capacityUnit": AWS_TYPE}
    ]
    assert "create-quota-share --cli-input-json file://create-quota-share-QS3.json" in body["script"]
    # a viewer reads no $ figure: the hourly price is left out, and the notes say so
    assert body["notes"][0].startswith("hourly prices are left out of this export")
    assert (
        "planner:hourly_price:ml.g5.xlarge"
        not in body["documents"]["create-service-environment.json"]["tags"]
    )


def test_finance_exports_the_hourly_prices_as_tags(client_for, aws_policy):
    body = aws_export(client_for("finance"), aws_policy).json()
    assert (
        body["documents"]["create-service-environment.json"]["tags"]["planner:hourly_price:ml.g5.xlarge"]
        == "1.41"
    )
    assert any("hourly_price of ml.g5.xlarge" in note for note in body["notes"])


def test_a_viewer_exports_kueue_yaml(viewer_api, aws_policy):
    response = kueue_export(viewer_api, aws_policy, "?priorities=0,3,4")
    assert response.status_code == 200
    assert response["Content-Type"].startswith("text/yaml")
    text = response.content.decode()
    assert text.startswith("# Kueue (kueue.x-k8s.io/v1beta1) configuration of policy aws-example")
    docs = list(yaml.safe_load_all(text))
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Cohort", "ResourceFlavor"] + ["ClusterQueue"] * 3 + ["WorkloadPriorityClass"] * 3
    assert [d["value"] for d in docs if d["kind"] == "WorkloadPriorityClass"] == [0, 3, 4]


def test_kueue_export_answers_a_yaml_accept_header_and_bad_priorities(viewer_api, aws_policy):
    response = viewer_api.get(f"/api/policies/{aws_policy.pk}/export/kueue/", HTTP_ACCEPT="text/yaml")
    assert response.status_code == 200
    response = kueue_export(viewer_api, aws_policy, "?priorities=high")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "priorities"
    response = kueue_export(viewer_api, aws_policy, "?priorities=12000")
    assert response.status_code == 400 and "0 to 9999" in response.json()["error"]["message"]


def test_exports_need_a_signed_in_user_and_an_existing_policy(client_for, aws_policy):
    anonymous = APIClient()
    assert aws_export(anonymous, aws_policy).status_code == 401
    assert kueue_export(anonymous, aws_policy).status_code == 401
    assert client_for(None).get(f"/api/policies/{aws_policy.pk}/export/aws-batch/").status_code == 403
    viewer = client_for("viewer")
    assert viewer.get("/api/policies/999999/export/aws-batch/").status_code == 404
    assert viewer.get("/api/policies/999999/export/kueue/").status_code == 404


def imported(api, **payload):
    return api.post("/api/policy-imports/", payload, format="json")


def test_an_admin_imports_an_aws_bundle_into_a_new_pool(admin_api, aws_policy):
    bundle = aws_export(admin_api, aws_policy).json()
    response = imported(admin_api, format="aws-batch", pool="aws-copy", name="aws-copy", bundle=bundle)
    assert response.status_code == 201, response.content
    copy = Policy.objects.get(pk=response.json()["id"])
    assert copy.pool.name == "aws-copy" and copy.pool.capacity_dict() == {AWS_TYPE: 3}
    original = aws_policy.engine_policy()
    assert copy.engine_policy() == EnginePolicy(**{**original.__dict__, "name": "aws-copy"})
    assert "Imported from AWS Batch" in copy.description


def test_an_admin_imports_kueue_yaml_onto_the_existing_pool(admin_api, aws_policy):
    text = kueue_export(admin_api, aws_policy).content.decode()
    response = imported(admin_api, format="kueue", pool="aws-example", name="aws-from-kueue", yaml=text)
    assert response.status_code == 201, response.content
    policy = Policy.objects.get(name="aws-from-kueue")
    assert policy.pool == aws_policy.pool
    qs1 = policy.engine_policy().shares[0]
    # Kueue has no percent: 200% of 1 instance came back as an absolute limit of 2.
    assert (qs1.name, qs1.borrow_limit_percent, dict(qs1.borrowing_limit)) == ("QS1", None, {AWS_TYPE: 2})


def test_an_import_from_an_uploaded_file(admin_api, aws_policy):
    text = kueue_export(admin_api, aws_policy).content
    upload = SimpleUploadedFile("config.yaml", text, content_type="text/yaml")
    response = admin_api.post(
        "/api/policy-imports/",
        {"format": "kueue", "pool": "uploaded", "name": "uploaded", "file": upload},
        format="multipart",
    )
    assert response.status_code == 201, response.content
    assert Pool.objects.get(name="uploaded").capacity_dict() == {AWS_TYPE: 3}


def test_a_viewer_may_not_import(viewer_api, aws_policy):
    bundle = aws_export(viewer_api, aws_policy).json()
    response = imported(viewer_api, format="aws-batch", pool="nope", name="nope", bundle=bundle)
    assert response.status_code == 403
    assert not Pool.objects.filter(name="nope").exists()


def test_imports_that_cannot_be_stored_say_why_and_store_nothing(admin_api, aws_policy):
    bundle = aws_export(admin_api, aws_policy).json()
    # The name is taken.
    response = imported(admin_api, format="aws-batch", pool="other", bundle=bundle, name="aws-example")
    assert response.status_code == 400 and response.json()["error"]["field"] == "name"
    # The existing pool has another capacity.
    bundle["documents"]["create-service-environment.json"]["capacityLimits"][0]["maxCapacity"] = 5
    response = imported(admin_api, format="aws-batch", pool="aws-example", bundle=bundle, name="five")
    assert response.status_code == 400 and response.json()["error"]["field"] == "pool"
    assert (
        "pool aws-example has 3 x ml.g5.xlarge but the imported configuration has 5"
        in (response.json()["error"]["message"])
    )
    # A document that is wrong is named with its field.
    bundle["documents"]["create-quota-share-QS2.json"]["resourceSharingConfiguration"]["strategy"] = "SHARE"
    response = imported(admin_api, format="aws-batch", pool="fresh", bundle=bundle, name="fresh")
    assert response.status_code == 400
    field = response.json()["error"]["field"]
    assert field == "create-quota-share-QS2.json.resourceSharingConfiguration.strategy"
    response = imported(admin_api, format="kueue", pool="fresh", yaml="kind: [", name="fresh")
    assert response.status_code == 400 and "not valid YAML" in response.json()["error"]["message"]
    response = imported(admin_api, format="kueue", pool="fresh", name="fresh")
    assert response.status_code == 400 and response.json()["error"]["field"] == "yaml"
    assert not Pool.objects.filter(name__in=["other", "fresh"]).exists()
    assert not Policy.objects.filter(name__in=["five", "fresh"]).exists()


def test_the_schema_lists_the_export_and_import_operations(viewer_api):
    schema = viewer_api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = schema["paths"]
    assert "text/yaml" in paths["/api/policies/{id}/export/kueue/"]["get"]["responses"]["200"]["content"]
    assert "get" in paths["/api/policies/{id}/export/aws-batch/"]
    assert set(paths["/api/policy-imports/"]["post"]["requestBody"]["content"]) == {
        "application/json",
        "multipart/form-data",
    }
