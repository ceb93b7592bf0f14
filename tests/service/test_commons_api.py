"""GET /api/traces/<id>/commons/ and the /commons/ page through the test client: roles, a run of
the trace for RESERVE hoarding, bad run ids, the figures stored once per trace, and the time of a
million-job trace the first time and afterwards."""

from __future__ import annotations

import io
from dataclasses import replace

import numpy as np
import pytest
from rest_framework.test import APIClient

from planner.capacity.models import InstanceType
from planner.commons.models import CommonsReport
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace, read_upload
from scheduling.synthetic import generate
from scheduling.trace import Trace as TraceColumns
from tests.service.test_reports_views import replayed_study_over, signed_in

pytestmark = pytest.mark.django_db

# Alice submits 8 one-instance jobs in 8 s; bob one job of 16 instances. Priorities 1 then 9.
BURSTY_CSV = (
    b"job_id,submit_time,share,priority,instance_count,duration,user\n"
    + b"".join(f"a{i},{i},team,1,1,3600,alice\n".encode() for i in range(8))
    + b"big,100,other,9,16,3600,bob\n"
)


def with_burst(columns: TraceColumns, *, user: str, share: str, at: float, jobs: int = 12) -> TraceColumns:
    """The trace plus ``jobs`` one-instance jobs of ``user`` in ``share`` one second apart from
    ``at``, every column put back in submit order."""
    n = len(columns)
    code = columns.share_names.index(share)
    submit = np.concatenate([columns.submit_time, at + np.arange(jobs, dtype=np.float64)])
    order = np.argsort(submit, kind="stable")

    def extend(array: np.ndarray, value) -> np.ndarray:
        return np.concatenate([array, np.full(jobs, value, dtype=array.dtype)])[order]

    return replace(
        columns,
        job_id=[(list(columns.job_id) + [f"burst-{i}" for i in range(jobs)])[i] for i in order],
        submit_time=submit[order],
        share=extend(columns.share, code),
        priority=extend(columns.priority, 0),
        instance_type=extend(columns.instance_type, columns.instance_type[0] if n else -1),
        instance_count=extend(columns.instance_count, 1),
        duration=extend(columns.duration, 1800.0),
        checkpoint_interval=extend(columns.checkpoint_interval, np.nan),
        preemption_retries=extend(columns.preemption_retries, 0),
        user=[(list(columns.user or [""] * n) + [user] * jobs)[i] for i in order],
    )


commons_study = replayed_study_over  # the demo policy's share 'vision' is RESERVE


def bursty_columns(jobs: int = 1500) -> TraceColumns:
    """A synthetic trace of three weeks with a burst of 12 small jobs by research-01."""
    columns = generate(jobs, days=21)
    return with_burst(columns, user="research-01", share="research", at=float(columns.submit_time[50]))


@pytest.fixture
def bursty_trace(db) -> Trace:
    return Trace.store(read_upload(io.BytesIO(BURSTY_CSV), format="planner-csv"), name="bursty")


def test_anonymous_and_roleless_are_refused_and_a_viewer_reads(bursty_trace, client_for):
    url = f"/api/traces/{bursty_trace.pk}/commons/"
    assert APIClient().get(url).status_code in (401, 403)
    assert client_for(None).get(url).status_code == 403
    viewer = client_for("viewer")
    response = viewer.get(url)
    assert response.status_code == 200
    body = response.json()
    assert body["trace"] == {"id": bursty_trace.pk, "name": "bursty"}
    assert body["run"] is None and body["reserve_hoarding"] is None
    assert body["priority_inflation"]["top_priority"] == 9
    assert body["priority_inflation"]["shares"]["team"]["top"] == [0]
    assert body["priority_inflation"]["shares"]["other"]["top_fraction"] == [1.0]
    splitting = body["job_splitting"]
    assert splitting["bursts"] == 1 and splitting["jobs_in_bursts"] == 8
    assert splitting["users"][0]["user"] == "alice" and splitting["users"][0]["gpu_hours_fraction"] == 1.0
    assert viewer.get("/api/traces/999999/commons/").status_code == 404


def test_the_figures_are_computed_once_and_redone_when_gpus_per_type_change(bursty_trace, viewer_api):
    url = f"/api/traces/{bursty_trace.pk}/commons/"
    first = viewer_api.get(url).json()
    stored = CommonsReport.objects.get(trace=bursty_trace)
    assert stored.games["job_splitting"] == first["job_splitting"]
    # A stored report is what is served: change it and the API answers with it.
    stored.games["job_splitting"]["bursts"] = 41
    stored.save()
    assert viewer_api.get(url).json()["job_splitting"]["bursts"] == 41
    # The trace has no instance type: its GPUs come from nowhere, so a new type changes nothing.
    InstanceType.objects.create(name="p5", gpus=8, hourly_price=98.0)
    assert viewer_api.get(url).json()["job_splitting"]["bursts"] == 41
    stored.params = {**stored.params, "version": 0}
    stored.save()
    assert viewer_api.get(url).json()["job_splitting"]["bursts"] == 1
    assert CommonsReport.objects.count() == 1


def test_a_run_of_the_trace_adds_reserve_hoarding(client_for):
    study = commons_study("commons", generate(1500))
    run = study.runs.get()
    viewer = client_for("viewer")
    url = f"/api/traces/{study.trace_id}/commons/"
    body = viewer.get(url, {"run": run.pk}).json()
    assert body["run"] == {"id": run.pk, "study": study.pk, "policy_name": run.policy_name}
    hoarding = body["reserve_hoarding"]
    vision = hoarding["shares"]["vision"]  # the demo policy's RESERVE share
    assert vision["strategy"] == "RESERVE"
    metrics = Run.objects.get(pk=run.pk).metrics
    entry = next(s for s in metrics["shares"] if s["name"] == "vision")
    assert vision["stranded_gpu_hours"] == pytest.approx(entry["stranded_gpu_hours"])
    assert sum(vision["days"]["stranded_gpu_hours"]) == pytest.approx(entry["stranded_gpu_hours"], rel=1e-6)
    assert len(vision["days"]["stranded_gpu_hours"]) == len(hoarding["days"])

    for bad, words in (("x", "is not a run id"), (run.pk + 1000, "no run")):
        response = viewer.get(url, {"run": bad})
        assert response.status_code == 400
        assert response.json()["error"]["field"] == "run" and words in response.json()["error"]["message"]
    Run.objects.filter(pk=run.pk).update(status=RunStatus.FAILED)
    response = viewer.get(url, {"run": run.pk})
    assert response.status_code == 400 and "not succeeded" in response.json()["error"]["message"]


def test_the_page_keeps_its_choices_in_the_url_and_refuses_no_role(db):
    study = commons_study("commons-page", bursty_columns(800), variants=1)
    viewer = signed_in("viewer")
    runs = list(study.runs.order_by("id"))
    page = viewer.get("/commons/").content.decode()
    assert "Priority inflation" in page and "Job splitting" in page and "RESERVE hoarding" in page
    assert page.count("data-plotly=") == 5  # two priority charts, two of bursts, stranded quota
    assert "1 burst holding 12 jobs" in page
    choices = {"trace": study.trace_id, "run": runs[1].pk, "unit": "usd"}
    html = signed_in("finance").get("/commons/", choices).content.decode()
    assert f'<option value="{runs[1].pk}" selected>' in html
    assert '<option value="usd" selected>' in html
    assert "Stranded quota per day ($)" in html
    # a viewer reads no $ figure: the unit is not offered, the page shows GPU-hours
    html = viewer.get("/commons/", choices).content.decode()
    assert f'<option value="{runs[1].pk}" selected>' in html
    assert '<option value="usd"' not in html and "Stranded quota per day (GPU-hours)" in html
    assert signed_in(None).get("/commons/").status_code == 403
    anonymous = APIClient().get("/commons/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")


def test_a_million_job_trace_is_read_once_then_answered_from_stored_figures(db, viewer_api, monkeypatch):
    trace = Trace.store(generate(1_000_000), name="million")
    url = f"/api/traces/{trace.pk}/commons/"
    first = viewer_api.get(url)
    assert first.status_code == 200
    assert len(first.content) < 100_000  # bounded: no per-job output

    def forbidden(*args, **kwargs):
        raise AssertionError("the second request read the trace's jobs again")

    # the figures were kept: a second request must not load a million jobs (how fast either is
    # answered is measured by benchmarks/load_test.py, not asserted here)
    monkeypatch.setattr(Trace, "load_jobs", forbidden)
    second = viewer_api.get(url)
    assert second.json() == first.json()


def test_the_page_names_a_share_that_inflates_its_priorities(db):
    week = 7 * 86400
    lines = ["job_id,submit_time,share,priority,instance_count,duration,user"]
    for w in range(5):
        for j in range(10):
            lines.append(f"u{w}-{j},{w * week + j},up,{9 if j <= w else 1},1,60,ann")
            lines.append(f"f{w}-{j},{w * week + j},flat,{9 if j < 2 else 1},1,60,ben")
    columns = read_upload(io.BytesIO("\n".join(lines).encode()), format="planner-csv")
    trace = Trace.store(columns, name="inflating")
    page = signed_in("viewer").get("/commons/", {"trace": trace.pk}).content.decode()
    assert "✗ Growing: up." in page
    assert "+10.00 pts/week, exact" in page  # 10 %, 20 %, ... 50 % of up's jobs at the top
    assert "No study on this trace has a succeeded run yet." in page
