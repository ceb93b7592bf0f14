""" "The demo pool now": the ITP 2021 demo (``manage.py load_demo``) cut at its busiest instant.

The demo trace is replayed once under the demo policy (``itp-2021``) with its events; the queue at
the instant with the most jobs waiting, at least a week into the trace, is the snapshot, and the
week of the trace before it is stored as the history trace (once, by name). The snapshot is kept in
a file under MEDIA_ROOT keyed by the trace and the policy as it is now, so the replay runs once.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import IntegrityError, transaction

from planner.capacity.models import Policy
from planner.forecasts import cut
from planner.traces.models import Trace
from scheduling.replay.engine import replay

DEMO_TRACE = "itp-2021"
DEMO_POLICY = "itp-2021"
NOT_LOADED = (
    "the ITP demo is not loaded: an admin loads it with `./planner.sh load-demo` (or `manage.py load_demo`)"
)


@dataclass(frozen=True)
class DemoPool:
    policy: Policy
    history: Trace
    snapshot: dict
    day: float  # T0 as days since the trace's first submit (what the page says)


def demo_available() -> bool:
    return (
        Trace.objects.ready().filter(name=DEMO_TRACE).exists()
        and Policy.objects.filter(name=DEMO_POLICY).exists()
    )


def _cache_path(trace: Trace, policy_dict: dict) -> Path:
    key = hashlib.sha256(json.dumps(policy_dict, sort_keys=True).encode()).hexdigest()[:16]
    return Path(settings.MEDIA_ROOT) / "forecasts" / f"demo-{trace.pk}-{key}.json"


def _cut(trace: Trace, policy: Policy, path: Path) -> dict:
    jobs = trace.load_jobs()
    result = replay(policy.engine_policy(), jobs, record_events=True)
    first = float(jobs.submit_time.min())
    t0 = cut.busiest_instant(jobs, result, after=first + cut.WEEK)
    snapshot = cut.snapshot_at(jobs, result, t0)
    history = cut.week_before(jobs, t0)
    stored = {"snapshot": snapshot, "day": (t0 - first) / 86_400.0, "history_jobs": len(history)}
    name = f"{trace.name}: the week before day {stored['day']:.1f}"
    if not Trace.objects.filter(name=name).exists():
        try:
            with transaction.atomic():
                Trace.store(
                    history,
                    name=name,
                    format="itp-2021",
                    description=f"The {len(history):,} jobs of {trace.name} submitted in the 7 days before "
                    f"its busiest instant (day {stored['day']:.1f}): the history of the demo forecast.",
                )
        except IntegrityError:
            pass  # another request stored it first
    stored["history"] = name
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_suffix(".tmp")
    temporary.write_text(json.dumps(stored))
    temporary.replace(path)
    return stored


def demo_pool() -> DemoPool:
    """The demo's policy, the history trace and the snapshot at the busiest instant (made once).
    Raises ValidationError on ``demo`` when the ITP demo is not loaded."""
    trace = Trace.objects.ready().filter(name=DEMO_TRACE).first()
    policy = Policy.objects.filter(name=DEMO_POLICY).first()
    if trace is None or policy is None:
        raise ValidationError({"demo": NOT_LOADED})
    path = _cache_path(trace, policy.engine_policy().to_dict())
    stored = json.loads(path.read_text()) if path.exists() else None
    history = Trace.objects.filter(name=stored["history"]).first() if stored else None
    if stored is None or history is None:
        stored = _cut(trace, policy, path)
        history = Trace.objects.get(name=stored["history"])
    return DemoPool(policy=policy, history=history, snapshot=stored["snapshot"], day=stored["day"])
