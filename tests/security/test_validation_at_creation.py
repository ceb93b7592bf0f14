"""A study or sweep over a trace whose shares or instance types its policy lacks was accepted (201)
and failed at replay; a refused sweep left its variant policies behind. Both are now refused when
made, in the API and the forms, naming what is missing, and nothing is stored."""

from __future__ import annotations

import io

import pytest

from planner.advisor.models import Sweep
from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.studies.models import Run, Study
from planner.traces.models import Trace, read_upload
from tests.security.conftest import GPU_TYPE


@pytest.fixture
def train_only(world) -> Policy:
    """The lab pool with only the ``train`` share: the lab trace's ``infer`` jobs have no share."""
    policy = Policy.objects.create(name="train-only", pool=world.pool)
    policy.replace_shares([ShareSpec("train", "LEND_AND_BORROW", None, "never", "any", {GPU_TYPE: 2})])
    return policy


@pytest.fixture
def other_type(world) -> Policy:
    """Both shares, but on a pool of another instance type than the trace's jobs name."""
    InstanceType.objects.create(name="ml.p4d.24xlarge", gpus=8)
    pool = Pool.objects.create(name="p4")
    pool.set_capacity({"ml.p4d.24xlarge": 2})
    policy = Policy.objects.create(name="p4-policy", pool=pool)
    policy.replace_shares(
        [
            ShareSpec("train", capacity={"ml.p4d.24xlarge": 1}),
            ShareSpec("infer", capacity={"ml.p4d.24xlarge": 1}),
        ]
    )
    return policy


def stored() -> tuple[int, int, int, int]:
    return Study.objects.count(), Run.objects.count(), Sweep.objects.count(), Policy.objects.count()


def test_a_study_whose_policy_lacks_a_share_of_the_trace_is_a_400_naming_it(world, train_only):
    before = stored()
    response = world.api("admin").post(
        "/api/studies/",
        {"name": "doomed", "trace": world.trace.pk, "policies": [world.policy.pk, train_only.pk]},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == {
        "policies": ["policy train-only has no share infer, which the trace's jobs use (trace lab-week)"]
    }
    assert stored() == before


def test_a_study_whose_policy_lacks_an_instance_type_of_the_trace_is_a_400_naming_it(world, other_type):
    # jobs that name their instance type: ml.g5.xlarge, which the p4 pool does not have
    csv = (
        b"job_id,submit_time,share,instance_type,duration\n"
        + b"j1,0,train,ml.g5.xlarge,60\nj2,5,infer,ml.g5.xlarge,9\n"
    )
    typed = Trace.store(read_upload(io.BytesIO(csv), format="planner-csv"), name="typed")
    response = world.api("admin").post(
        "/api/studies/",
        {"name": "doomed", "trace": typed.pk, "policies": [other_type.pk]},
        format="json",
    )
    assert response.status_code == 400
    assert "policy p4-policy has no instance type ml.g5.xlarge" in response.json()["policies"][0]


def test_the_study_form_says_which_shares_are_missing(world, train_only):
    before = stored()
    response = world.session("admin").post(
        "/studies/new/", {"name": "doomed", "trace": world.trace.pk, "policies": [train_only.pk]}
    )
    assert response.status_code == 400
    assert "train-only" in response.content.decode()  # listed among the policies that do not fit, with why
    assert stored() == before


def test_a_refused_sweep_leaves_no_variant_policy(world, train_only):
    before = stored()
    response = world.api("admin").post(
        "/api/sweeps/", {"trace": world.trace.pk, "base_policy": train_only.pk, "size": 5}, format="json"
    )
    assert response.status_code == 400
    assert "policy train-only has no share infer" in response.json()["base_policy"][0]
    assert stored() == before  # no sweep, no study, no variant policy


def test_the_sweep_form_says_which_shares_are_missing(world, train_only):
    before = stored()
    response = world.session("admin").post(
        "/advisor/",
        {
            "trace": world.trace.pk,
            "base_policy": train_only.pk,
            "strategy": ["RESERVE", "LEND"],
            "borrow_limit_percent": "unlimited",
            "lending_limit": "all",
            "in_share_preemption": ["never"],
            "mode": "grid",
            "size": 5,
            "seed": 0,
        },
    )
    assert response.status_code == 400
    assert "policy train-only has no share infer" in response.content.decode()
    assert stored() == before


def test_a_policy_that_fits_still_starts_a_study(world):
    response = world.api("admin").post(
        "/api/studies/",
        {"name": "fine", "trace": world.trace.pk, "policies": [world.policy.pk]},
        format="json",
    )
    assert response.status_code == 201
