"""Pools from real quota tables in one step: ``manage.py import_quota_table`` and the admin-only
``/api/quota-tables/`` upload create a pool, a policy and one share per team; bad tables are
refused naming the row and field, and nothing is stored."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from planner.capacity.models import Policy, Pool

pytestmark = pytest.mark.django_db

QUOTAS = Path(__file__).resolve().parents[3] / "shared" / "data" / "vc-quotas"
needs_data = pytest.mark.skipif(not QUOTAS.exists(), reason="the shared vc-quotas tables are not here")

# Two days of three VCs: the total column must add up.
HELIOS_SMALL = b"date,vcA,vcB,vcC,total\n2020-04-01,8,16,0,24\n2020-04-02,8,24,8,40\n"


def quotas_of(policy: Policy) -> dict[str, int]:
    return {spec.name: spec.capacity.get("gpu", 0) for spec in policy.share_specs()}


@needs_data
def test_the_venus_nodes_table_becomes_a_pool_of_eight_gpu_nodes():
    call_command("import_quota_table", str(QUOTAS / "venus-nodes-per-vc.csv"), kind="nodes", name="venus")
    policy = Policy.objects.get(name="venus")
    quotas = quotas_of(policy)
    assert len(quotas) == 15
    assert quotas["vcEwI"] == 72 and quotas["vcgkz"] == 8  # 9 and 1 nodes of 8 GPUs
    assert policy.pool.name == "venus" and policy.pool.capacity_dict() == {"gpu": sum(quotas.values())}
    assert {spec.strategy for spec in policy.share_specs()} == {"RESERVE"}
    assert "8 GPUs each" in policy.description


@needs_data
def test_one_helios_day_with_lending_and_borrowing():
    call_command(
        "import_quota_table",
        str(QUOTAS / "helios-venus-gpus-per-vc-per-day.csv"),
        kind="helios-day",
        day="2020-04-01",
        strategy="LEND_AND_BORROW",
        name="helios-april",
    )
    policy = Policy.objects.get(name="helios-april")
    assert policy.pool.total_gpus() == 968  # the table's total that day
    assert len(quotas_of(policy)) == 25
    assert {spec.strategy for spec in policy.share_specs()} == {"LEND_AND_BORROW"}


def test_philly_style_nodes_with_four_gpus_per_node(tmp_path):
    table = tmp_path / "philly.csv"
    table.write_text("vc,node num\n6214e9,64\n7f04ca,32\n")
    call_command("import_quota_table", str(table), kind="nodes", gpus_per_node=4, name="philly")
    assert quotas_of(Policy.objects.get(name="philly")) == {"6214e9": 256, "7f04ca": 128}


def test_a_name_in_use_or_a_missing_day_is_refused(tmp_path):
    table = tmp_path / "helios.csv"
    table.write_bytes(HELIOS_SMALL)
    call_command("import_quota_table", str(table), kind="helios-day", name="h")
    assert quotas_of(Policy.objects.get(name="h")) == {"vcA": 8, "vcB": 24, "vcC": 8}  # the last day
    with pytest.raises(CommandError, match="already exists"):
        call_command("import_quota_table", str(table), kind="helios-day", name="h")
    with pytest.raises(CommandError, match="day: '2021-01-01' is not a day of the table"):
        call_command("import_quota_table", str(table), kind="helios-day", day="2021-01-01", name="other")
    assert Pool.objects.count() == 1


def test_the_api_upload_creates_pool_policy_and_shares(admin_api):
    upload = SimpleUploadedFile("helios.csv", HELIOS_SMALL, content_type="text/csv")
    response = admin_api.post(
        "/api/quota-tables/",
        {"file": upload, "kind": "helios-day", "day": "2020-04-01", "name": "helios-small"},
        format="multipart",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["name"] == "helios-small"
    assert [share["name"] for share in body["shares"]] == ["vcA", "vcB", "vcC"]
    assert Pool.objects.get(pk=body["pool"]).capacity_dict() == {"gpu": 24}


def test_a_bad_table_names_the_row_and_field_and_stores_nothing(admin_api):
    upload = SimpleUploadedFile("nodes.csv", b"vc,node num\nteamA,4\nteamB,four\n", content_type="text/csv")
    response = admin_api.post(
        "/api/quota-tables/", {"file": upload, "kind": "nodes", "name": "bad"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"] == {
        "row": 2,
        "field": "node num",
        "message": "row 2, node num: 'four' is not a whole number",
    }
    assert not Pool.objects.exists() and not Policy.objects.exists()


def test_only_admins_upload_quota_tables(client_for):
    upload = SimpleUploadedFile("helios.csv", HELIOS_SMALL, content_type="text/csv")
    response = client_for("viewer").post(
        "/api/quota-tables/", {"file": upload, "kind": "helios-day", "name": "nope"}, format="multipart"
    )
    assert response.status_code == 403
    assert not Pool.objects.exists()


def test_an_unknown_kind_is_refused(admin_api):
    upload = SimpleUploadedFile("helios.csv", HELIOS_SMALL, content_type="text/csv")
    response = admin_api.post(
        "/api/quota-tables/", {"file": upload, "kind": "gpus", "name": "x"}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "kind"
