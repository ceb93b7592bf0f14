"""Work in progress stays on its own page (unkept sweep variants, sweep studies), and the new-study
form offers only the policies that can replay the chosen trace, saying why the others are not
offered. Through the Django test client."""

import pytest

from planner.advisor.models import Sweep, SweepVariant
from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.studies.launch import StudyLaunch, launch_study

pytestmark = pytest.mark.django_db


@pytest.fixture
def other_pool_policy(db) -> Policy:
    """A policy whose shares are not the lab trace's (train, infer): it cannot replay it."""
    gpu = InstanceType.objects.create(name="ml.p4d.24xlarge", gpus=8, hourly_price=32.0)
    pool = Pool.objects.create(name="big")
    pool.set_capacity({gpu.name: 2})
    policy = Policy.objects.create(name="big-policy", pool=pool)
    policy.replace_shares([ShareSpec("research", "LEND", None, "never", "any", {gpu.name: 2})])
    return policy


@pytest.fixture
def sweep(small_policy, small_trace) -> Sweep:
    """A sweep with one variant nobody kept and one kept, and its study."""
    unkept = small_policy.duplicate("lab-policy sweep v1")
    kept = small_policy.duplicate("lab-policy sweep v2")
    study = launch_study(
        StudyLaunch(
            name="sweep study",
            trace=small_trace,
            policies=[small_policy, unkept, kept],
        ),
        enqueue=False,
    )
    made = Sweep.objects.create(name="sweep", trace=small_trace, base_policy=small_policy, study=study)
    SweepVariant.objects.create(sweep=made, policy=unkept, number=1, label="v1", kept=False)
    SweepVariant.objects.create(sweep=made, policy=kept, number=2, label="v2", kept=True)
    return made


def test_the_form_offers_only_policies_that_fit_the_trace(
    client_as, small_policy, small_trace, other_pool_policy
):
    page = client_as("admin").get(f"/studies/new/?trace={small_trace.pk}").content.decode()
    # lab-policy has shares train and infer on ml.g5.xlarge, as the trace; big-policy has neither
    assert f'value="{small_policy.pk}"' in page
    assert f'name="policies" value="{other_pool_policy.pk}"' not in page
    assert "1 policy is not offered: they cannot replay this trace" in page
    assert "<strong>big-policy</strong> (pool big): no share for infer, train of the trace" in page


def test_a_posted_policy_that_does_not_fit_is_refused_next_to_the_field(
    client_as, small_policy, small_trace, other_pool_policy
):
    response = client_as("admin").post(
        "/studies/new/",
        {"name": "mixed", "trace": small_trace.pk, "policies": [small_policy.pk, other_pool_policy.pk]},
    )
    assert response.status_code == 400
    assert "is not one of the available choices" in response.content.decode()


def test_unkept_sweep_variants_and_sweep_studies_stay_on_the_sweep_page(client_as, sweep, small_policy):
    viewer = client_as("viewer")
    policies = viewer.get("/policies/").content.decode()
    assert "lab-policy sweep v2" in policies  # kept: a policy like any other
    assert "lab-policy sweep v1" not in policies
    overview = viewer.get("/").content.decode()
    assert "sweep study" not in overview
    assert "2 policies" in overview  # lab-policy and the kept variant, not the unkept one
    assert "sweep study" not in viewer.get("/studies/").content.decode()
    form = client_as("admin").get(f"/studies/new/?trace={sweep.trace.pk}").content.decode()
    assert "lab-policy sweep v1" not in form and "lab-policy sweep v2" in form
