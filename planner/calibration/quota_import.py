"""Pools from real quota tables in one step: a ``vc-quotas``-style table (Helios GPUs per VC per day,
or nodes per VC) read by ``scheduling.quota_tables`` into a policy dict, then stored as a Pool, a
Policy and its Shares through ``Policy.create_from_dict`` (the path the demo loader uses)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.capacity.models import InstanceType, Policy, Pool
from scheduling.errors import InputError
from scheduling.quota_tables import DEFAULT_GPUS_PER_NODE, helios_policy_dict, nodes_policy_dict

KINDS = {
    "helios-day": "GPUs per VC per day (helios-venus-gpus-per-vc-per-day.csv): one day's column values",
    "nodes": "nodes per VC (venus-nodes-per-vc.csv, philly-nodes-per-vc.csv), times GPUs per node",
}
STRATEGIES = ("RESERVE", "LEND", "LEND_AND_BORROW")


def quota_policy_dict(
    source: Any,
    *,
    kind: str,
    name: str,
    day: str | None = None,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    strategy: str = "RESERVE",
) -> dict:
    """The policy dict of a quota table; raises InputError naming the row and field."""
    if kind == "helios-day":
        return helios_policy_dict(source, day=day or None, strategy=strategy, name=name)
    if kind == "nodes":
        return nodes_policy_dict(source, gpus_per_node=gpus_per_node, strategy=strategy, name=name)
    raise InputError(f"{kind!r} is not one of {', '.join(KINDS)}", field="kind")


@transaction.atomic
def store_policy_with_pool(data: dict) -> Policy:
    """A new pool named like the policy, with the policy's capacity, and the policy on it."""
    name = data["name"]
    if Pool.objects.filter(name=name).exists():
        raise InputError(f"a pool named {name!r} already exists: choose another name", field="name")
    if Policy.objects.filter(name=name).exists():
        raise InputError(f"a policy named {name!r} already exists: choose another name", field="name")
    for type_name, spec in data["instance_types"].items():
        InstanceType.objects.get_or_create(
            name=type_name,
            defaults={"gpus": spec.get("gpus", 1), "hourly_price": spec.get("hourly_price", 0)},
        )
    pool = Pool.objects.create(name=name, description=data.get("description", ""))
    pool.set_capacity(data["capacity"])
    try:
        return Policy.create_from_dict(data, pool=pool)
    except ValidationError as error:
        raise InputError(" ".join(error.messages), field="file") from None


def import_quota_table(source: Any, **options: Any) -> Policy:
    """Read the table (``quota_policy_dict``'s options) and store its pool, policy and shares."""
    return store_policy_with_pool(quota_policy_dict(source, **options))
