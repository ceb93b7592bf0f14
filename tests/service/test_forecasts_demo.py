""" "The demo pool now": a replay cut at an instant (the queue as the replay left it, the week
before as history), the busiest instant, and the demo pool made once and kept.

The trace: one share ``a`` owning one instance; h1 at 0 (100 s), then a week later j1 at W (100 s),
j2 at W + 10 (100 s) and j3 at W + 20 (50 s). The replay runs h1 0-100, j1 W to W + 100, j2 from
W + 100 and j3 from W + 200. At W + 20, j1 runs and j2, j3 wait: the most waiting (2) of any
submit time a week or more in.
"""

from __future__ import annotations

import io

import pytest
from django.test import Client

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.forecasts import cut, demo
from planner.forecasts.models import Forecast
from planner.traces.models import Trace, read_upload
from scheduling.model import parse_policy
from scheduling.replay.engine import replay

W = int(cut.WEEK)
TRACE_CSV = f"""job_id,submit_time,share,instance_type,duration,user
h1,0,a,gpu,100,ann
j1,{W},a,gpu,100,bea
j2,{W + 10},a,gpu,100,cat
j3,{W + 20},a,gpu,50,dan
""".encode()
POLICY = {
    "name": "itp-2021",
    "instance_types": {"gpu": {"gpus": 1, "hourly_price": 1.0}},
    "capacity": {"gpu": 1},
    "shares": [{"name": "a", "capacity": {"gpu": 1}, "strategy": "RESERVE"}],
}


@pytest.fixture
def columns():
    return read_upload(io.BytesIO(TRACE_CSV), format="planner-csv")


def test_the_cut_is_the_queue_the_replay_left_and_the_week_before(columns):
    result = replay(parse_policy(POLICY), columns, record_events=True)
    t0 = cut.busiest_instant(columns, result, after=W)
    assert t0 == W + 20
    snapshot = cut.snapshot_at(columns, result, t0)
    assert snapshot == {
        "time": W + 20.0,
        "running": [{"job_id": "j1", "share": "a", "instance_count": 1, "priority": 0, "instance_type": "gpu",
                     "user": "bea",
                     "started_at": float(W), "submit_time": float(W)}],
        "pending": [{"job_id": "j2", "share": "a", "instance_count": 1, "priority": 0, "instance_type": "gpu",
                     "user": "cat",
                     "submit_time": W + 10.0},
                    {"job_id": "j3", "share": "a", "instance_count": 1, "priority": 0, "instance_type": "gpu",
                     "user": "dan",
                     "submit_time": W + 20.0}],
    }  # fmt: skip
    # at W + 150, j1 has finished and j2 runs since W + 100
    later = cut.snapshot_at(columns, result, W + 150)
    assert [(j["job_id"], j["started_at"]) for j in later["running"]] == [("j2", W + 100.0)]
    assert [j["job_id"] for j in later["pending"]] == ["j3"]
    # the history: submitted in [W + 20 - W, W + 20): h1 at 0 is before it
    history = cut.week_before(columns, t0)
    assert history.job_id.to_list() == ["j1", "j2"] and history.user == ["bea", "cat"]
    assert list(history.duration) == [100.0, 100.0]


@pytest.fixture
def demo_loaded(db, columns):
    InstanceType.objects.get_or_create(name="gpu", defaults={"gpus": 1, "hourly_price": 1.0})
    pool = Pool.objects.create(name="itp-2021")
    pool.set_capacity({"gpu": 1})
    policy = Policy.objects.create(name="itp-2021", pool=pool)
    policy.replace_shares([ShareSpec("a", "RESERVE", None, "never", "any", {"gpu": 1})])
    Trace.store(columns, name="itp-2021")


def test_the_demo_pool_is_cut_once_and_kept(demo_loaded, monkeypatch):
    pool = demo.demo_pool()
    assert pool.snapshot["time"] == W + 20 and len(pool.snapshot["pending"]) == 2
    assert pool.day == pytest.approx(7 + 20 / 86_400)
    assert pool.history.name == "itp-2021: the week before day 7.0" and pool.history.job_count == 2

    def no_replay(*args, **kwargs):
        raise AssertionError("the demo pool was cut again")

    monkeypatch.setattr(demo, "replay", no_replay)
    again = demo.demo_pool()
    assert again.snapshot == pool.snapshot and again.history.pk == pool.history.pk


def test_a_viewer_forecasts_the_demo_pool_from_the_page(
    demo_loaded, user_with_role, eager_celery, django_capture_on_commit_callbacks
):
    client = Client()
    client.force_login(user_with_role("demo-viewer", "viewer"))
    assert "Forecast the demo pool now" in client.get("/forecasts/").content.decode()
    with django_capture_on_commit_callbacks(execute=True):
        response = client.post(
            "/forecasts/demo/", {"demo-samples": 3, "demo-seed": 1, "demo-horizon_days": 2}
        )
    forecast = Forecast.objects.get()
    assert response.status_code == 302 and response["Location"] == f"/forecasts/{forecast.pk}/"
    assert forecast.status == "succeeded", forecast.error
    assert (forecast.source, forecast.history.job_count) == ("demo", 2)
    assert forecast.arrivals == "history" and forecast.created_by.username == "demo-viewer"
    page = client.get(response["Location"]).content.decode()
    assert "1 jobs running and 2 waiting" in page and '<th scope="row">j3</th>' in page


def test_without_the_demo_the_page_says_how_to_load_it(user_with_role, db):
    client = Client()
    client.force_login(user_with_role("demo-less", "viewer"))
    assert "The ITP demo is not loaded" in client.get("/forecasts/").content.decode()
    response = client.post("/forecasts/demo/", {"demo-samples": 3, "demo-seed": 1, "demo-horizon_days": 2})
    assert response.status_code == 400 and "load_demo" in response.content.decode()
    assert not Forecast.objects.exists()


def test_the_page_shows_progress_while_the_chunks_replay(user_with_role, db, demo_loaded, settings):
    from planner.forecasts.launch import ForecastLaunch, start_forecast
    from planner.forecasts.tasks import sample_chunk

    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 2
    pool = demo.demo_pool()
    forecast = start_forecast(
        ForecastLaunch(
            snapshot=pool.snapshot,
            policy=pool.policy,
            history=pool.history,
            samples=6,
        ),
        enqueue=False,
    )  # fmt: skip
    sample_chunk.apply(args=[forecast.chunk_rows.order_by("index").first().pk])
    client = Client()
    client.force_login(user_with_role("waiting-viewer", "viewer"))
    page = client.get(f"/forecasts/{forecast.pk}/").content.decode()
    assert "1 of 3 chunks of samples done" in page and 'data-refresh-url="/forecasts/' in page
    assert 'value="0.3333' in page  # the progress bar: chunks done / chunks
