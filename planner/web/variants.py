"""Policy variants made in one click: a copy of a policy with every share changed the same way
(static split, full pooling, preemption off), and, for the policies they change, one without its
tree of cohorts (flattened) and one whose jobs stop at the first type they could borrow or preempt
on (no fallback); validated by the engine before it is stored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from django.db import transaction

from planner.capacity.models import Policy, ShareSpec
from planner.traces.models import Trace
from scheduling.model import InSharePreemption, Reclaim, Strategy, WhenCan
from scheduling.trace import accepted_types


def _always(policy: Policy) -> bool:
    return True


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    explanation: str
    change: Callable[[ShareSpec], ShareSpec]
    keeps_tree: bool = True  # False: the variant has no cohorts (every share under the root)
    applies: Callable[[Policy], bool] = _always  # whether the variant would differ from the policy


def _with_strategy(spec: ShareSpec, strategy: Strategy) -> ShareSpec:
    """The share under ``strategy`` alone: its borrowing and lending limits go with the old one."""
    return replace(
        spec, strategy=strategy.value, borrow_limit_percent=None, borrowing_limit=None, lending_limit=None
    )


def _static_split(spec: ShareSpec) -> ShareSpec:
    return _with_strategy(spec, Strategy.RESERVE)


def _full_pooling(spec: ShareSpec) -> ShareSpec:
    return _with_strategy(spec, Strategy.LEND_AND_BORROW)


def _preemption_off(spec: ShareSpec) -> ShareSpec:
    return replace(spec, in_share_preemption=InSharePreemption.NEVER.value, reclaim=Reclaim.NEVER.value)


def _flattened(spec: ShareSpec) -> ShareSpec:
    """Under the root, with its own quota and limits: what the tree added is gone, and the
    cohorts' own quotas are the pool's unassigned capacity."""
    return replace(spec, cohort=None)


NO_FALLBACK = {
    "when_can_borrow": WhenCan.MAY_STOP_SEARCH.value,
    "when_can_preempt": WhenCan.MAY_STOP_SEARCH.value,
    "preference": "BorrowingOverPreemption",
}


def _no_fallback(spec: ShareSpec) -> ShareSpec:
    """Kueue flavorFungibility MayStopSearch / MayStopSearch: a job stops at the first type of its
    share's order on which it fits, could borrow, or could preempt."""
    return replace(spec, flavor_fungibility=dict(NO_FALLBACK))


def has_tree(policy: Policy) -> bool:
    return policy.cohorts.exists()


def has_fallback(policy: Policy) -> bool:
    """Whether a share's jobs may fall back to another type: the policy has several types, and a
    share does not already stop at the first type it could borrow or preempt on."""
    if len(policy.pool.capacity_dict()) < 2:
        return False
    return any(spec.flavor_fungibility != NO_FALLBACK for spec in policy.share_specs())


PRESETS = {
    preset.key: preset
    for preset in (
        Preset(
            "static-split",
            "static split",
            "every share RESERVE: nothing lent, nothing borrowed",
            _static_split,
        ),
        Preset(
            "as-configured", "as configured", "an exact copy to change by hand", lambda spec: replace(spec)
        ),
        Preset(
            "full-pooling",
            "full pooling",
            "every share LEND_AND_BORROW with unlimited borrowing and lending",
            _full_pooling,
        ),
        Preset(
            "preemption-off",
            "preemption off",
            "no in-share preemption and no reclaiming of lent capacity",
            _preemption_off,
        ),
        Preset(
            "flattened",
            "flattened",
            "no cohorts: every share directly under the root with the same quotas and limits, the "
            "cohorts' own quotas unassigned",
            _flattened,
            keeps_tree=False,
            applies=has_tree,
        ),
        Preset(
            "no-fallback",
            "no fallback",
            "every share's flavorFungibility MayStopSearch / MayStopSearch: a job stops at the first "
            "type where it fits, could borrow or could preempt",
            _no_fallback,
            applies=has_fallback,
        ),
    )
}


# The variants a study of an imported policy compares it with (the "bring your own" flow): the three
# usual alternatives, then those that show what its tree and its fallback change, when it has them.
STUDY_PRESETS = ("static-split", "full-pooling", "preemption-off")
SHOWING_PRESETS = ("flattened", "no-fallback")


def study_presets(policy: Policy | None, trace: Trace | None = None) -> list[Preset]:
    """The presets a study of ``policy`` over ``trace`` compares it with (the usual three without a
    policy yet); no fallback only when a job of the trace accepts several types (else it would
    change nothing)."""
    usual = [PRESETS[key] for key in STUDY_PRESETS]
    if policy is None:
        return usual
    showing = [PRESETS[key] for key in SHOWING_PRESETS if PRESETS[key].applies(policy)]
    if trace is not None and not any(len(accepted_types(name)) > 1 for name in trace.type_names()):
        showing = [preset for preset in showing if preset.key != "no-fallback"]
    return usual + showing


def presets_for(policy: Policy) -> list[Preset]:
    """The presets whose variant would differ from ``policy`` (flattened only with a tree, no
    fallback only with several types)."""
    return [preset for preset in PRESETS.values() if preset.applies(policy)]


def free_name(base: str) -> str:
    """``base``, or ``base 2``, ``base 3``... : the first policy name not taken (at most 100 characters)."""
    base = base[:100]
    name, n = base, 1
    while Policy.objects.filter(name=name).exists():
        n += 1
        suffix = f" {n}"
        name = base[: 100 - len(suffix)] + suffix
    return name


@transaction.atomic
def make_variant(policy: Policy, preset: Preset) -> Policy:
    """A copy of ``policy`` named after the preset, its shares changed by it.

    Raises django ValidationError (from the engine's validator) when the result is not valid."""
    specs = [preset.change(spec) for spec in policy.share_specs()]
    tree = policy.cohort_specs() if preset.keeps_tree else []
    policy.validate_with(shares=specs, cohorts=tree)
    variant = policy.duplicate(
        free_name(f"{policy.name} ({preset.label})"),
        description=f"{policy.name} with {preset.explanation}.",
    )
    variant.replace_shares(specs, cohorts=tree)
    return variant
