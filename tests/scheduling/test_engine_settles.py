"""A replay that would never end is refused, not run for ever: with fair sharing, share values can
let jobs preempt each other in a cycle at one instant, and SEMANTICS.md section 8 gives that cycle
no end (Kueue escapes it only because an eviction takes time). Found on the synthetic demo with fair
weights 1, 2, 4 and 0.5 under strict FIFO: prod-training's high-priority job takes an in-share
victim, which takes research's jobs by fair sharing, one of which takes prod-training's job back."""

from __future__ import annotations

import pytest
from conftest import _scenario
from reference import NeverSettles, reference_replay

from scheduling.engine import MAX_PREEMPTIONS_AT_ONE_INSTANT, replay
from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate


def demo(weights: list[float]) -> tuple[Policy, object]:
    trace = generate(2000, seed=1)
    policy = demo_policy_dict(demo_pool_gpus(trace))
    policy["fair_sharing"] = {}
    policy["queueing"] = "strict_fifo"
    for share, weight in zip(policy["shares"], weights, strict=True):
        share["fair_weight"] = weight
    return Policy.from_dict(policy), trace


def test_a_cycle_of_preemptions_at_one_instant_is_refused_naming_it():
    policy, trace = demo([1, 2, 4, 0.5])
    with pytest.raises(InputError) as caught:
        replay(policy, trace)
    assert caught.value.field == "fair_sharing"
    message = caught.value.reason
    assert "does not settle at 145,098.6 s" in message
    assert f"preempted {MAX_PREEMPTIONS_AT_ONE_INSTANT} times" in message
    assert "prod-training and research preempting each other" in message


def test_the_same_trace_with_equal_weights_settles():
    policy, trace = demo([1, 1, 1, 1])
    result = replay(policy, trace)
    assert result.summary["jobs"] == 2000


def test_a_small_cycle_is_one_the_reference_model_finds_too():
    # Found by the property tests (PROPERTY_EXAMPLES=3000): at t=32 S2's jobs (fair weight 0.5, in-share
    # preemption of newer equal-priority jobs) and the other shares' take each other's place by turns.
    # The reference model, written from SEMANTICS.md alone, never stops admitting there either: the
    # engine's refusal is the rules' own cycle, not an engine fault.
    policy = Policy.from_dict({
        "instance_types": {"x": {"gpus": 1, "hourly_price": 1.0}}, "capacity": {"x": 4},
        "shares": [
            {"name": "S0", "capacity": {"x": 2}, "strategy": "LEND_AND_BORROW",
             "in_share_preemption": "lower_priority", "reclaim": "any"},
            {"name": "S1", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW",
             "in_share_preemption": "lower_priority", "reclaim": "lower_priority", "lending_limit": 1},
            {"name": "S2", "capacity": {"x": 1}, "strategy": "LEND_AND_BORROW",
             "in_share_preemption": "lower_or_newer_equal_priority", "reclaim": "any", "fair_weight": 0.5},
        ],
        "queueing": "best_effort_fifo",
        "fair_sharing": {"preemption_strategies": ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]},
        "runnable_timeout_seconds": 15,
    })  # fmt: skip
    trace = _scenario("""
        job_id submit_time share duration priority instance_count checkpoint_interval preemption_retries
        j0     30          S2    19.5     0        1              12                  -
        j1     13          S2    17       3        2              19                  -
        j2     16.5        S1    17.5     0        2              20                  1
        j3     32          S0    14       0        3              -                   -
        j4     23          S1    21.5     2        4              -                   -
        j5     16.5        S1    0        3        2              -                   -
        j6     17          S1    3        3        1              12                  -
        j7     11.5        S2    27.5     3        2              -                   -
        j8     32          S2    17       2        1              3                   0
        j9     10.5        S2    0        2        3              20                  -
        j10    38.5        S1    17       3        3              -                   -
    """, [{"time": 109, "job_id": "j5", "priority": 4}])
    with pytest.raises(InputError, match="does not settle at 32.0 s"):
        replay(policy, trace)
    with pytest.raises(NeverSettles, match="t=32.0"):
        reference_replay(policy, trace)
