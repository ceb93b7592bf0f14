"""The study comparison and finance pages through the Django test client, over runs replayed by
the real engine (stored as succeeded, no Celery): roles, CSV downloads, URL state, and the
server time of a four-run study that never touches per-job files."""

from __future__ import annotations

import csv
import io
import time

import pytest
from django.contrib.auth.models import Group, User
from django.db.models.fields.files import FieldFile
from django.test import Client
from django.utils import timezone

from planner.capacity.models import InstanceType, Policy, Pool
from planner.demo.loader import full_pooling, no_preemption, static_split
from planner.strict_json import strict_json
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus, Study
from planner.traces.models import Trace
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate
from scheduling.trace import Trace as TraceColumns
from tests import fixtures

media_root = fixtures.media_root  # a fixture (tests/fixtures.py)

VARIANTS = (("static-split", static_split), ("full-pooling", full_pooling), ("no-preemption", no_preemption))


def replayed_study(name: str = "demo", jobs: int = 2000, variants: int = 3) -> Study:
    """``replayed_study_over`` a synthetic trace of ``jobs`` jobs."""
    return replayed_study_over(name, generate(jobs), variants)


def replayed_study_over(name: str, columns: TraceColumns, variants: int = 0) -> Study:
    """A study of the demo policy and ``variants`` of its variants over ``columns``, each run
    replayed here by the engine and stored as succeeded with its metrics."""
    base = demo_policy_dict(demo_pool_gpus(columns))
    for type_name, spec in base["instance_types"].items():
        InstanceType.objects.get_or_create(name=type_name, defaults=spec)
    pool = Pool.objects.create(name=f"{name}-pool")
    pool.set_capacity(base["capacity"])
    policies = [Policy.create_from_dict(base, pool=pool, name=f"{name}-configured")]
    for suffix, transform in VARIANTS[:variants]:
        policies.append(Policy.create_from_dict(transform(base), pool=pool, name=f"{name}-{suffix}"))
    trace = Trace.store(columns, name=f"{name}-trace")
    study = launch_study(StudyLaunch(name=name, trace=trace, policies=policies), enqueue=False)
    for run in study.runs.all():
        result = replay(EnginePolicy.from_dict(run.policy_snapshot), columns)
        Run.objects.filter(pk=run.pk).update(
            status=RunStatus.SUCCEEDED, progress=1.0, metrics=strict_json(result.metrics)
        )
    return study


def signed_in(role: str | None) -> Client:
    user = User.objects.create_user(username=f"u-{role}-{User.objects.count()}", password="pw")
    if role:
        user.groups.add(Group.objects.get(name=role))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture(scope="module")
def study_db(django_db_setup, django_db_blocker):
    """One replayed study for the module (the replays are the slow part)."""
    with django_db_blocker.unblock():
        study = replayed_study("views")
    yield study
    with django_db_blocker.unblock():
        # Everything replayed_study made, so later tests in the same run start from a clean slate.
        policies = list(study.policies.all())
        pool_ids = {p.pool_id for p in policies}
        trace = study.trace
        Study.objects.filter(pk=study.pk).delete()
        Policy.objects.filter(pk__in=[p.pk for p in policies]).delete()
        Pool.objects.filter(pk__in=pool_ids).delete()
        trace.delete()


@pytest.fixture
def study(study_db, db):
    return study_db


def read_csv(response) -> list[list[str]]:
    text = b"".join(response.streaming_content if response.streaming else [response.content]).decode(
        "utf-8-sig"
    )
    return list(csv.reader(io.StringIO(text)))


# -- roles -----------------------------------------------------------------------------------


def test_every_role_reads_the_study_page_and_only_finance_and_admin_the_report(study):
    for role in ("viewer", "finance", "admin"):
        assert signed_in(role).get(f"/studies/{study.pk}/").status_code == 200, role
    assert signed_in("finance").get("/finance/").status_code == 200
    assert signed_in("admin").get("/finance/").status_code == 200
    viewer = signed_in("viewer")
    assert viewer.get("/finance/").status_code == 403
    assert viewer.get("/finance/report.csv").status_code == 403
    assert signed_in(None).get(f"/studies/{study.pk}/").status_code == 403
    anonymous = Client().get("/finance/")
    assert anonymous.status_code == 302 and anonymous["Location"].startswith("/login/")


def test_study_page_compares_with_the_baseline(study):
    page = signed_in("viewer").get(f"/studies/{study.pk}/").content.decode()
    assert page.count('<li class="card') == 4
    assert "baseline" in page
    assert "views-configured" in page and "views-static-split" in page
    assert ", better" in page or ", worse" in page  # differences in words, not colour alone
    assert page.count("data-plotly=") >= 4 + 5 + 4  # usage per policy, CDF per share + all, bars


def test_study_csv_has_every_share_and_policy_with_differences(study):
    response = signed_in("viewer").get(f"/studies/{study.pk}/shares.csv")
    assert response["Content-Type"].startswith("text/csv")
    rows = read_csv(response)
    header, body = rows[0], rows[1:]
    assert header[:2] == ["Share", "Policy"]
    assert "Wait p95 (h) vs baseline" in header
    assert len(body) == 4 * 4  # 4 shares x 4 policies
    baseline_rows = [r for r in body if r[1] == "views-configured"]
    delta = header.index("Wait p95 (h) vs baseline")
    assert all(r[delta] == "" for r in baseline_rows)
    other = [r for r in body if r[1] == "views-static-split"]
    assert all(r[delta] != "" for r in other)
    assert signed_in("viewer").get(f"/studies/{study.pk}/nothing.csv").status_code == 404


def test_study_csv_keeps_the_shared_sort_order(study):
    # ?sort=<table>:<column index>:<asc|desc>, as the page's sortable tables write it.
    response = signed_in("viewer").get(f"/studies/{study.pk}/policies.csv?sort=policies:5:desc")
    rows = read_csv(response)
    column = rows[0].index("Wait p95 (h)")
    values = [float(r[column]) for r in rows[1:]]
    assert values == sorted(values, reverse=True)


def test_progress_json_follows_the_runs(study):
    run = study.runs.order_by("id").last()
    # A live worker's heartbeat: without one the page's reaper would put the run back in the queue.
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, progress=0.25, heartbeat=timezone.now())
    try:
        data = signed_in("viewer").get(f"/studies/{study.pk}/progress.json").json()
        assert data["finished"] is False
        assert {r["id"]: r["progress"] for r in data["runs"]}[run.pk] == 0.25
        page = signed_in("viewer").get(f"/studies/{study.pk}/").content.decode()
        assert "data-progress-url" in page and '<li class="card' not in page
    finally:
        Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, progress=1.0)


# -- finance through the client --------------------------------------------------------------


def test_finance_report_csv_adds_up_to_the_pool_capacity(study):
    client = signed_in("finance")
    baseline = study.runs.get(policy=study.baseline)
    for idle in ("separate", "quota", "usage"):
        rows = read_csv(client.get(f"/finance/report.csv?study={study.pk}&period=week&idle={idle}"))
        header, body = rows[0], rows[1:]
        capacity = header.index("Capacity (GPU-hours)")
        charge = header.index("Charge (GPU-hours)")
        total = next(r for r in body if r[0] == "whole trace" and r[1] == "Pool total")
        assert float(total[charge]) == pytest.approx(float(total[capacity]), rel=1e-6)
        assert float(total[capacity]) == pytest.approx(
            baseline.metrics["pool"]["capacity_gpu_hours"], rel=1e-6
        )
        weeks = {r[0] for r in body if r[0] != "whole trace"}
        assert weeks == {"week 1", "week 2"}  # the synthetic trace runs over 8 to 9 days
    check = read_csv(client.get(f"/finance/check.csv?study={study.pk}&period=month"))
    assert [r[-1] for r in check[1:]] == ["true", "true"]  # month 1 (30 days) and the whole trace


def test_finance_defaults_to_the_latest_succeeded_study_baseline(study):
    page = signed_in("finance").get("/finance/").content.decode()
    baseline = study.runs.get(policy=study.baseline)
    assert f'<option value="{baseline.pk}" selected>' in page
    assert "✓ Adds up" in page
    other = study.runs.exclude(pk=baseline.pk).first()
    compared = signed_in("finance").get(f"/finance/?compare={other.pk}&idle=usage&period=day")
    text = compared.content.decode()
    assert f"against {other.policy_name}" in text
    rows = read_csv(signed_in("finance").get(f"/finance/compare.csv?compare={other.pk}&period=day"))
    assert rows[0][3:6] == [
        f"{baseline.policy_name} (GPU-hours)",
        f"{other.policy_name} (GPU-hours)",
        "difference (GPU-hours)",
    ]
    assert signed_in("finance").get("/finance/compare.csv").status_code == 404  # no second run chosen


# -- speed -----------------------------------------------------------------------------------


def scale_to_jobs(metrics: dict, jobs: int) -> dict:
    """Say the run had ``jobs`` jobs: counts only; every array keeps its size, as the engine's
    metrics do (bounded CDFs, 200 buckets, one value per day)."""
    factor = jobs / metrics["summary"]["jobs"]
    for block in [metrics["summary"], *metrics["shares"]]:
        for key in ("jobs", "succeeded"):
            block[key] = round(block[key] * factor)
    for kind in metrics["cdfs"].values():
        for curve in [kind["all"], *kind["shares"].values()]:
            curve["n"] = round(curve["n"] * factor)
    return metrics


def test_pages_of_a_four_run_million_job_study_answer_without_reading_job_files(study, monkeypatch, capsys):
    for run in study.runs.all():
        assert len(str(run.metrics)) < 1_500_000  # aggregates: no per-job rows
        Run.objects.filter(pk=run.pk).update(
            metrics=scale_to_jobs(run.metrics, 1_000_000), result_file=f"runs/missing-{run.pk}.npz"
        )

    def forbidden(*args, **kwargs):
        raise AssertionError("a report page read a per-job file")

    monkeypatch.setattr(FieldFile, "open", forbidden)
    monkeypatch.setattr(Trace, "load_jobs", forbidden)
    client = signed_in("admin")
    other = study.runs.order_by("-id").first()
    urls = {
        "study page": f"/studies/{study.pk}/",
        "study CSV": f"/studies/{study.pk}/shares.csv",
        "finance, by day": f"/finance/?study={study.pk}",
        "finance, by week with a second policy": f"/finance/?study={study.pk}&period=week&idle=usage"
        f"&compare={other.pk}",
        "finance CSV": f"/finance/report.csv?study={study.pk}",
    }
    timings = {}
    for label, url in urls.items():
        assert client.get(url).status_code == 200  # warm: templates compiled, connections open
        samples = []
        for _ in range(5):
            started = time.perf_counter()
            response = client.get(url)
            samples.append(time.perf_counter() - started)
            assert response.status_code == 200
        timings[label] = sorted(samples)[len(samples) // 2]
    with capsys.disabled():
        # printed, not asserted: speed is judged by benchmarks/load_test.py, not by a timed test
        print("\nserver time (median of 5), 4 runs of 1M jobs:")
        for label, seconds in timings.items():
            print(f"  {label}: {seconds * 1000:.0f} ms")
    assert study.trace.job_count == 2000 and study.runs.filter(metrics__summary__jobs=1_000_000).count() == 4


def test_finance_without_a_finished_study_says_what_to_do(study):
    Run.objects.update(status=RunStatus.QUEUED)  # rolled back after the test
    page = signed_in("finance").get("/finance/").content.decode()
    assert "No study has finished yet" in page
    assert signed_in("finance").get("/finance/report.csv").status_code == 404
