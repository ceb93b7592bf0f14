"""A replay that would never end is refused, not run for ever: with fair sharing, share values can
let jobs preempt each other in a cycle at one instant, and SEMANTICS.md section 8 gives that cycle
no end (Kueue escapes it only because an eviction takes time). Found on the synthetic demo with fair
weights 1, 2, 4 and 0.5 under strict FIFO: prod-training's high-priority job takes an in-share
victim, which takes research's jobs by fair sharing, one of which takes prod-training's job back."""

from __future__ import annotations

import pytest

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
