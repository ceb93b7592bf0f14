"""A forecast's chunks on two real ``celery worker`` processes (SQLite and the filesystem broker by
default): no chunk waits on another, the last one to finish merges exactly once under the lock, and
the forecast is the one a single process computes from the same inputs."""

from __future__ import annotations

import io
import uuid

import pytest

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.forecasts.launch import ForecastLaunch, start_forecast
from planner.forecasts.models import Forecast
from planner.forecasts.tasks import sample_chunk
from planner.traces.models import Trace, read_upload
from tests.service.test_workers import own_queue, wait_for, worker_starter

pytestmark = [pytest.mark.workers, pytest.mark.django_db(transaction=True), pytest.mark.timeout(300)]

# Share a owns 4 instances; 60 jobs wait at T0 = 100,000 with no duration of their own, drawn from
# a history of 120 jobs (300 s to 12,200 s), so that the samples differ.
HISTORY = "job_id,submit_time,share,instance_type,duration\n" + "".join(
    f"h{i},{i * 700},a,gpu,{300 + (i * 53) % 120 * 100}\n" for i in range(120)
)
SNAPSHOT = {
    "time": 100_000,
    "running": [{"job_id": f"r{i}", "share": "a", "instance_type": "gpu", "started_at": 99_000 + i}
                for i in range(4)],
    "pending": [{"job_id": f"p{i}", "share": "a", "instance_type": "gpu", "submit_time": 90_000 + i,
                 "user": f"u{i % 7}"} for i in range(60)],
}  # fmt: skip


@pytest.fixture
def queue():
    with own_queue("planner.forecasts.tasks.sample_chunk", "planner-forecast-test") as name:
        yield name


@pytest.fixture
def start_worker(queue, tmp_path, media_root):
    with worker_starter(queue, tmp_path, media_root) as start:
        yield start


def inputs() -> dict:
    tag = uuid.uuid4().hex[:6]
    gpu, _ = InstanceType.objects.get_or_create(name=f"gpu-{tag}", defaults={"gpus": 1, "hourly_price": 1})
    pool = Pool.objects.create(name=f"four-{tag}")
    pool.set_capacity({gpu.name: 4})
    policy = Policy.objects.create(name=f"four-{tag}", pool=pool)
    policy.replace_shares([ShareSpec("a", "RESERVE", None, "never", "any", {gpu.name: 4})])
    text = HISTORY.replace(",gpu,", f",{gpu.name},")
    history = Trace.store(read_upload(io.BytesIO(text.encode()), format="planner-csv"), name=f"history-{tag}")
    snapshot = {
        **SNAPSHOT,
        "running": [{**job, "instance_type": gpu.name} for job in SNAPSHOT["running"]],
        "pending": [{**job, "instance_type": gpu.name} for job in SNAPSHOT["pending"]],
    }
    return {"snapshot": snapshot, "policy": policy, "history": history, "samples": 24, "seed": 3,
            "arrivals": "none", "horizon_days": 10}  # fmt: skip


def test_two_workers_replay_the_chunks_and_the_last_merges(start_worker, settings):
    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 3
    first, second = start_worker("f1"), start_worker("f2")
    given = inputs()
    forecast = start_forecast(ForecastLaunch(**given))  # 8 chunks, sent when the transaction commits
    assert forecast.chunks == 8
    try:
        wait_for(lambda: Forecast.objects.get(pk=forecast.pk).finished, 200, "the forecast", poll=0.5)
    except AssertionError:
        states = list(forecast.chunk_rows.values_list("index", "status", "worker", "error"))
        logs = "\n".join(w.log.read_text(errors="replace")[-1500:] for w in (first, second))
        raise AssertionError(f"the forecast did not finish: chunks {states}\n{logs}") from None
    forecast.refresh_from_db()
    assert forecast.status == "succeeded", forecast.error
    chunks = list(forecast.chunk_rows.order_by("index"))
    assert {chunk.status for chunk in chunks} == {"succeeded"}
    assert {chunk.worker for chunk in chunks} <= {first.name, second.name}
    assert forecast.job_rows.count() == 64  # merged once: one row per snapshot job

    # the same inputs in this process, in one chunk: the same forecast
    settings.PLANNER_FORECAST_CHUNK_SAMPLES = 24
    alone = start_forecast(ForecastLaunch(**given), enqueue=False)
    sample_chunk.apply(args=[alone.chunk_rows.get().pk])
    alone.refresh_from_db()
    assert alone.result == forecast.result
    p59 = next(job for job in forecast.result["jobs"] if job["job_id"] == "p59")
    assert p59["start"]["p10"] < p59["start"]["p90"]  # the draws differ: the merge kept the spread
