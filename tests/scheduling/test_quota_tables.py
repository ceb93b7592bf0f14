"""Quota tables to policies: the real shared tables, the ITP assumption, and bad tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from scheduling import quota_tables
from scheduling.errors import InputError
from scheduling.model import Policy, Strategy

QUOTAS = Path("/work/shared/data/vc-quotas")
needs_quotas = pytest.mark.skipif(
    not QUOTAS.exists(), reason="the shared quota tables are not on this machine"
)


@needs_quotas
def test_helios_last_day_by_default():
    data = quota_tables.helios_policy_dict(QUOTAS / "helios-venus-gpus-per-vc-per-day.csv")
    policy = Policy.from_dict(data)
    assert data["name"] == "helios-2020-09-28-reserve"
    assert policy.capacity == {"gpu": 1080}  # the table's total on 2020-09-28
    assert (
        len(policy.shares) == 25 and policy.shares[0].name == "vcEwI" and policy.shares[0].quota("gpu") == 72
    )
    assert {share.strategy for share in policy.shares} == {Strategy.RESERVE}


@needs_quotas
def test_helios_chosen_day_and_strategy():
    data = quota_tables.helios_policy_dict(
        QUOTAS / "helios-venus-gpus-per-vc-per-day.csv",
        day="2020-04-01",
        strategy="LEND_AND_BORROW",
        borrow_limit_percent=100,
    )
    assert data["capacity"] == {"gpu": 968}
    assert all(
        s["strategy"] == "LEND_AND_BORROW" and s["borrow_limit_percent"] == 100 for s in data["shares"]
    )
    with pytest.raises(InputError, match="2020-04-01 to 2020-09-28") as caught:
        quota_tables.gpus_per_vc_on_day(QUOTAS / "helios-venus-gpus-per-vc-per-day.csv", "2021-01-01")
    assert caught.value.field == "day"


@needs_quotas
def test_nodes_tables_count_eight_gpus_per_node_by_default():
    venus = quota_tables.nodes_policy_dict(QUOTAS / "venus-nodes-per-vc.csv")
    assert venus["shares"][0] == {"name": "vcEwI", "capacity": {"gpu": 72}, "strategy": "RESERVE"}
    philly = quota_tables.nodes_policy_dict(
        QUOTAS / "philly-nodes-per-vc.csv", gpus_per_node=4, strategy="LEND"
    )
    assert philly["capacity"] == {"gpu": 352 * 4} and "4 GPUs each" in philly["description"]


def test_itp_pool_matches_the_stated_assumption():
    policy = Policy.from_dict(quota_tables.itp_policy_dict("LEND_AND_BORROW"))
    assert policy.capacity == {"gpu": 1560}
    assert [s.quota("gpu") for s in policy.shares] == [64, 112, 176, 616, 16, 112, 320, 88, 40, 16]
    assert "1,560 GPUs" in quota_tables.ITP_ASSUMPTION
    assert policy.description == quota_tables.ITP_ASSUMPTION


def test_strategy_per_share_and_machines():
    data = quota_tables.policy_dict(
        {"a": 16, "b": 8},
        name="two",
        strategy={"a": "RESERVE", "b": Strategy.LEND_AND_BORROW},
        gpus_per_instance=8,
        instance_type="p4d",
        unassigned_gpus=8,
    )
    assert data["capacity"] == {"p4d": 4}
    assert [(s["name"], s["capacity"], s["strategy"]) for s in data["shares"]] == [
        ("a", {"p4d": 2}, "RESERVE"),
        ("b", {"p4d": 1}, "LEND_AND_BORROW"),
    ]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"strategy": "SHARE_ALL"}, "strategy"),
        ({"strategy": {"a": "RESERVE"}}, "strategy.b"),
        ({"strategy": {"a": "LEND", "b": "LEND", "c": "LEND"}}, "strategy.c"),
        ({"gpus_per_instance": 4}, "quotas.a"),
    ],
)
def test_bad_settings_name_the_field(kwargs, field):
    with pytest.raises(InputError) as caught:
        quota_tables.policy_dict({"a": 6, "b": 6}, name="x", **kwargs)
    assert caught.value.field == field


def test_bad_tables_name_row_and_field():
    with pytest.raises(InputError, match="not the sum") as caught:
        quota_tables.gpus_per_vc_on_day(b"date,vcA,vcB,total\n2020-01-01,8,8,24\n")
    assert (caught.value.row, caught.value.field) == (1, "total")
    with pytest.raises(InputError, match="whole number") as caught:
        quota_tables.gpus_per_vc_from_nodes(b"vc,node num\na,4\nb,many\n")
    assert (caught.value.row, caught.value.field) == (2, "node num")
    with pytest.raises(InputError, match="twice") as caught:
        quota_tables.gpus_per_vc_from_nodes(b",num\na,4\na,2\n")
    assert caught.value.row == 2


TRACE_CSV = b"job_id,submit_time,share,priority,instance_count,duration\nt1,0,train,1,2,3600\n"


def test_a_trace_read_as_a_nodes_table_is_refused_naming_its_columns():
    # Read before as 1 team "t1" of 0 nodes (job_id as team, submit_time as node count).
    with pytest.raises(InputError) as caught:
        quota_tables.gpus_per_vc_from_nodes(TRACE_CSV)
    assert caught.value.field == "header"
    assert caught.value.reason == (
        "expected two columns, a VC and its number of nodes (like 'vc,node num' or ',num'); the file has 6: "
        "'job_id', 'submit_time', 'share', 'priority', 'instance_count', 'duration'"
    )
    # two columns, but not a VC and a count
    with pytest.raises(InputError, match="the file has 'job_id', 'submit_time'"):
        quota_tables.gpus_per_vc_from_nodes(b"job_id,submit_time\nt1,0\n")


def test_a_trace_read_as_a_helios_table_names_the_missing_date_column():
    with pytest.raises(InputError) as caught:
        quota_tables.gpus_per_vc_on_day(TRACE_CSV)
    assert caught.value.field == "date" and "the file has: job_id, submit_time" in caught.value.reason


def test_a_table_of_400_million_nodes_is_refused_by_the_validator():
    # 400,000,000 nodes x 8 GPUs: far past any pool (a DataError on PostgreSQL before)
    with pytest.raises(InputError, match="above the maximum 1,000,000"):
        quota_tables.nodes_policy_dict(b"vc,node num\nhuge,400000000\n", name="huge")
