"""Capacity curves and worth searches through the API, replayed by (eager) Celery tasks.

The scenario: a pool of 4 one-GPU instances at $1 an hour, shares a and b with 2 each; a submits
four one-hour jobs at once. Pooled (both lend and borrow), a borrows b's idle 2 and nobody waits.
Split (both reserve), two of a's jobs wait an hour until a's quota grows to 4: at 7 instances
(3.5 + 3.5, the tie to the first share).
"""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from planner.capacity.models import Policy, Pool, ShareSpec
from planner.curves.launch import CurveLaunch, SearchLaunch, start_curve, start_search
from planner.curves.models import CapacityCurve, CurvePoint, SearchPoint, WorthSearch
from planner.curves.tasks import replay_curve_point
from planner.traces.models import Trace, read_upload
from tests.fixtures import one_type_pool, policy_with_shares

TRACE_CSV = b"""job_id,submit_time,share,duration
1,0,a,3600
2,0,a,3600
3,0,a,3600
4,0,a,3600
"""


@pytest.fixture
def pool(db) -> Pool:
    return one_type_pool("four", "gpu", 4, hourly_price=1.0)


def make_policy(pool: Pool, name: str, strategy: str) -> Policy:
    shares = [ShareSpec(share, strategy, None, "never", "any", {"gpu": 2}) for share in ("a", "b")]
    return policy_with_shares(name, pool, shares)


@pytest.fixture
def split(pool) -> Policy:
    return make_policy(pool, "split", "RESERVE")


@pytest.fixture
def pooled(pool) -> Policy:
    return make_policy(pool, "pooled", "LEND_AND_BORROW")


@pytest.fixture
def trace(db) -> Trace:
    return Trace.store(read_upload(io.BytesIO(TRACE_CSV), format="planner-csv"), name="four jobs")


def create(client, url, payload, capture):
    with capture(execute=True):
        response = client.post(url, payload, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def test_a_curve_replays_every_policy_at_every_size(
    admin_api, split, pooled, trace, eager_celery, django_capture_on_commit_callbacks
):
    body = create(
        admin_api,
        "/api/curves/",
        {"trace": trace.pk, "policies": [split.pk, pooled.pk], "sizes": [4, 8]},
        django_capture_on_commit_callbacks,
    )
    detail = admin_api.get(f"/api/curves/{body['id']}/").json()
    assert detail["status"] == "succeeded" and len(detail["points"]) == 4
    rows = {(row["policy"], row["size"]): row for row in detail["rows"]}
    # split at 4: two jobs wait the hour (p95 of [0, 0, 3600, 3600] = 3,600 s); at 8 nobody waits.
    assert rows["split", 4]["worst_p95_seconds"] == 3600
    assert rows["split", 8]["worst_p95_seconds"] == 0 and rows["pooled", 4]["worst_p95_seconds"] == 0
    # one window of 2 h (split at 4 ends last): 4 busy GPU-hours over 4 GPUs x 2 h, then 8 x 2 h.
    assert rows["split", 4]["utilization"] == pytest.approx(0.5)
    assert rows["split", 8]["utilization"] == pytest.approx(0.25)
    # 8 instances at $1 an hour for 730 hours.
    assert rows["split", 8]["monthly_price_usd"] == pytest.approx(5840)
    scaled = CurvePoint.objects.get(curve_id=body["id"], policy_name="split", size=8).policy_snapshot
    assert [share["capacity"]["gpu"] for share in scaled["shares"]] == [4, 4]


def test_viewers_read_curves_without_dollars(
    admin_api, viewer_api, split, trace, eager_celery, django_capture_on_commit_callbacks
):
    body = create(
        admin_api, "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "sizes": [4]},
        django_capture_on_commit_callbacks,
    )  # fmt: skip
    seen = viewer_api.get(f"/api/curves/{body['id']}/").json()
    assert "usd" not in str(seen) and "price" not in str(seen)
    assert seen["rows"][0]["rerun_gpu_hours_per_month"] == 0
    pages = {}
    for role, api in (("viewer", viewer_api), ("admin", admin_api)):
        pages[role] = Client()
        pages[role].force_login(api.user)
    csv = pages["viewer"].get(f"/curves/{body['id']}/points.csv")  # the page's CSV: the same rule
    assert csv.status_code == 200 and "$" not in csv.content.decode()
    assert "$" in pages["admin"].get(f"/curves/{body['id']}/points.csv").content.decode()


def test_bad_curves_are_refused_naming_the_field(admin_api, split, trace):
    response = admin_api.post(
        "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "sizes": [0]}, format="json"
    )
    assert response.status_code == 400 and "sizes" in response.json()
    response = admin_api.post(
        "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "instance_type": "tpu"}, format="json"
    )
    assert response.status_code == 400 and "tpu" in str(response.json()["instance_type"])
    response = admin_api.post(
        "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "urgent_shares": ["zz"]}, format="json"
    )
    assert response.status_code == 400 and "urgent_shares" in response.json()
    assert not CapacityCurve.objects.exists()  # nothing half-stored


def test_the_worth_search_finds_the_size_to_a_whole_instance(
    admin_api, client_for, split, pooled, trace, eager_celery, django_capture_on_commit_callbacks
):
    body = create(
        admin_api,
        "/api/worth-searches/",
        {"trace": trace.pk, "policy_a": split.pk, "policy_b": pooled.pk, "parallel": 2},
        django_capture_on_commit_callbacks,
    )
    detail = admin_api.get(f"/api/worth-searches/{body['id']}/").json()
    assert detail["status"] == "succeeded" and detail["exact"]
    # split matches from 7 instances: 6 (a's quota 3) still leaves one job waiting an hour.
    assert detail["answer_size"] == 7 and detail["answer_gpus"] == 7
    # step 1: 4 and 5 short; step 2: 6 short, 8 matches; step 3: 7 matches; (6, 7) closes it.
    tries = sorted((p["step"], p["size"], p["matches"]) for p in detail["points"] if p["role"] == "candidate")
    assert tries == [(1, 4, False), (1, 5, False), (2, 6, False), (2, 8, True), (3, 7, True)]
    # 3 more instances x $1 x 730 h; pooled preempts nobody, so its reruns cost nothing.
    assert detail["sentence"] == (
        "split needs 7 GPUs (+3, +75%) to match pooled's p95 waits at 4: $2,190 a month more at "
        "list price, against $0 a month of rerun cost under pooled."
    )
    viewer = client_for("viewer").get(f"/api/worth-searches/{body['id']}/").json()
    assert viewer["sentence"] == (
        "split needs 7 GPUs (+3, +75%) to match pooled's p95 waits at 4, against 0 GPU-hours a "
        "month of reruns under pooled."
    )
    assert "usd" not in str(viewer)


def test_a_search_refuses_the_same_policy_twice(admin_api, split, trace):
    response = admin_api.post(
        "/api/worth-searches/", {"trace": trace.pk, "policy_a": split.pk, "policy_b": split.pk}, format="json"
    )
    assert response.status_code == 400 and "policy_b" in response.json()
    assert not WorthSearch.objects.exists()


def test_viewers_may_not_start_a_search(client_for, split, pooled, trace):
    response = client_for("viewer").post(
        "/api/worth-searches/",
        {"trace": trace.pk, "policy_a": split.pk, "policy_b": pooled.pk},
        format="json",
    )
    assert response.status_code == 403 and not WorthSearch.objects.exists()


def test_points_whose_worker_died_are_replayed_when_the_curve_is_read(
    admin_api, split, trace, eager_celery, django_capture_on_commit_callbacks
):
    curve = start_curve(CurveLaunch(trace=trace, policies=[split], sizes=[4, 6]), enqueue=False)
    stale = timezone.now() - timedelta(hours=1)
    curve.points.update(status="running", attempts=1, heartbeat=stale)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/curves/{curve.pk}/")
    assert set(curve.points.values_list("status", "attempts")) == {("succeeded", 2)}


def test_a_search_whose_worker_died_goes_on_when_read(
    admin_api, split, pooled, trace, eager_celery, django_capture_on_commit_callbacks
):
    # The first step's replays were taken by a worker that died before recording anything.
    search = start_search(
        SearchLaunch(trace=trace, policy_a=split, policy_b=pooled, parallel=2), enqueue=False
    )
    stale = timezone.now() - timedelta(hours=1)
    search.points.update(status="running", attempts=1, heartbeat=stale)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/worth-searches/{search.pk}/")
    search.refresh_from_db()
    assert search.status == "succeeded" and search.answer_size == 7


def test_points_whose_process_still_runs_are_not_replayed_again_when_read(
    admin_api, split, pooled, trace, live_process, eager_celery, django_capture_on_commit_callbacks
):
    """A stale heartbeat alone (one long compiled pass) reaps no curve or search point."""
    curve = start_curve(CurveLaunch(trace=trace, policies=[split], sizes=[4, 6]), enqueue=False)
    search = start_search(
        SearchLaunch(trace=trace, policy_a=split, policy_b=pooled, parallel=2), enqueue=False
    )
    stale = timezone.now() - timedelta(hours=1)
    for points in (curve.points, search.points):
        points.update(status="running", attempts=1, heartbeat=stale, worker_process=live_process)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/curves/{curve.pk}/")
        admin_api.get(f"/api/worth-searches/{search.pk}/")
    assert set(curve.points.values_list("status", "attempts")) == {("running", 1)}
    assert set(search.points.values_list("status", "attempts")) == {("running", 1)}


def test_a_replay_task_is_idempotent(split, trace, eager_celery, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        curve = start_curve(CurveLaunch(trace=trace, policies=[split], sizes=[4]))
    point = curve.points.get()
    assert replay_curve_point.apply(args=[point.pk]).get() == "nothing to do"
    point.refresh_from_db()
    assert point.attempts == 1


def test_a_failed_replay_fails_the_search_with_its_reason(split, pooled, trace):
    search = start_search(SearchLaunch(trace=trace, policy_a=split, policy_b=pooled), enqueue=False)
    SearchPoint.objects.filter(search=search, role="target").update(
        status="failed", error="worker ran out of memory"
    )
    from planner.curves.launch import advance_search

    assert advance_search(search.pk) == "failed"
    search.refresh_from_db()
    assert search.error == "the replay of pooled at 4 GPUs failed: worker ran out of memory"


# -- the pages' forms (Django's test client) ------------------------------------------------


@pytest.fixture
def admin_page(user_with_role) -> Client:
    client = Client()
    client.force_login(user_with_role("page-admin", "admin"))
    return client


def test_the_curve_form_starts_a_curve(
    admin_page, pool, trace, eager_celery, django_capture_on_commit_callbacks
):
    split = make_policy(pool, "split", "RESERVE")
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_page.post(
            "/curves/",
            {"form": "curve", "curve-trace": trace.pk, "curve-policies": [split.pk],
             "curve-mode": "proportional", "curve-sizes": "4, 8"},
        )  # fmt: skip
    curve = CapacityCurve.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/curves/{curve.pk}/"
    assert curve.sizes == [4, 8] and curve.today == 4 and curve.status == "succeeded"
    page = admin_page.get(f"/curves/{curve.pk}/").content.decode()
    # split at today's 4: two of a's jobs wait the hour; at 8 nobody waits.
    assert "1.0 h" in page and "0 s from 8 GPUs on" in page


def test_bad_sizes_are_refused_next_to_the_field(admin_page, pool, trace):
    split = make_policy(pool, "split", "RESERVE")
    response = admin_page.post(
        "/curves/",
        {"form": "curve", "curve-trace": trace.pk, "curve-policies": [split.pk], "curve-sizes": "4, four"},
    )
    assert response.status_code == 400
    assert "&#x27;four&#x27; is not a whole number" in response.content.decode()
    assert not CapacityCurve.objects.exists()


def test_the_worth_form_refuses_one_policy_twice(admin_page, pool, trace):
    split = make_policy(pool, "split", "RESERVE")
    response = admin_page.post(
        "/curves/",
        {"form": "worth", "worth-trace": trace.pk, "worth-policy_a": split.pk, "worth-policy_b": split.pk,
         "worth-metric": "share_p95", "worth-tolerance_seconds": 60, "worth-tolerance_percent": 2,
         "worth-mode": "proportional", "worth-parallel": 2},
    )  # fmt: skip
    assert response.status_code == 400 and "compare two different policies" in response.content.decode()
    assert not WorthSearch.objects.exists()


def test_a_link_fills_the_forms(admin_page, pool, trace):
    split, pooled = make_policy(pool, "split", "RESERVE"), make_policy(pool, "pooled", "LEND_AND_BORROW")
    page = admin_page.get(
        f"/curves/?trace={trace.pk}&policies={split.pk}&policies={pooled.pk}"
    ).content.decode()
    assert f'<option value="{split.pk}" selected>split</option>' in page
    assert f'<option value="{pooled.pk}" selected>pooled</option>' in page


# -- training plans ------------------------------------------------------------------------------

# Two more instances for a during the first hour: its four jobs start at once and end at 1 h.
PLAN = {"instance_type": "gpu", "instances": 2, "share": "a", "start": 0, "end": 3600}


def test_a_training_plan_is_one_more_point_at_todays_size(
    admin_api, split, trace, eager_celery, django_capture_on_commit_callbacks
):
    body = create(
        admin_api, "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "sizes": [8], "plans": [PLAN]},
        django_capture_on_commit_callbacks,
    )  # fmt: skip
    curve = CapacityCurve.objects.get(pk=body["id"])
    assert curve.sizes == [4, 8]  # today's size joins the curve: the plan is compared with it
    assert body["plans"] == [{**PLAN, "start": 0.0, "end": 3600.0, "policy": split.pk, "line": 0,
                              "label": "+2 x gpu for a, hours 0-1"}]  # fmt: skip
    planned = CurvePoint.objects.get(curve=curve, plan=0)
    assert planned.size == 4 and len(planned.policy_snapshot["changes"]) == 4  # pool and a, up and down
    detail = admin_api.get(f"/api/curves/{curve.pk}/").json()
    assert [point["plan"] for point in detail["points"]] == [None, 0, None]
    assert len(detail["rows"]) == 2  # the plan is no point of the line
    [row] = detail["plan_rows"]
    # window 2 h (split at 4); the plan: 2 instances x 1 h = 2 GPU-hours, $2; 4 + 2 / 2 = 5 GPUs.
    assert (row["hours"], row["gpu_hours"], row["cost_usd"], row["row"]["gpus"]) == (1, 2, 2, 5)
    # a pool of $2,920 a month, and $2 in 2 h is $730 a month of 730 h.
    assert row["row"]["monthly_price_usd"] == pytest.approx(3650)
    # a's p95 falls from 3,600 s to 0: 1 h for $2 (500 h per $1,000) and 2 GPU-hours (500 per 1,000).
    effect = row["share_effect"]
    assert (effect["before_seconds"], effect["after_seconds"], effect["saved_hours"]) == (3600, 0, 1)
    assert effect["hours_per_1000_usd"] == 500 and effect["hours_per_1000_gpu_hours"] == 500
    csv = _csv(admin_api, curve)
    assert "+2 x gpu for a, hours 0-1" in csv and "$" in csv


def _csv(api, curve) -> str:
    page = Client()
    page.force_login(api.user)
    response = page.get(f"/curves/{curve.pk}/points.csv")
    assert response.status_code == 200
    return response.content.decode()


def test_viewers_read_a_plan_in_gpu_hours_not_dollars(
    admin_api, viewer_api, split, trace, eager_celery, django_capture_on_commit_callbacks
):
    body = create(
        admin_api, "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "sizes": [4], "plans": [PLAN]},
        django_capture_on_commit_callbacks,
    )  # fmt: skip
    seen = viewer_api.get(f"/api/curves/{body['id']}/").json()
    assert "usd" not in str(seen) and "price" not in str(seen)
    assert seen["plan_rows"][0]["share_effect"]["hours_per_1000_gpu_hours"] == 500
    csv = _csv(viewer_api, CapacityCurve.objects.get(pk=body["id"]))
    assert "+2 x gpu for a" in csv and "$" not in csv
    page = Client()
    page.force_login(viewer_api.user)
    text = page.get(f"/curves/{body['id']}/").content.decode()
    assert "cuts a&#x27;s p95 wait from 1.0 h to 0 s for 2 GPU-hours" in text and "$" not in text


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"share": "zz"}, "plans[0].share"),
        ({"instance_type": "tpu"}, "plans[0].instance_type"),
        ({"end": 0}, "plans[0].end"),
        ({"policy": 999_999}, "plans[0].policy"),
    ],
)
def test_a_bad_plan_is_refused_naming_its_field(admin_api, split, trace, change, field):
    payload = {"trace": trace.pk, "policies": [split.pk], "sizes": [4], "plans": [{**PLAN, **change}]}
    response = admin_api.post("/api/curves/", payload, format="json")
    assert response.status_code == 400 and response.json()["plans"][0].startswith(f"{field}: ")
    assert not CapacityCurve.objects.exists() and not CurvePoint.objects.exists()


def test_a_plan_with_too_few_instances_is_refused_by_the_field(admin_api, split, trace):
    payload = {"trace": trace.pk, "policies": [split.pk], "plans": [{**PLAN, "instances": 0}]}
    response = admin_api.post("/api/curves/", payload, format="json")
    # DRF's own check, before the plan is read: the plan's index, then its field
    assert response.status_code == 400 and "instances" in response.json()["plans"]["0"]
    assert not CapacityCurve.objects.exists()


def test_a_policy_with_a_calendar_is_replayed_at_its_own_size_only(admin_api, split, trace):
    from scheduling.capacity_plans import TrainingPlan

    split.add_training_plan(TrainingPlan("gpu", 1, "b", 0, 3600))
    response = admin_api.post(
        "/api/curves/", {"trace": trace.pk, "policies": [split.pk], "sizes": [4, 8]}, format="json"
    )
    assert response.status_code == 400 and "not scaled" in str(response.json()["sizes"])
    response = admin_api.post(
        "/api/curves/",
        {"trace": trace.pk, "policies": [split.pk], "sizes": [4], "plans": [PLAN]},
        format="json",
    )
    assert response.status_code == 201, response.json()
    planned = CurvePoint.objects.get(plan=0).policy_snapshot
    assert len(planned["changes"]) == 6  # b's plan and a's at the same instants: 6 changes (pool merged)


def test_an_admin_makes_a_plan_a_policy_and_is_sent_to_a_study_of_both(admin_page, client_for, split, trace):
    curve = start_curve(
        CurveLaunch(trace=trace, policies=[split], sizes=[4], plans=[(None, _plan(PLAN))]), enqueue=False
    )
    url = f"/curves/{curve.pk}/plans/0/policy/"
    finance = Client()
    finance.force_login(client_for("finance").user)
    assert finance.post(url).status_code == 403
    assert Policy.objects.count() == 1
    response = admin_page.post(url)
    made = Policy.objects.exclude(pk=split.pk).get()
    assert made.parent_id == split.pk and made.name == "split + 2 x gpu for a"
    assert len(made.change_specs()) == 4 and not split.change_specs()
    assert response.status_code == 302
    assert response["Location"] == (
        f"/studies/new/?trace={trace.pk}&policy={split.pk}&policy={made.pk}"
        "&name=split+with+and+without+%2B2+x+gpu+for+a%2C+hours+0-1"
    )
    again = admin_page.post(url)  # a second click makes a second variant, not a clash of names
    assert again.status_code == 302 and Policy.objects.filter(parent=split).count() == 2


def _plan(attrs: dict):
    from scheduling.capacity_plans import TrainingPlan

    return TrainingPlan(
        attrs["instance_type"], attrs["instances"], attrs["share"], attrs["start"], attrs["end"]
    )


def test_the_curve_form_takes_a_plan_and_puts_its_errors_next_to_its_fields(
    admin_page, split, trace, eager_celery, django_capture_on_commit_callbacks
):
    form = {"form": "curve", "curve-trace": trace.pk, "curve-policies": [split.pk], "curve-sizes": "8",
            "curve-mode": "proportional", "curve-plan_instance_type": "gpu", "curve-plan_instances": "2",
            "curve-plan_share": "zz",
            "curve-plan_start": "0", "curve-plan_end": "3600"}  # fmt: skip
    response = admin_page.post("/curves/", form)
    assert response.status_code == 400 and not CapacityCurve.objects.exists()
    errors = response.context["curve_form"].errors
    assert errors["plan_share"] == ["'zz' is not a share of the policy (split)"]
    response = admin_page.post("/curves/", {**form, "curve-plan_share": ""})
    assert "a training plan needs this too" in str(response.context["curve_form"].errors["plan_share"])
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_page.post("/curves/", {**form, "curve-plan_share": "a"})
    curve = CapacityCurve.objects.get()
    assert response.status_code == 302 and curve.sizes == [4, 8] and curve.plans[0]["share"] == "a"
    page = admin_page.get(f"/curves/{curve.pk}/").content.decode()
    assert "cuts a&#x27;s p95 wait from 1.0 h to 0 s for $2 (500.00 h of p95 per $1,000)." in page
    assert "Make this plan a policy" in page
