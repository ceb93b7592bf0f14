"""What a request may ask for is bounded and said: worth-search sizes, curve sizes and names,
times before 1970, jobs of absurd sizes, share weights, orderings by $ fields, duplicating a stored
policy the engine now refuses. Each refusal is a 400 naming the field, with nothing stored."""

from __future__ import annotations

import io
import json

import pytest

from planner.capacity.models import CalendarChange, InstanceType, Policy
from planner.curves.models import CapacityCurve, WorthSearch
from planner.traces.models import Trace, read_upload
from tests.service import test_curves_api as curves_api
from tests.service.conftest import AWS_TYPE

pytestmark = pytest.mark.django_db

TRACE_CSV = b"""job_id,submit_time,share,duration
1,0,a,3600
2,0,a,3600
"""


# The curve tests' pool of four 1-GPU instances, and its A (RESERVE) and B (LEND_AND_BORROW) policies of
# two shares (fixtures).
pool, split, pooled = curves_api.pool, curves_api.split, curves_api.pooled


@pytest.fixture
def trace(db) -> Trace:
    return Trace.store(read_upload(io.BytesIO(TRACE_CSV), format="planner-csv"), name="two jobs")


# -- worth searches and curves ----------------------------------------------------------------


@pytest.mark.parametrize("upper", [99999999999999999999, 2**63, 1_000_001])
def test_a_worth_search_upper_bound_past_a_million_instances_is_a_400(admin_api, split, pooled, trace, upper):
    response = admin_api.post(
        "/api/worth-searches/",
        {"trace": trace.pk, "policy_a": split.pk, "policy_b": pooled.pk, "upper": upper},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {"upper": ["Ensure this value is less than or equal to 1000000."]}
    assert not WorthSearch.objects.exists()


@pytest.mark.parametrize("sizes", [[10**12], [1_000_001], [99999999999999999999]])
def test_a_curve_size_past_a_million_instances_is_a_400(admin_api, split, trace, sizes):
    payload = {"trace": trace.pk, "policies": [split.pk], "sizes": sizes}
    response = admin_api.post("/api/curves/", payload, format="json")
    assert response.status_code == 400 and "sizes" in response.json()
    assert not CapacityCurve.objects.exists()


def test_a_curve_factor_making_a_size_past_a_million_is_refused_naming_it(admin_api, split, trace):
    from scheduling.capacity_curve import curve_sizes
    from scheduling.errors import InputError

    with pytest.raises(InputError) as caught:
        curve_sizes(20_000, factors=[1, 60])
    assert str(caught.value) == "factors[1]: 60 x 20,000 is 1,200,000 instances: a size is at most 1,000,000"


@pytest.mark.parametrize("name", ["a\nb", "a\rb", "tab\there", "bidi\u202eevil", "esc\x1b[31m"])
def test_curve_and_search_names_hold_no_control_characters(admin_api, split, pooled, trace, name):
    payload = {"trace": trace.pk, "policies": [split.pk], "sizes": [4], "name": name}
    response = admin_api.post("/api/curves/", payload, format="json")
    assert response.status_code == 400 and "control characters" in response.json()["name"][0]
    response = admin_api.post(
        "/api/worth-searches/",
        {"trace": trace.pk, "policy_a": split.pk, "policy_b": pooled.pk, "name": name},
        format="json",
    )
    assert response.status_code == 400 and "name" in response.json()
    assert not CapacityCurve.objects.exists() and not WorthSearch.objects.exists()


@pytest.mark.parametrize("start", ["1900-01-01T00:00:00Z", "0001-01-01", -1])
def test_a_curve_plan_starting_before_1970_is_a_400(admin_api, split, trace, start):
    plan = {"instance_type": "gpu", "instances": 2, "share": "a", "start": start, "end": 3600}
    payload = {"trace": trace.pk, "policies": [split.pk], "sizes": [4], "plans": [plan]}
    response = admin_api.post("/api/curves/", payload, format="json")
    assert response.status_code == 400
    assert "is before 1970-01-01T00:00:00Z (a negative time)" in json.dumps(response.json())
    assert not CapacityCurve.objects.exists()


# -- times of the calendar ----------------------------------------------------------------------


@pytest.mark.parametrize("time", [-1, "-1", "0001-01-01", "1969-12-31T23:59:59Z"])
def test_a_change_before_1970_is_refused_alike_as_a_number_or_a_timestamp(admin_api, aws_policy, time):
    changes = [{"time": time, "capacity": {AWS_TYPE: 3}}]
    response = admin_api.patch(f"/api/policies/{aws_policy.pk}/", {"changes": changes}, format="json")
    assert response.status_code == 400
    assert "is before 1970-01-01T00:00:00Z (a negative time): times are seconds from 0" in json.dumps(
        response.json()
    )
    assert not CalendarChange.objects.exists()


def test_a_training_plan_before_1970_is_a_400(admin_api, aws_policy):
    plan = {"instance_type": AWS_TYPE, "instances": 1, "share": "QS1", "start": "1900-01-01", "end": 60}
    response = admin_api.post(f"/api/policies/{aws_policy.pk}/training-plan/", plan, format="json")
    assert response.status_code == 400 and "before 1970-01-01" in response.json()["start"][0]


def test_a_stored_policy_the_engine_now_refuses_is_not_duplicated(admin_api, aws_policy):
    # Stored before the rule held: a change at 0001-01-01 (-62,135,596,800 s).
    gpu = InstanceType.objects.get(name=AWS_TYPE)
    CalendarChange.objects.create(policy=aws_policy, time=-62_135_596_800.0, instance_type=gpu, count=3)
    response = admin_api.post(f"/api/policies/{aws_policy.pk}/duplicate/", {"name": "copy"}, format="json")
    assert response.status_code == 400
    assert "aws-example is not a valid policy, so it is not copied" in json.dumps(response.json())
    assert not Policy.objects.filter(name="copy").exists()


# -- traces -------------------------------------------------------------------------------------


@pytest.mark.parametrize("count", ["1000000000", "1000000000000", "1000001", "1e9"])
def test_a_job_of_more_than_a_million_instances_is_refused_naming_row_and_field(count):
    from scheduling.errors import InputError

    body = f"job_id,submit_time,share,duration,instance_count\na,0,s,60,1\nb,0,s,60,{count}\n".encode()
    with pytest.raises(InputError) as caught:
        read_upload(io.BytesIO(body), format="planner-csv")
    assert (caught.value.row, caught.value.field) == (2, "instance_count")
    assert caught.value.reason == f"{int(float(count)):,} instances: a job runs on at most 1,000,000"


def test_a_job_of_a_million_instances_is_read():
    body = b"job_id,submit_time,share,duration,instance_count\na,0,s,60,1000000\n"
    assert read_upload(io.BytesIO(body), format="planner-csv").instance_count[0] == 1_000_000


def test_a_trace_from_1900_is_refused():
    from scheduling.errors import InputError

    body = b"job_id,submit_time,share,duration\na,1900-01-01T00:00:00Z,s,60\n"
    with pytest.raises(InputError) as caught:
        read_upload(io.BytesIO(body), format="planner-csv")
    assert (caught.value.row, caught.value.field) == (1, "submit_time")
    assert "is before 1970-01-01T00:00:00Z" in caught.value.reason


# -- share weights ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("weight", "message"),
    [
        (1e-320, "is below the smallest positive weight 0.001"),
        (0.0001, "is below the smallest positive weight 0.001"),
        (-0.0, "-0 is not a weight"),
        ("-0", "-0 is not a weight"),
        (True, "true is not a number"),
        (-1, "is below the minimum 0"),
    ],
)
def test_a_share_weight_must_be_0_or_a_real_positive_weight(admin_api, aws_policy, weight, message):
    share = aws_policy.shares.get(name="QS2")
    response = admin_api.patch(f"/api/shares/{share.pk}/", {"fair_weight": weight}, format="json")
    assert response.status_code == 400, response.content
    assert message in json.dumps(response.json())
    share.refresh_from_db()
    assert share.fair_weight == 1


@pytest.mark.parametrize("weight", [0, 0.001, 2.5])
def test_a_weight_of_0_or_at_least_a_thousandth_is_taken(admin_api, aws_policy, weight):
    share = aws_policy.shares.get(name="QS2")
    response = admin_api.patch(f"/api/shares/{share.pk}/", {"fair_weight": weight}, format="json")
    assert response.status_code == 200, response.content
    share.refresh_from_db()
    assert share.fair_weight == weight


def test_a_policy_json_weight_of_true_is_refused(admin_api, aws_policy):
    from scheduling.errors import InputError
    from scheduling.model import parse_policy

    data = aws_policy.to_policy_dict()
    data["shares"][0]["fair_weight"] = True
    with pytest.raises(InputError) as caught:
        parse_policy(data)
    assert str(caught.value) == "shares[0].fair_weight: true is not a number"


# -- $ fields in orderings ----------------------------------------------------------------------


def test_viewers_cannot_rank_instance_types_by_price(client_for, db):
    for name, price in (("cheap", 1.0), ("dear", 9.0), ("mid", 5.0)):
        InstanceType.objects.create(name=name, gpus=1, hourly_price=price)
    clients = {role: client_for(role) for role in ("viewer", "finance")}

    def names(role: str, ordering: str) -> list[str]:
        body = clients[role].get(f"/api/instance-types/?ordering={ordering}").json()
        # (only this test's types: a type another test's committed fixture left does not matter)
        return [row["name"] for row in body["results"] if row["name"] in ("cheap", "dear", "mid")]

    assert names("finance", "-hourly_price") == ["dear", "mid", "cheap"]
    # For a viewer the ordering is ignored: the default order (by name), whatever the sign.
    assert names("viewer", "-hourly_price") == names("viewer", "hourly_price") == ["cheap", "dear", "mid"]
    assert names("viewer", "-name,-hourly_price") == ["mid", "dear", "cheap"]  # the rest still orders


def test_no_api_filter_is_a_money_field():
    from django.urls import get_resolver

    from planner.accounts.money import is_money_key

    for pattern in get_resolver().url_patterns:
        view = getattr(getattr(pattern, "callback", None), "cls", None)
        for field in getattr(view, "filterset_fields", None) or []:
            assert not is_money_key(field), (view, field)
