"""The compiled engine (``python -m scheduling.build``) replays exactly as the source it was
compiled from: every job outcome, every metric, every event, every wait-history record.

The rest of tests/scheduling runs on whichever engine is in use (./test.sh runs it on both);
this test puts the two side by side on traces large enough to reach every path of the loop.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from dataclasses import replace

import numpy as np
import pytest

from scheduling import compiled
from scheduling.model import Policy
from scheduling.replay import engine, engine_kind
from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate
from scheduling.trace import PriorityUpdates, Trace

pytestmark = pytest.mark.skipif(
    engine_kind() != "compiled",
    reason=f"the compiled engine is not in use: {compiled.stale_reason() or 'SCHEDULING_ENGINE=python'}",
)


@pytest.fixture(scope="module")
def source_engine():
    """scheduling/replay/engine.py and the modules compiled with it, run as Python, beside the compiled
    ones: each is loaded from its source under its own name while the compiled modules are set
    aside, so the source engine's imports bind the source modules, then the compiled ones are
    put back."""
    names = [f"scheduling.replay.{name.removesuffix('.py')}" for name in compiled.COMPILED]
    kept = {name: sys.modules.pop(name) for name in names if name in sys.modules}
    loaded = {}
    try:
        # Leaves first: each module's imports of the others then find the source ones.
        for name in sorted(names, key=lambda n: n == "scheduling.replay.engine"):
            loaded[name] = _load_source(name)
    finally:
        for name in names:
            sys.modules.pop(name, None)
        sys.modules.update(kept)
    module = loaded["scheduling.replay.engine"]
    assert module.__file__.endswith(".py") and not engine.__file__.endswith(".py")
    return module


def _load_source(name: str):
    if name in sys.modules:
        return sys.modules[name]
    path = compiled.REPLAY / f"{name.split('.')[-1]}.py"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def with_priority_updates(trace: Trace, n: int, seed: int) -> Trace:
    """Priority changes for n random jobs, some while they wait and some while they run."""
    rng = np.random.default_rng(seed)
    jobs = rng.choice(len(trace), size=n, replace=False)
    time = trace.submit_time[jobs] + rng.uniform(0, 3 * 3600, size=n)
    return replace(
        trace,
        updates=PriorityUpdates(
            time.astype(np.float64),
            [trace.job_id[j] for j in jobs],
            rng.integers(0, 100, size=n).astype(np.int32),
        ),
    )


def variant(base: dict, **changes) -> dict:
    """The demo policy with top-level changes and per-share overrides ({share name: fields})."""
    shares = changes.pop("shares", {})
    out = {**base, **changes}
    out["shares"] = [{**s, **shares.get(s["name"], {})} for s in base["shares"]]
    return out


def _policies(trace: Trace) -> dict[str, dict]:
    base = demo_policy_dict(demo_pool_gpus(trace, load=0.95))
    return {
        "demo": base,
        "strict_fifo": variant(base, queueing="strict_fifo"),
        "newer_equal_and_lower_priority_reclaim": variant(
            base,
            startup_seconds=0,
            shares={
                "research": {
                    "in_share_preemption": "lower_or_newer_equal_priority",
                    "reclaim": "lower_priority",
                },
                "nlp": {"strategy": "LEND_AND_BORROW", "in_share_preemption": "lower_priority"},
            },
        ),
        "kueue_limits": variant(
            base,
            shares={
                "research": {
                    "borrow_limit_percent": None,
                    "borrowing_limit": {"gpu": 40},
                    "lending_limit": {"gpu": 10},
                },
                "prod-training": {"reclaim": "never", "lending_limit": {"gpu": 0}},
            },
        ),
    }


def _same(a, b) -> None:
    for field in ("state", "first_start", "end", "queued", "preemptions", "lost", "reason"):
        assert np.array_equal(getattr(a.outcomes, field), getattr(b.outcomes, field), equal_nan=True), field
    assert a.outcomes.ignored_updates == b.outcomes.ignored_updates
    for name, column in a.outcomes.history.to_arrays().items():
        assert np.array_equal(column, b.outcomes.history.to_arrays()[name]), name
    assert json.dumps(a.metrics, sort_keys=True, default=str) == json.dumps(
        b.metrics, sort_keys=True, default=str
    )
    assert a.events == b.events


POLICIES = ["demo", "strict_fifo", "newer_equal_and_lower_priority_reclaim", "kueue_limits"]


@pytest.mark.parametrize("name", POLICIES)
def test_compiled_engine_replays_exactly_as_its_source(source_engine, name):
    trace = with_priority_updates(generate(4000, seed=7, days=3), n=300, seed=7)
    policy = Policy.from_dict(_policies(trace)[name])
    fast = engine.replay(policy, trace, record_events=True)
    slow = source_engine.replay(policy, trace, record_events=True)
    assert sum(1 for e in fast.events if e[2].value == "preempt") > 0 or name == "kueue_limits"
    _same(fast, slow)
