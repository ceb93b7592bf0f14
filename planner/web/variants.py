"""Policy variants made in one click: a copy of a policy with every share changed the same way
(static split, full pooling, preemption off), validated by the engine before it is stored."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from django.db import transaction

from planner.capacity.models import Policy, ShareSpec
from scheduling.model import InSharePreemption, Reclaim, Strategy


@dataclass(frozen=True)
class Preset:
    key: str
    label: str
    explanation: str
    change: Callable[[ShareSpec], ShareSpec]


def _static_split(spec: ShareSpec) -> ShareSpec:
    return replace(
        spec,
        strategy=Strategy.RESERVE.value,
        borrow_limit_percent=None,
        borrowing_limit=None,
        lending_limit=None,
    )


def _full_pooling(spec: ShareSpec) -> ShareSpec:
    return replace(
        spec,
        strategy=Strategy.LEND_AND_BORROW.value,
        borrow_limit_percent=None,
        borrowing_limit=None,
        lending_limit=None,
    )


def _preemption_off(spec: ShareSpec) -> ShareSpec:
    return replace(spec, in_share_preemption=InSharePreemption.NEVER.value, reclaim=Reclaim.NEVER.value)


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
    )
}


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
    policy.validate_with(shares=specs)
    variant = policy.duplicate(
        free_name(f"{policy.name} ({preset.label})"),
        description=f"{policy.name} with {preset.explanation}.",
    )
    variant.replace_shares(specs)
    return variant
