"""Scaling a policy to a pool size: quotas and the unassigned part in proportion, whole instances."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.model import parse_policy
from scheduling.scaling import (
    apportion,
    capacity_at,
    monthly_list_price,
    policy_at,
    scale_policy,
    sized_type,
)

LAB = {
    "name": "lab",
    "instance_types": {"gpu": {"gpus": 1, "hourly_price": 2.0}, "big": {"gpus": 8, "hourly_price": 30.0}},
    "capacity": {"gpu": 10, "big": 4},
    "shares": [
        {"name": "train", "capacity": {"gpu": 5, "big": 2}, "strategy": "LEND_AND_BORROW",
         "borrowing_limit": {"gpu": 4, "big": 1}},
        {"name": "infer", "capacity": {"gpu": 3}, "strategy": "LEND", "lending_limit": 2},
    ],
}  # fmt: skip


def quotas(policy: dict, type_name: str) -> list[int]:
    return [share.get("capacity", {}).get(type_name, 0) for share in policy["shares"]]


def test_apportion_gives_the_leftover_instances_to_the_largest_remainders():
    # 5:3:2 of 13 = 6.5, 3.9, 2.6: floors 6, 3, 2 (11), the 2 left go to .9 then .6.
    assert apportion([5, 3, 2], 13) == [6, 4, 3]


def test_apportion_breaks_equal_remainders_for_the_larger_part():
    # 3:1 of 2 = 1.5, 0.5: floors 1, 0; one left, equal remainders: the larger part takes it.
    assert apportion([3, 1], 2) == [2, 0]


def test_apportion_of_nothing_is_nothing():
    assert apportion([0, 0], 5) == [0, 0]


def test_scaling_up_keeps_quotas_and_unassigned_in_proportion():
    # gpu 10 -> 15: train 5 -> 7.5, infer 3 -> 4.5, unassigned 2 -> 3; floors 7 + 4 + 3 = 14, the
    # one left goes to a .5 remainder, the larger part first: train.
    scaled = scale_policy(LAB, {"gpu": 15})
    assert scaled["capacity"] == {"gpu": 15, "big": 4}
    assert quotas(scaled, "gpu") == [8, 4]
    assert quotas(scaled, "big") == [2, 0]  # big untouched


def test_absolute_limits_scale_with_their_type():
    # x1.5: train borrows at most 4 -> 6 gpu; infer's bare lending limit 2 is spelled out per type
    # and becomes 3 for gpu, 2 for big.
    scaled = scale_policy(LAB, {"gpu": 15})
    assert scaled["shares"][0]["borrowing_limit"] == {"gpu": 6, "big": 1}
    assert scaled["shares"][1]["lending_limit"] == {"gpu": 3, "big": 2}


def test_scaling_down_stays_valid_and_sums_to_the_pool():
    # gpu 10 -> 3: 1.5, 0.9, 0.6: floors 1, 0, 0; two left: infer (.9), unassigned (.6).
    scaled = scale_policy(LAB, {"gpu": 3})
    assert quotas(scaled, "gpu") == [1, 1]
    parse_policy(scaled)  # valid


def test_the_sized_type_is_the_one_with_most_gpus():
    # gpu: 10 x 1 = 10 GPUs; big: 4 x 8 = 32 GPUs.
    assert sized_type(LAB) == "big"


def test_proportional_sizing_scales_every_type_by_the_sized_types_factor():
    # big 4 -> 6 is x1.5: gpu 10 -> 15.
    assert capacity_at(LAB, 6) == {"gpu": 15, "big": 6}
    # one type only: gpu stays at 10.
    assert capacity_at(LAB, 6, mode="one_type") == {"gpu": 10, "big": 6}
    assert capacity_at(LAB, 12, mode="one_type", instance_type="gpu") == {"gpu": 12, "big": 4}


def test_a_scaled_policy_is_named_after_its_gpus_and_priced_per_month():
    scaled = policy_at(LAB, 6)
    # 15 x 1 + 6 x 8 = 63 GPUs; (15 x $2 + 6 x $30) x 730 h = $153,300 a month.
    assert scaled["name"] == "lab at 63 GPUs"
    assert monthly_list_price(parse_policy(scaled)) == pytest.approx(153_300)


def test_bad_sizes_are_refused_naming_the_field():
    with pytest.raises(InputError, match="size: 0"):
        capacity_at(LAB, 0)
    with pytest.raises(InputError, match="instance_type"):
        capacity_at(LAB, 5, instance_type="tpu")
    with pytest.raises(InputError, match="mode"):
        capacity_at(LAB, 5, mode="sideways")


def test_a_policy_with_changes_over_time_is_not_scaled():
    with pytest.raises(InputError, match="changes"):
        scale_policy({**LAB, "changes": [{"time": 0, "capacity": {"gpu": 11}}]}, {"gpu": 20})


def test_a_policy_with_changes_over_time_is_replayed_at_its_own_size():
    # today's size is no scaling at all: the calendar stays as written, only the name says the size.
    planned = {**LAB, "changes": [{"time": 0, "capacity": {"gpu": 11}}]}
    same = scale_policy(planned, {"gpu": 10, "big": 4})
    assert same["changes"] == planned["changes"] and same["capacity"] == LAB["capacity"]
    assert same["shares"] == LAB["shares"] and same["name"] == "lab at 42 GPUs"
