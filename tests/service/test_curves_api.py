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

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.curves.launch import start_curve, start_search
from planner.curves.models import CapacityCurve, CurvePoint, SearchPoint, WorthSearch
from planner.curves.tasks import replay_curve_point
from planner.traces.models import Trace, read_upload

TRACE_CSV = b"""job_id,submit_time,share,duration
1,0,a,3600
2,0,a,3600
3,0,a,3600
4,0,a,3600
"""


@pytest.fixture
def pool(db) -> Pool:
    InstanceType.objects.create(name="gpu", gpus=1, hourly_price=1.0)
    pool = Pool.objects.create(name="four")
    pool.set_capacity({"gpu": 4})
    return pool


def make_policy(pool: Pool, name: str, strategy: str) -> Policy:
    policy = Policy.objects.create(name=name, pool=pool)
    policy.replace_shares(
        [ShareSpec(share, strategy, None, "never", "any", {"gpu": 2}) for share in ("a", "b")]
    )
    return policy


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
    curve = start_curve(trace=trace, policies=[split], sizes=[4, 6], enqueue=False)
    stale = timezone.now() - timedelta(hours=1)
    curve.points.update(status="running", attempts=1, heartbeat=stale)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/curves/{curve.pk}/")
    assert set(curve.points.values_list("status", "attempts")) == {("succeeded", 2)}


def test_a_search_whose_worker_died_goes_on_when_read(
    admin_api, split, pooled, trace, eager_celery, django_capture_on_commit_callbacks
):
    # The first step's replays were taken by a worker that died before recording anything.
    search = start_search(trace=trace, policy_a=split, policy_b=pooled, parallel=2, enqueue=False)
    stale = timezone.now() - timedelta(hours=1)
    search.points.update(status="running", attempts=1, heartbeat=stale)
    with django_capture_on_commit_callbacks(execute=True):
        admin_api.get(f"/api/worth-searches/{search.pk}/")
    search.refresh_from_db()
    assert search.status == "succeeded" and search.answer_size == 7


def test_a_replay_task_is_idempotent(split, trace, eager_celery, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        curve = start_curve(trace=trace, policies=[split], sizes=[4])
    point = curve.points.get()
    assert replay_curve_point.apply(args=[point.pk]).get() == "nothing to do"
    point.refresh_from_db()
    assert point.attempts == 1


def test_a_failed_replay_fails_the_search_with_its_reason(split, pooled, trace):
    search = start_search(trace=trace, policy_a=split, policy_b=pooled, enqueue=False)
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
