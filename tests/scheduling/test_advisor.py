"""The advisor's pure part: variants swept over share knobs, and the Pareto front under constraints."""

from __future__ import annotations

from collections import Counter

import pytest
from gpu_policies import policy, priced, share

from scheduling.advisor import (
    MAX_VARIANTS,
    Constraint,
    SweepPoint,
    assess,
    pareto_front,
    parse_constraints,
    parse_knobs,
    point_from_metrics,
    share_options,
    variants,
)
from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.synthetic import demo_policy_dict

BASE = policy(
    10,
    share("train", 6, borrow_limit_percent=100),
    share("infer", 4, "RESERVE"),
    name="lab",
    instance_types=priced(2.0),
)


def test_share_options_count_only_meaningful_combinations():
    # RESERVE: 2 preemption settings; LEND: 3 lending x 2; LEND_AND_BORROW: 5 borrow x 3 lending x 2.
    assert len(share_options(parse_knobs({}, ["a"]))) == 2 + 6 + 30


def test_small_grid_is_complete_and_skips_the_base():
    # infer only, strategies RESERVE/LEND, preemption never: RESERVE (= base), LEND x 3 lending limits.
    knobs = {"shares": ["infer"], "strategy": ["RESERVE", "LEND"], "in_share_preemption": ["never"]}
    out = variants(BASE, knobs, mode="grid", size=10)
    assert [v.label for v in out] == [
        "infer: LEND, lend all, no in-share preemption",
        "infer: LEND, lend 0%, no in-share preemption",
        "infer: LEND, lend 50%, no in-share preemption",
    ]
    infer = out[2].policy["shares"][1]
    assert infer == {"name": "infer", "capacity": {"gpu": 4}, "strategy": "LEND",
                     "in_share_preemption": "never", "lending_limit": {"gpu": 2}}  # fmt: skip
    assert out[2].policy["shares"][0] == BASE["shares"][0]  # train untouched
    assert BASE["shares"][1]["strategy"] == "RESERVE"  # the base dict is not modified


def test_borrow_limit_replaces_an_absolute_borrowing_limit():
    base = {**BASE, "shares": [{**BASE["shares"][0], "borrow_limit_percent": None, "borrowing_limit": 3},
                               BASE["shares"][1]]}  # fmt: skip
    base["shares"][0].pop("borrow_limit_percent")
    knobs = {"shares": ["train"], "strategy": ["LEND_AND_BORROW"], "borrow_limit_percent": [50],
             "lending_limit": [None], "in_share_preemption": ["never"]}  # fmt: skip
    (only,) = variants(base, knobs, size=5)
    train = only.policy["shares"][0]
    assert train["borrow_limit_percent"] == 50 and "borrowing_limit" not in train
    assert only.label == "train: LEND_AND_BORROW, borrow 50%, lend all, no in-share preemption"


def test_every_variant_is_a_valid_distinct_policy_and_the_cap_holds():
    base = demo_policy_dict(40)
    for mode in ("grid", "random"):
        out = variants(base, mode=mode, size=40, seed=7)
        assert len(out) == 40
        assert len({repr(sorted(v.changes.items())) for v in out}) == 40
        for variant in out:
            Policy.from_dict(variant.policy)
            assert variant.changes and variant.label


def test_same_seed_same_variants_other_seed_others():
    base = demo_policy_dict(40)
    first = [v.label for v in variants(base, mode="random", size=12, seed=1)]
    assert first == [v.label for v in variants(base, mode="random", size=12, seed=1)]
    assert first != [v.label for v in variants(base, mode="random", size=12, seed=2)]


def test_large_grid_is_thinned_evenly():
    # 38 settings for each of 4 shares (over 2 million points): 76 spread over the grid give every
    # share each of its 38 settings once to three times.
    base = demo_policy_dict(40)
    out = variants(base, mode="grid", size=76)
    assert len(out) == 76
    for base_share in base["shares"]:
        seen = Counter(v.changes[base_share["name"]] for v in out if base_share["name"] in v.changes)
        assert len(seen) >= 37 and max(seen.values()) <= 3  # the base's own setting is not a change


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"mode": "spiral"}, "mode"),
        ({"size": 0}, "size"),
        ({"size": MAX_VARIANTS + 1}, "size"),
        ({"knobs": {"colour": ["red"]}}, "knobs.colour"),
        ({"knobs": {"shares": ["nobody"]}}, "knobs.shares"),
        ({"knobs": {"strategy": ["HOARD"]}}, "knobs.strategy"),
        ({"knobs": {"borrow_limit_percent": [-5]}}, "knobs.borrow_limit_percent"),
        ({"knobs": {"lending_limit": [1.5]}}, "knobs.lending_limit"),
        ({"knobs": {"in_share_preemption": []}}, "knobs.in_share_preemption"),
    ],
)
def test_bad_sweep_arguments_name_their_field(kwargs, field):
    with pytest.raises(InputError) as caught:
        variants(BASE, **kwargs)
    assert caught.value.field == field


def point(key, utilization, urgent_wait, rerun, **shares):
    return SweepPoint(key, utilization, urgent_wait, rerun, shares)


def test_front_keeps_the_non_dominated_points():
    a = point("a", 0.9, 3600, 10)  # best utilization
    b = point("b", 0.8, 600, 10)  # best wait
    c = point("c", 0.8, 3600, 10)  # dominated by a (lower utilization, same wait and rerun)
    d = point("d", 0.7, 600, 2)  # least rerun
    e = point("e", 0.7, 600, 5)  # dominated by d: same utilization and wait, more rerun
    assert [p.key for p in pareto_front([a, b, c, d, e])] == ["a", "b", "d"]


def test_equal_points_are_both_kept():
    a, b = point("a", 0.5, 60, 1), point("b", 0.5, 60, 1)
    assert [p.key for p in pareto_front([a, b])] == ["a", "b"]


def test_constraints_filter_before_the_front():
    # a dominates b, but a breaks "train p95 wait <= 1 h", so b is on the front and a is not.
    a = point("a", 0.9, 100, 1, train=7200.0)
    b = point("b", 0.8, 200, 2, train=1800.0)
    limit = Constraint("p95_wait_seconds", 3600, share="train")
    verdicts = assess([a, b], constraints=[limit])
    assert [(v.point.key, v.on_front, v.violations) for v in verdicts] == [
        ("a", False, ("train p95 wait <= 1 h",)),
        ("b", True, ()),
    ]
    assert [p.key for p in pareto_front([a, b])] == ["a"]


def test_utilization_floor():
    a, b = point("a", 0.6, 10, 0), point("b", 0.75, 20, 0)
    floor = Constraint("utilization", 0.7, at_most=False)
    assert [p.key for p in pareto_front([a, b], constraints=[floor])] == ["b"]
    assert floor.describe() == "utilization >= 70%"


def test_parse_constraints():
    parsed = parse_constraints(
        [
            {"metric": "p95_wait_seconds", "share": "train", "max": 3600},
            {"metric": "utilization", "min": 0.7},
        ],  # fmt: skip
        ["train", "infer"],
    )
    assert parsed == [
        Constraint("p95_wait_seconds", 3600.0, True, "train"),
        Constraint("utilization", 0.7, False, None),
    ]


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"metric": "p95_wait_seconds"}, "constraints"),
        (["p95"], "constraints[0]"),
        ([{"metric": "speed", "max": 1}], "constraints[0].metric"),
        ([{"metric": "p95_wait_seconds", "share": "nobody", "max": 1}], "constraints[0].share"),
        ([{"metric": "utilization", "max": 0.5}], "constraints[0].min"),
        ([{"metric": "rerun_gpu_hours", "max": "lots"}], "constraints[0].max"),
    ],
)
def test_bad_constraints_name_their_field(raw, field):
    with pytest.raises(InputError) as caught:
        parse_constraints(raw, ["train"])
    assert caught.value.field == field


def test_point_from_metrics_takes_the_worst_urgent_share():
    metrics = {
        "summary": {"utilization": 0.8, "rerun_gpu_hours": 3.5},
        "shares": [
            {"name": "train", "wait_seconds": {"p95": 900.0}},
            {"name": "infer", "wait_seconds": {"p95": 120.0}},
            {"name": "batch", "wait_seconds": {"p95": 86400.0}},
        ],
    }
    urgent = point_from_metrics(1, metrics, ["train", "infer"])
    assert (urgent.utilization, urgent.urgent_p95_wait_seconds, urgent.rerun_gpu_hours) == (0.8, 900.0, 3.5)
    assert point_from_metrics(1, metrics, []).urgent_p95_wait_seconds == 86400.0  # none named: all shares


def test_the_advisor_sweeps_fair_weights_and_fair_sharing_on_and_off():
    from scheduling.advisor import variants as make_variants
    from scheduling.model import Policy as EnginePolicy

    base = {
        "name": "two",
        "capacity": {"gpu": 4},
        "shares": [{"name": "a", "capacity": {"gpu": 2}}, {"name": "b", "capacity": {"gpu": 2}}],
    }
    knobs = {
        "shares": ["a"],
        "strategy": ["LEND_AND_BORROW"],
        "borrow_limit_percent": [-1],
        "lending_limit": [None],
        "in_share_preemption": ["never"],
        "fair_weight": [1, 3],
        "fair_sharing": [False, True],
    }
    made = make_variants(base, knobs, size=10)
    # 2 weights x 2 fair-sharing settings = 4 points, one of them the base (weight 1, off)
    assert sorted(v.label for v in made) == [
        "a: LEND_AND_BORROW, borrow unlimited, lend all, no in-share preemption, fair weight 3",
        "fair sharing on",
        "fair sharing on; a: LEND_AND_BORROW, borrow unlimited, lend all, no in-share preemption, "
        "fair weight 3",
    ]
    on = next(v for v in made if v.label == "fair sharing on")
    policy = EnginePolicy.from_dict(on.policy)
    assert policy.fair_sharing is not None and [s.fair_weight for s in policy.shares] == [1, 1]
    assert on.fair_sharing is True


def test_a_negative_fair_weight_knob_is_named():
    from scheduling.advisor import parse_knobs
    from scheduling.errors import InputError

    with pytest.raises(InputError) as caught:
        parse_knobs({"fair_weight": [-1]}, ["a"])
    assert caught.value.field == "knobs.fair_weight"
