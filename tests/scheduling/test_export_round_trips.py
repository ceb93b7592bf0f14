"""Round trips over many generated policies: any policy that uses only what AWS Batch has (or only what
Kueue has) comes back equal from its export, and the export says nothing was lost."""

from __future__ import annotations

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from scheduling.export import from_aws_batch, from_kueue_yaml, kueue_notes, to_aws_batch, to_kueue_yaml
from scheduling.model import Policy

TYPES = [("ml.g5.xlarge", 1, 1.41), ("ml.g5.12xlarge", 4, 7.09), ("ml.p4d.24xlarge", 8, 37.69)]
SHARE_NAMES = ["research", "Team B", "prod_serving", "ops/infra"]


@st.composite
def pools(draw) -> tuple[dict, dict]:
    chosen = draw(st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True))
    instance_types = {name: {"gpus": gpus, "hourly_price": draw(st.sampled_from([0, price]))}
                      for name, gpus, price in chosen}  # fmt: skip
    capacity = {name: draw(st.integers(1, 12)) for name in instance_types}
    return instance_types, capacity


@st.composite
def quotas(draw, capacity: dict, count: int) -> list[dict]:
    """``count`` shares' quotas that fit the pool, without zero entries (zero is the same as none)."""
    left = dict(capacity)
    out = []
    for _ in range(count):
        quota = {}
        for type_name in capacity:
            n = draw(st.integers(0, left[type_name]))
            if n:
                quota[type_name] = n
                left[type_name] -= n
        out.append(quota)
    return out


@st.composite
def policy_bases(draw) -> dict:
    """A named pool with a start-up time and one to four shares of it, each with a quota that fits and a
    drawn strategy: what both exports carry; each export's policies add the share knobs it has."""
    instance_types, capacity = draw(pools())
    count = draw(st.integers(1, 4))
    shares = [
        {
            "name": name,
            "capacity": quota,
            "strategy": draw(st.sampled_from(["RESERVE", "LEND", "LEND_AND_BORROW"])),
        }
        for name, quota in zip(SHARE_NAMES, draw(quotas(capacity, count)), strict=False)
    ]
    return {
        "name": draw(st.sampled_from(["pool-a", "Research Pool 2"])),
        "instance_types": instance_types,
        "capacity": capacity,
        "startup_seconds": draw(st.sampled_from([0, 90, 300.5])),
        "shares": shares,
    }


@st.composite
def aws_policies(draw) -> dict:
    policy = draw(policy_bases())
    for share in policy["shares"]:
        if share["strategy"] == "LEND_AND_BORROW":
            percent = draw(st.sampled_from([None, -1, 0, 50, 100, 200, 350]))
            if percent is not None:
                share["borrow_limit_percent"] = percent
        share["in_share_preemption"] = draw(st.sampled_from(["never", "lower_priority"]))
    return policy


@st.composite
def kueue_policies(draw) -> dict:
    policy = draw(policy_bases())
    capacity = policy["capacity"]
    for share in policy["shares"]:
        quota, strategy = share["capacity"], share["strategy"]
        if strategy == "LEND_AND_BORROW":
            limited = draw(st.lists(st.sampled_from(list(capacity)), unique=True))
            if limited:
                share["borrowing_limit"] = {t: draw(st.integers(0, 6)) for t in limited}
            # Borrowing nothing of any type is LEND, and reads back so.
            assume(not (set(limited) == set(capacity) and not any(share["borrowing_limit"].values())))
        if strategy != "RESERVE":
            lent = draw(st.lists(st.sampled_from(list(quota) or list(capacity)), unique=True))
            if lent:
                share["lending_limit"] = {t: draw(st.integers(0, quota.get(t, 0))) for t in lent}
            if strategy == "LEND" and lent:
                # Lending nothing of any type is RESERVE, and reads back so.
                assume(not (set(lent) == set(capacity) and not any(share["lending_limit"].values())))
        share["in_share_preemption"] = draw(
            st.sampled_from(["never", "lower_priority", "lower_or_newer_equal_priority"])
        )
        share["reclaim"] = draw(st.sampled_from(["any", "lower_priority", "never"]))
        # Section 12: the order the ClusterQueue lists its flavors in, and its flavorFungibility.
        if draw(st.booleans()):
            share["flavor_order"] = draw(st.permutations(list(capacity)))
        if draw(st.booleans()):
            when = ["MayStopSearch", "TryNextFlavor"]
            fungibility = {"when_can_borrow": draw(st.sampled_from(when)),
                           "when_can_preempt": draw(st.sampled_from(when))}  # fmt: skip
            if set(fungibility.values()) == {"TryNextFlavor"}:
                fungibility["preference"] = draw(
                    st.sampled_from(["BorrowingOverPreemption", "PreemptionOverBorrowing"])
                )
            share["flavor_fungibility"] = fungibility
    policy["queueing"] = draw(st.sampled_from(["best_effort_fifo", "strict_fifo"]))
    return policy


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(aws_policies())
def test_aws_batch_round_trip(policy):
    bundle = to_aws_batch(policy)
    assert Policy.from_dict(from_aws_batch(bundle.to_dict())) == Policy.from_dict(policy)
    lost = [n for n in bundle.notes if "no AWS Batch equivalent" in n or "has no AWS Batch setting" in n]
    assert lost == []


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(kueue_policies())
def test_kueue_round_trip(policy):
    text = to_kueue_yaml(policy)
    assert Policy.from_dict(from_kueue_yaml(text)) == Policy.from_dict(policy)
    notes = " ".join(kueue_notes(Policy.from_dict(policy)))
    assert "borrow_limit_percent" not in notes and "above its quota" not in notes
