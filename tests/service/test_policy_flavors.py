"""Section 12's share settings stored relationally: a policy made from JSON keeps each share's flavor
order and flavorFungibility, although a stored policy lists its instance types by name (the order the
engine would otherwise take as the default), and its variants carry them."""

import pytest

from planner.capacity.models import InstanceType, Policy, Pool

pytestmark = pytest.mark.django_db

POLICY = {
    "name": "fallback",
    # "reserved" before "on-demand": not the order by name, in which a stored policy lists types
    "instance_types": {"reserved": {"gpus": 8}, "on-demand": {"gpus": 8}},
    "capacity": {"reserved": 2, "on-demand": 2},
    "shares": [
        {"name": "A", "capacity": {"reserved": 1, "on-demand": 1}},
        {"name": "B", "capacity": {"reserved": 1, "on-demand": 1}, "flavor_order": ["on-demand", "reserved"],
         "flavor_fungibility": {"when_can_borrow": "TryNextFlavor", "when_can_preempt": "TryNextFlavor",
                                "preference": "PreemptionOverBorrowing"}},
    ],
}  # fmt: skip


@pytest.fixture
def pool(db) -> Pool:
    for name in ("reserved", "on-demand"):
        InstanceType.objects.create(name=name, gpus=8, hourly_price=0)
    pool = Pool.objects.create(name="gpus")
    pool.set_capacity({"reserved": 2, "on-demand": 2})
    return pool


def test_a_stored_policy_keeps_each_shares_flavor_order_and_fungibility(pool):
    stored = Policy.create_from_dict(POLICY, pool=pool)
    engine = stored.engine_policy()
    assert list(engine.instance_types) == ["on-demand", "reserved"]  # by name
    assert engine.types_in_order("A") == ["reserved", "on-demand"]  # as in the JSON it came from
    assert engine.types_in_order("B") == ["on-demand", "reserved"]
    fungibility = engine.share("B").flavor_fungibility
    assert (fungibility.when_can_borrow.value, fungibility.preference.value) == (
        "TryNextFlavor", "PreemptionOverBorrowing")  # fmt: skip
    assert engine.share("A").flavor_fungibility == engine.share("A").flavor_fungibility.__class__()


def test_a_variant_carries_the_flavor_settings(pool):
    variant = Policy.create_from_dict(POLICY, pool=pool).duplicate("variant")
    engine = variant.engine_policy()
    assert engine.types_in_order("A") == ["reserved", "on-demand"]
    assert engine.share("B").flavor_fungibility.preference.value == "PreemptionOverBorrowing"
