"""Section 8's preemption loops on the pages and in the stored run: a run whose fair-sharing preemptions
loop is replayed to the end, keeps its findings in Run.summary and Run.metrics, and the study page, the
run's job finder and why pages show it as a warning naming the instant, the shares and the jobs, in the
words of section 8; the advisor marks the variant."""

from __future__ import annotations

import pytest
from django.urls import reverse

from planner.advisor.models import Sweep
from planner.capacity.models import InstanceType, Policy, Pool
from planner.reports.loops import KUEUE_WORDS, loop_warning
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import RunStatus
from planner.traces.models import Trace
from scheduling.advisor import point_from_metrics
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate
from scheduling.trace import Trace as TraceColumns
from tests.service.conftest import make_user

pytestmark = pytest.mark.django_db

FINDINGS = [
    {"time": 32.0, "job_id": "j0", "share": "S2", "preemptor_id": "j4", "preemptor_share": "S1"},
    {"time": 32.0, "job_id": "j7", "share": "S2", "preemptor_id": "j3", "preemptor_share": "S0"},
    {"time": 38.5, "job_id": "j4", "share": "S1", "preemptor_id": "j10", "preemptor_share": "S1"},
]


def test_the_warning_names_the_first_instant_its_shares_and_jobs():
    warning = loop_warning("weighted", {"preemption_loops": {"count": 3, "instants": 2, "first": FINDINGS}})
    assert warning is not None
    assert (warning.time_text, warning.shares_text) == ("t = 32.0 s", "S0, S1 and S2")
    assert warning.jobs_text == "j0, j7"
    assert (warning.count, warning.elsewhere) == (3, 1)
    assert loop_warning("calm", {"preemption_loops": {"count": 0, "instants": 0, "first": []}}) is None
    assert loop_warning("old", {"utilization": 0.5}) is None  # a run stored before the loop rule
    many = [{**FINDINGS[0], "job_id": f"j{i}"} for i in range(11)]
    long = loop_warning("many", {"preemption_loops": {"count": 11, "instants": 1, "first": many}})
    assert long is not None and long.jobs_text == "j0, j1, j2, j3, j4, j5, j6, j7 and 3 more"


def test_the_advisor_marks_a_variant_that_loops():
    looping = point_from_metrics(1, {"summary": {"preemption_loops": {"count": 14}}, "shares": []}, [])
    calm = point_from_metrics(2, {"summary": {"preemption_loops": {"count": 0}}, "shares": []}, [])
    old = point_from_metrics(3, {"summary": {}, "shares": []}, [])
    assert (looping.loops, looping.preemption_loops) == (True, 14)
    assert not calm.loops and not old.loops


def looping_policies(prefix: str) -> tuple[TraceColumns, list[Policy]]:
    """The four-team demo (2,000 jobs) under strict FIFO with fair sharing: weights 1, 2, 4 and 0.5 loop at
    145,098.6 s (prod-training and research), equal weights do not. The trace, then the two policies."""
    columns = generate(2000, seed=1)
    base = demo_policy_dict(demo_pool_gpus(columns))
    for type_name, spec in base["instance_types"].items():
        InstanceType.objects.get_or_create(name=type_name, defaults=spec)
    pool = Pool.objects.create(name=f"{prefix}-pool")
    pool.set_capacity(base["capacity"])
    policies = []
    for name, weights in (("equal", [1, 1, 1, 1]), ("weighted", [1, 2, 4, 0.5])):
        spec = {**base, "fair_sharing": {}, "queueing": "strict_fifo"}
        shares = zip(base["shares"], weights, strict=True)
        spec["shares"] = [{**share, "fair_weight": w} for share, w in shares]
        policies.append(Policy.create_from_dict(spec, pool=pool, name=f"{prefix}-{name}"))
    return columns, policies


@pytest.fixture
def looping_study(eager_celery, django_capture_on_commit_callbacks):
    """``looping_policies``, replayed by the study's own task."""
    columns, policies = looping_policies("loops")
    trace = Trace.store(columns, name="loops-trace")
    with django_capture_on_commit_callbacks(execute=True):
        study = launch_study(StudyLaunch(name="loops", trace=trace, policies=policies))
    return study


def test_a_run_that_loops_succeeds_and_its_stored_summary_keeps_the_findings(looping_study):
    runs = {run.policy_name: run for run in looping_study.runs.all()}
    assert {run.status for run in runs.values()} == {RunStatus.SUCCEEDED}
    weighted, equal = runs["loops-weighted"], runs["loops-equal"]
    loops = weighted.summary["preemption_loops"]
    assert loops["count"] == len(loops["first"]) > 0 and loops["instants"] == 1
    assert weighted.metrics["summary"]["preemption_loops"] == loops
    assert {f["share"] for f in loops["first"]} <= {"prod-training", "research"}
    assert equal.summary["preemption_loops"] == {"count": 0, "instants": 0, "first": []}


def _viewer(client):
    client.force_login(make_user("loop-viewer", "viewer"))
    return client


def test_the_study_page_warns_of_the_run_that_loops(client, looping_study):
    page = _viewer(client).get(reverse("reports:study", args=[looping_study.pk])).content.decode()
    assert page.count('class="message warning"') == 1
    assert KUEUE_WORDS in page
    assert "<strong>loops-weighted</strong>: at t = 145,098.6 s jobs of prod-training and research" in page
    first = looping_study.runs.get(policy_name="loops-weighted").summary["preemption_loops"]["first"][0]
    assert first["job_id"] in page


def test_the_run_pages_warn_only_for_the_run_that_loops(client, looping_study):
    client = _viewer(client)
    runs = {run.policy_name: run for run in looping_study.runs.all()}
    for name in ("reports:study-why", "reports:study-jobs"):
        url = reverse(name, args=[looping_study.pk])
        looping = client.get(url, {"run": runs["loops-weighted"].pk}).content.decode()
        calm = client.get(url, {"run": runs["loops-equal"].pk}).content.decode()
        assert KUEUE_WORDS in looping and "t = 145,098.6 s" in looping, name
        assert KUEUE_WORDS not in calm, name


def test_the_advisor_page_and_api_mark_the_variant_whose_replay_loops(
    admin_api, viewer_api, client, aws_policy, aws_trace, eager_celery, django_capture_on_commit_callbacks
):
    # A real sweep of the AWS example (one variant), whose variant's stored summary is then given the
    # findings of a looping replay: the mark comes from the stored run, as for any replay that loops.
    payload = {
        "name": "loops",
        "trace": aws_trace.pk,
        "base_policy": aws_policy.pk,
        "urgent_shares": ["QS1"],
        "knobs": {
            "shares": ["QS3"],
            "strategy": ["RESERVE", "LEND"],
            "lending_limit": [None],
            "in_share_preemption": ["never"],
        },
    }
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_api.post("/api/sweeps/", payload, format="json")
    assert response.status_code == 201, response.json()
    sweep = Sweep.objects.get(pk=response.json()["id"])
    (variant,) = sweep.variants.all()
    run = sweep.study.runs.get(policy_id=variant.policy_id)
    run.summary = {**run.summary, "preemption_loops": {"count": 3, "instants": 2, "first": FINDINGS}}
    run.save(update_fields=["summary"])
    points = {p["variant"]: p for p in viewer_api.get(f"/api/sweeps/{sweep.pk}/").json()["points"]}
    assert (points[1]["preemption_loops"], points[None]["preemption_loops"]) == (3, 0)
    page = _viewer(client).get(reverse("advisor:detail", args=[sweep.pk])).content.decode()
    assert page.count("preemptions loop: 3 jobs left out") == 1
    assert KUEUE_WORDS in page
