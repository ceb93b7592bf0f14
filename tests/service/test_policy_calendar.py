"""Fair sharing, share weights, the RUNNABLE limit and the calendar of dated changes (SEMANTICS.md
sections 8-10) stored relationally: through the API and the models, checked by the engine's one
validator, and exported as exactly the policy JSON they came from."""

import pytest

from planner.capacity.models import CalendarChange, CalendarError, ChangeSpec, Policy
from scheduling.capacity_plans import TrainingPlan
from scheduling.model import parse_policy
from tests.scheduling.aws_example import PLANNED
from tests.service.conftest import AWS_TYPE

pytestmark = pytest.mark.django_db

# The AWS example of section 4 with every knob of sections 8-10 (tests/scheduling/aws_example.py's
# PLANNED: a training plan of 2 instances for QS1 from t=100 to t=500, fair sharing, weights, a limit),
# here with two of the defaults written out as a stored policy's JSON has them.
FULL_POLICY = {**PLANNED, "name": "aws-example-planned", "queueing": "best_effort_fifo", "startup_seconds": 0}


@pytest.fixture
def planned_policy(aws_policy) -> Policy:
    return Policy.create_from_dict(FULL_POLICY, pool=aws_policy.pool)


def test_the_export_is_the_policy_json_it_was_made_from(admin_api, planned_policy):
    exported = admin_api.get(f"/api/policies/{planned_policy.pk}/export/").json()
    assert exported == parse_policy(FULL_POLICY).to_dict()
    # and the exported JSON makes the same policy again (the round trip)
    again = Policy.create_from_dict(exported, pool=planned_policy.pool, name="again")
    assert again.engine_policy() == parse_policy({**FULL_POLICY, "name": "again"})


def test_the_calendar_is_one_row_per_instant_target_and_type(planned_policy):
    rows = [(c.time, c.share.name if c.share else None, c.count) for c in planned_policy.changes.all()]
    assert rows == [(100, None, 5), (100, "QS1", 3), (500, None, 3), (500, "QS1", 1)]


def test_a_variant_carries_the_calendar_weights_and_settings(planned_policy):
    variant = planned_policy.duplicate("planned variant")
    assert variant.engine_policy().to_dict() == {
        **planned_policy.engine_policy().to_dict(),
        "name": "planned variant",
    }
    assert (
        variant.changes.filter(share__policy=variant).count() == 2
    )  # the share rows point at its own shares


def test_the_api_reads_and_writes_sections_8_to_10(admin_api, aws_policy):
    response = admin_api.patch(
        f"/api/policies/{aws_policy.pk}/",
        {
            "fair_sharing": {},
            "runnable_timeout_seconds": 3600,
            "changes": [{"time": "1970-01-01T00:10:00Z", "capacity": {AWS_TYPE: 4}}],
        },
        format="json",
    )
    assert response.status_code == 200, response.json()
    body = response.json()
    # {} is fair sharing with Kueue's default list; the ISO time is 600 s
    assert body["fair_sharing"] == {
        "preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    }
    assert body["changes"] == [{"time": 600, "capacity": {AWS_TYPE: 4}}]
    assert body["runnable_timeout_seconds"] == 3600
    off = admin_api.patch(f"/api/policies/{aws_policy.pk}/", {"fair_sharing": None}, format="json").json()
    assert off["fair_sharing"] is None
    assert off["changes"] == [{"time": 600, "capacity": {AWS_TYPE: 4}}]  # left as it was


def test_a_calendar_breaking_section_1_is_refused_naming_the_change(admin_api, aws_policy):
    # quotas add up to 3: a pool of 2 from t=50 holds them no longer
    response = admin_api.patch(
        f"/api/policies/{aws_policy.pk}/",
        {"changes": [{"time": 50, "capacity": {AWS_TYPE: 2}}]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "changes": [
            f"changes[0].capacity.{AWS_TYPE}: at 50 s share quotas of {AWS_TYPE} add up to 3, "
            "more than the pool's 2"
        ]
    }
    assert not CalendarChange.objects.exists()  # nothing half-stored


@pytest.mark.parametrize(
    ("payload", "field", "words"),
    [
        (
            {
                "fair_sharing": {
                    "preemption_strategies": ["LessThanInitialShare", "LessThanOrEqualToFinalShare"]
                }
            },
            "fair_sharing",
            "not a list Kueue accepts",
        ),
        (
            {"changes": [{"time": 5, "share": "QS9", "capacity": {AWS_TYPE: 1}}]},
            "changes",
            "unknown share 'QS9'",
        ),
        ({"changes": [{"time": -5, "capacity": {AWS_TYPE: 1}}]}, "changes", "-5 is before 1970-01-01"),
        ({"changes": [{"time": 5, "capacity": {"ml.p5": 1}}]}, "changes", "ml.p5"),
        ({"runnable_timeout_seconds": 0}, "runnable_timeout_seconds", "must be positive"),
    ],
)
def test_bad_sections_8_to_10_are_a_400_naming_the_field(admin_api, aws_policy, payload, field, words):
    response = admin_api.patch(f"/api/policies/{aws_policy.pk}/", payload, format="json")
    assert response.status_code == 400
    assert words in str(response.json()[field])


def test_a_negative_fair_weight_is_refused_on_the_share(admin_api, aws_policy):
    share = aws_policy.shares.get(name="QS2")
    response = admin_api.patch(f"/api/shares/{share.pk}/", {"fair_weight": -1}, format="json")
    assert response.status_code == 400
    assert "below the minimum 0" in str(response.json()["fair_weight"])
    assert (
        admin_api.patch(f"/api/shares/{share.pk}/", {"fair_weight": 3}, format="json").json()["fair_weight"]
        == 3
    )


def test_a_training_plan_writes_its_four_changes(admin_api, aws_policy):
    response = admin_api.post(
        f"/api/policies/{aws_policy.pk}/training-plan/",
        {"instance_type": AWS_TYPE, "instances": 2, "share": "QS3", "start": 3600, "end": 7200},
        format="json",
    )
    assert response.status_code == 200, response.json()
    # pool 3 -> 5 and QS3 1 -> 3 for the hour, then both back
    assert response.json()["changes"] == [
        {"time": 3600, "capacity": {AWS_TYPE: 5}},
        {"time": 3600, "share": "QS3", "capacity": {AWS_TYPE: 3}},
        {"time": 7200, "capacity": {AWS_TYPE: 3}},
        {"time": 7200, "share": "QS3", "capacity": {AWS_TYPE: 1}},
    ]


def test_a_training_plan_adds_on_top_of_a_change_inside_it(aws_policy):
    # the pool grows to 4 at t=5000 for good; a plan of 2 from 3600 to 7200 must still add 2 there
    aws_policy.replace_changes([ChangeSpec(5000, None, AWS_TYPE, 4)])
    aws_policy.add_training_plan(TrainingPlan(AWS_TYPE, 2, "QS1", 3600, 7200))
    engine = aws_policy.engine_policy()
    assert [engine.capacity_at(t)[AWS_TYPE] for t in (0, 3600, 5000, 7200)] == [3, 5, 6, 4]
    assert [engine.quota_at("QS1", t)[AWS_TYPE] for t in (0, 3600, 5000, 7200)] == [1, 3, 3, 1]


@pytest.mark.parametrize(
    ("plan", "field", "words"),
    [
        ({"share": "nobody"}, "share", "not a share"),
        ({"end": 3000}, "end", "end after it starts"),
        ({"start": "soon"}, "start", "neither seconds nor an ISO-8601"),
        ({"instances": 0}, "instances", "greater than or equal to 1"),
        ({"instance_type": "ml.p5"}, "instance_type", "no instance type 'ml.p5'"),
    ],
)
def test_a_bad_training_plan_is_a_400_naming_its_field(admin_api, aws_policy, plan, field, words):
    payload = {"instance_type": AWS_TYPE, "instances": 2, "share": "QS3", "start": 3600, "end": 7200, **plan}
    response = admin_api.post(f"/api/policies/{aws_policy.pk}/training-plan/", payload, format="json")
    assert response.status_code == 400
    assert words in str(response.json()[field])
    assert not CalendarChange.objects.exists()


def test_a_viewer_cannot_add_a_training_plan(viewer_api, aws_policy):
    payload = {"instance_type": AWS_TYPE, "instances": 2, "share": "QS3", "start": 3600, "end": 7200}
    assert (
        viewer_api.post(f"/api/policies/{aws_policy.pk}/training-plan/", payload, format="json").status_code
        == 403
    )


def test_a_share_renamed_keeps_its_calendar(admin_api, planned_policy):
    share = planned_policy.shares.get(name="QS1")
    response = admin_api.patch(f"/api/shares/{share.pk}/", {"name": "QS1-renamed"}, format="json")
    assert response.status_code == 200, response.json()
    exported = planned_policy.engine_policy().to_dict()
    assert [c.get("share") for c in exported["changes"]] == [None, "QS1-renamed", None, "QS1-renamed"]


def test_lowering_the_pool_below_a_planned_quota_is_refused_on_the_row_that_tips_it(planned_policy):
    # at t=100 QS1 holds 3; with the pool at 4 then, 3+1+1 = 5 > 4: the engine names the last
    # change of that instant that sets the type, QS1's row (row 1)
    calendar = planned_policy.change_specs()
    calendar[0] = ChangeSpec(100, None, AWS_TYPE, 4)
    with pytest.raises(CalendarError) as caught:
        planned_policy.validate_with(changes=calendar)
    assert caught.value.row == 1
    assert caught.value.messages == [
        f"change at 100 s, share QS1, {AWS_TYPE}: "
        f"at 100 s share quotas of {AWS_TYPE} add up to 5, more than the pool's 4"
    ]


def test_a_replayed_run_stores_the_steps_counts_cancellations_and_explains_them(
    aws_policy, aws_trace, eager_celery, django_capture_on_commit_callbacks
):
    from planner.studies.launch import StudyLaunch, launch_study
    from planner.studies.timeline import run_job_timeline

    # The AWS example (p3 on quota, p2 borrowing, q2 reclaims p2 at 10, p1 raised at 20 preempts
    # p3), then at t=50 the pool shrinks to 1 and QS2, QS3 lose their quota: q2, now borrowing,
    # is preempted for capacity. A 100 s RUNNABLE limit cancels p2 at 110, p3 at 120 (before the
    # pass, as p1 ends) and q2 at 150; only p1 succeeds.
    aws_policy.replace_changes(
        [
            ChangeSpec(50, None, AWS_TYPE, 1),
            ChangeSpec(50, "QS2", AWS_TYPE, 0),
            ChangeSpec(50, "QS3", AWS_TYPE, 0),
        ]
    )
    aws_policy.runnable_timeout_seconds = 100
    aws_policy.save()
    with django_capture_on_commit_callbacks(execute=True):
        study = launch_study(StudyLaunch(name="shrinking", trace=aws_trace, policies=[aws_policy]))
    run = study.runs.get()
    run.refresh_from_db()
    summary = run.metrics["summary"]
    assert (summary["succeeded"], summary["cancelled"]) == (1, 3)
    assert summary["preemptions"] == {"cross_share": 1, "in_share": 1, "fair_sharing": 0, "capacity": 1}
    assert run.summary["cancelled"] == 3
    steps = run.metrics["series"]["steps"]
    assert steps["t"][:2] == [0, 50] and steps["pool"][:2] == [3, 1]
    assert steps["shares"]["QS2"][:2] == [1, 0]
    timeline = run_job_timeline(run, "q2")
    assert timeline["state"] == "CANCELLED"
    assert "preempted: capacity change at 50 s" in [s["words"] for s in timeline["segments"]]
    assert timeline["ending"] == "cancelled after 0.0278 h RUNNABLE (the policy's time limit)"  # 50 -> 150
