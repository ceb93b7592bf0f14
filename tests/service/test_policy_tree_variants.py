"""The variants that show what a tree of cohorts and the fallback to other types change: a
"flattened" variant (no cohorts, the cohorts' own quotas unassigned) for a policy with a tree, a
"no fallback" variant (every share MayStopSearch / MayStopSearch) for a policy of several types;
and the study page's sentence saying, for each team, what the tree or the fallback changes."""

import io

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from planner.capacity.models import InstanceType, Policy, Pool
from planner.reports.comparison import RunColumn
from planner.reports.variant_effects import Effect, ShareChange, variant_effects
from planner.strict_json import strict_json
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace, read_upload
from planner.web.variants import PRESETS, make_variant, presets_for, study_presets
from scheduling.model import Policy as EnginePolicy
from scheduling.replay.engine import replay

pytestmark = pytest.mark.django_db

H = 3600.0
TREE_POLICY = {
    "name": "lab",
    "instance_types": {"h100": {"gpus": 8}, "a100": {"gpus": 8}},
    "capacity": {"h100": 4, "a100": 4},
    "cohorts": [{"name": "research", "capacity": {"h100": 1}, "borrowing_limit": {"h100": 1}}],
    "shares": [
        {"name": "vision", "capacity": {"h100": 2, "a100": 1}, "cohort": "research",
         "flavor_order": ["h100", "a100"]},
        {"name": "speech", "capacity": {"h100": 1, "a100": 2}, "lending_limit": {"a100": 1}},
    ],
}  # fmt: skip


@pytest.fixture
def pool(db) -> Pool:
    for name in ("h100", "a100"):
        InstanceType.objects.get_or_create(name=name, defaults={"gpus": 8, "hourly_price": 0})
    pool = Pool.objects.create(name="lab")
    pool.set_capacity({"h100": 4, "a100": 4})
    return pool


@pytest.fixture
def tree_policy(pool) -> Policy:
    return Policy.create_from_dict(TREE_POLICY, pool=pool)


def test_the_flattened_variant_puts_every_share_under_the_root_with_the_same_quotas(tree_policy):
    variant = make_variant(tree_policy, PRESETS["flattened"])
    engine, base = variant.engine_policy(), tree_policy.engine_policy()
    assert variant.name == "lab (flattened)" and variant.parent == tree_policy
    assert engine.cohorts == () and all(share.cohort is None for share in engine.shares)
    for share in engine.shares:  # the same quotas and limits, share by share
        kept = base.share(share.name)
        assert (share.capacity, share.borrowing_limit, share.lending_limit) == (
            kept.capacity, kept.borrowing_limit, kept.lending_limit)  # fmt: skip
    # research's own h100 is now nobody's: 4 - 2 - 1 = 1 unassigned, lent to anyone
    assert engine.unassigned("h100") == 1
    assert tree_policy.cohorts.count() == 1  # the policy keeps its tree


def test_the_no_fallback_variant_stops_at_the_first_type_it_could_borrow_or_preempt_on(tree_policy):
    variant = make_variant(tree_policy, PRESETS["no-fallback"])
    engine = variant.engine_policy()
    for share in engine.shares:
        f = share.flavor_fungibility
        assert (f.when_can_borrow.value, f.when_can_preempt.value) == ("MayStopSearch", "MayStopSearch")
    assert engine.types_in_order("vision") == ["h100", "a100"]  # the order stays
    assert [c.name for c in engine.cohorts] == ["research"]  # and so does the tree


def test_only_the_presets_that_change_a_policy_are_offered(tree_policy, pool):
    assert {"flattened", "no-fallback"} <= {p.key for p in presets_for(tree_policy)}
    one_type = Pool.objects.create(name="one-type")
    one_type.set_capacity({"h100": 4})
    flat_one_type = Policy.create_from_dict(
        {
            "name": "one",
            "instance_types": {"h100": {"gpus": 8}},
            "capacity": {"h100": 4},
            "shares": [{"name": "s", "capacity": {"h100": 2}}],
        },  # fmt: skip
        pool=one_type,
    )
    assert {p.key for p in presets_for(flat_one_type)} == {
        "static-split", "as-configured", "full-pooling", "preemption-off"}  # fmt: skip
    no_fallback = make_variant(tree_policy, PRESETS["no-fallback"])
    assert "no-fallback" not in {p.key for p in presets_for(no_fallback)}  # it would copy itself


def column(run_id: int, name: str, waits: dict[str, float]) -> RunColumn:
    shares = [{"name": share, "wait_seconds": {"p95": hours * H}} for share, hours in waits.items()]
    return RunColumn(run_id, name, run_id - 1, run_id == 1, {"summary": {}, "shares": shares})


def test_the_sentence_names_each_teams_p95_wait_with_and_without_the_tree(tree_policy):
    variant = make_variant(tree_policy, PRESETS["flattened"])
    snapshots = {1: tree_policy.engine_policy().to_dict(), 2: variant.engine_policy().to_dict()}
    columns = [column(1, "lab", {"vision": 1.5, "speech": 0.25}),
               column(2, "lab (flattened)", {"vision": 4.0, "speech": 0.25})]  # fmt: skip
    [effect] = variant_effects(columns, snapshots)
    changes = (ShareChange("vision", 1.5, 4.0), ShareChange("speech", 0.25, 0.25))
    assert effect == Effect("cohort tree", "lab", "lab (flattened)", changes)
    assert effect.text == (
        "What the cohort tree of lab changes for each team, against lab (flattened): "
        "p95 wait of vision 1.5 h instead of 4.0 h; speech unchanged at 15 min."
    )


def test_a_variant_edited_since_is_not_said_to_show_the_tree(tree_policy):
    variant = make_variant(tree_policy, PRESETS["flattened"])
    edited = variant.engine_policy().to_dict()
    edited["shares"][1]["capacity"]["a100"] = 1  # not the flattened policy any more
    snapshots = {1: tree_policy.engine_policy().to_dict(), 2: edited}
    columns = [column(1, "lab", {"vision": 1.0}), column(2, "edited", {"vision": 2.0})]
    assert variant_effects(columns, snapshots) == []


# Section 12 by hand. vision holds both h100 (v1, priority 1, until 7200 s); v2 (priority 5, h100
# then a100) comes at 600 s. With the fallback (when_can_preempt TryNextFlavor) it passes h100,
# where it could only preempt v1, and borrows speech's idle a100; speech, which may not reclaim,
# then waits for it: s1 from 900 s to 4200 s, 55 min. Without (MayStopSearch) v2 preempts v1 on
# h100 and s1 starts at once. vision's jobs start when submitted either way.
FLAT_POLICY = {
    "name": "flat",
    "instance_types": {"h100": {"gpus": 8}, "a100": {"gpus": 8}},
    "capacity": {"h100": 2, "a100": 2},
    "shares": [
        {"name": "vision", "capacity": {"h100": 2}, "in_share_preemption": "lower_priority",
         "flavor_order": ["h100", "a100"]},
        {"name": "speech", "capacity": {"a100": 2}, "reclaim": "never"},
    ],
}  # fmt: skip
TRACE_CSV = b"""job_id,submit_time,share,priority,instance_count,duration,instance_type
v1,0,vision,1,2,7200,h100
v2,600,vision,5,2,3600,h100|a100
s1,900,speech,1,2,1800,a100
"""


def test_the_study_page_says_what_the_fallback_changes_for_each_team(db):
    for name in ("h100", "a100"):
        InstanceType.objects.get_or_create(name=name, defaults={"gpus": 8, "hourly_price": 0})
    pool = Pool.objects.create(name="flat")
    pool.set_capacity({"h100": 2, "a100": 2})
    policy = Policy.create_from_dict(FLAT_POLICY, pool=pool)
    variant = make_variant(policy, PRESETS["no-fallback"])
    columns = read_upload(io.BytesIO(TRACE_CSV), format="planner-csv")
    trace = Trace.store(columns, name="week")
    study = launch_study(StudyLaunch(name="fallback", trace=trace, policies=[policy, variant]), enqueue=False)
    for run in study.runs.all():
        result = replay(EnginePolicy.from_dict(run.policy_snapshot), columns)
        Run.objects.filter(pk=run.pk).update(status=RunStatus.SUCCEEDED, progress=1.0,
                                             metrics=strict_json(result.metrics))  # fmt: skip
    user = User.objects.create_user(username="reader", password="pw")
    user.groups.add(Group.objects.get(name="viewer"))
    client = Client()
    client.force_login(user)
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert (
        '<p class="decision variant-effect">What the fallback to other instance types of flat changes for '
        "each team, against flat (no fallback): p95 wait of speech 55 min instead of 0 min; vision "
        "unchanged at 0 min.</p>"
    ) in page


def test_a_study_of_an_imported_policy_adds_the_variants_that_would_change_it(tree_policy):
    one_type = Trace.store(read_upload(io.BytesIO(
        b"job_id,submit_time,share,priority,instance_count,duration,instance_type\nj,0,vision,1,1,60,h100\n"
    ), format="planner-csv"), name="one type")  # fmt: skip
    both = Trace.store(read_upload(io.BytesIO(TRACE_CSV), format="planner-csv"), name="either type")
    usual = ["static split", "full pooling", "preemption off"]
    assert [p.label for p in study_presets(tree_policy, one_type)] == [*usual, "flattened"]
    assert [p.label for p in study_presets(tree_policy, both)] == [*usual, "flattened", "no fallback"]
    assert [p.label for p in study_presets(None)] == usual
