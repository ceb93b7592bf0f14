"""A policy scaled to a size: what a curve's points and a search's candidates replay, and the fields
such a point stores."""

from __future__ import annotations

from django.core.exceptions import ValidationError

from scheduling.errors import InputError
from scheduling.model import parse_policy
from scheduling.scaling import SizeMode, capacity_at, pool_gpus, scale_policy


def scaled_policy(
    snapshot: dict, size: int, mode: SizeMode, instance_type: str, field: str
) -> tuple[dict, dict]:
    """(capacity, scaled policy) at ``size``, or a ValidationError on ``field``."""
    try:
        capacity = capacity_at(snapshot, size, mode=mode, instance_type=instance_type)
        return capacity, scale_policy(snapshot, capacity)
    except InputError as error:
        raise ValidationError({field: f"{snapshot['name']} at {size:,}: {error.describe()}"}) from None


def point_fields(size: int, capacity: dict, scaled: dict) -> dict:
    """The fields a curve's or a search's point at ``size`` stores: the capacity it has, its GPUs
    and the scaled policy it replays."""
    return {
        "size": size,
        "capacity": capacity,
        "gpus": pool_gpus(parse_policy(scaled)),
        "policy_snapshot": scaled,
    }
