"""What a forecast is made from (SEMANTICS.md section 11), its bounds, and the policy as it stands
at the snapshot's instant."""

from __future__ import annotations

from dataclasses import dataclass, replace

from scheduling.errors import InputError
from scheduling.forecast.snapshot import Snapshot, bind_snapshot
from scheduling.model import Policy
from scheduling.trace import Trace

MAX_SAMPLES = 2_000
MAX_HORIZON_DAYS = 90.0
MAX_WINDOW_DAYS = 365.0
DAY = 86_400.0
ARRIVALS = ("history", "none")


@dataclass
class ForecastInputs:
    """A forecast's inputs. ``arrivals`` None: ``history`` when a history is given, else ``none``."""

    policy: Policy
    snapshot: Snapshot
    history: Trace | None = None
    samples: int = 200
    seed: int = 0
    arrivals: str | None = None
    horizon_days: float = 30.0
    # Beyond section 11, opt-in (docs/forecast.md): a sample's durations of a pool come from the
    # jobs submitted within this many days around one of its jobs (None: the whole pool, section 11).
    duration_window_days: float | None = None

    def __post_init__(self) -> None:
        if self.arrivals is None:
            self.arrivals = "history" if self.history is not None else "none"
        check_inputs(self)

    @property
    def until(self) -> float:
        return self.snapshot.time + self.horizon_days * DAY


def check_inputs(inputs: ForecastInputs) -> None:
    samples = inputs.samples
    if isinstance(samples, bool) or not isinstance(samples, int) or not 1 <= samples <= MAX_SAMPLES:
        raise InputError(f"{inputs.samples!r} is outside 1..{MAX_SAMPLES}", field="samples")
    if isinstance(inputs.seed, bool) or not isinstance(inputs.seed, int) or not 0 <= inputs.seed < 2**63:
        raise InputError(f"{inputs.seed!r} is not a whole number from 0 to 2**63-1", field="seed")
    if inputs.arrivals not in ARRIVALS:
        raise InputError(f"{inputs.arrivals!r}: choose history or none", field="arrivals")
    if inputs.arrivals == "history" and inputs.history is None:
        raise InputError("history arrivals need a history trace", field="arrivals")
    window = inputs.duration_window_days
    if window is not None and (
        isinstance(window, bool) or not isinstance(window, (int, float)) or not 0 < window <= MAX_WINDOW_DAYS
    ):
        raise InputError(f"{window!r} is outside (0, {MAX_WINDOW_DAYS:g}] days", field="duration_window_days")
    days = inputs.horizon_days
    if isinstance(days, bool) or not isinstance(days, (int, float)) or not 0 < days <= MAX_HORIZON_DAYS:
        raise InputError(f"{days!r} is outside (0, {MAX_HORIZON_DAYS:g}] days", field="horizon_days")


def policy_at(policy: Policy, time: float) -> Policy:
    """The policy's calendar as it stands at ``time`` and after: capacities and quotas in force at
    ``time``, and the changes still to come."""
    if not policy.changes:
        return policy
    shares = tuple(replace(s, capacity=policy.quota_at(s.name, time)) for s in policy.shares)
    return replace(
        policy,
        capacity=policy.capacity_at(time),
        shares=shares,
        changes=tuple(c for c in policy.changes if c.time > time),
    )


def bound_snapshot(inputs: ForecastInputs) -> Snapshot:
    """The snapshot checked against the policy (shares and types known, a type for every job)."""
    return bind_snapshot(inputs.snapshot, inputs.policy)
