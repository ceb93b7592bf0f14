"""Starting, keeping and deleting sweeps. A sweep's variants are made as policies (children of the
base, named after the sweep) and replayed as one Study through ``launch_study``: one Celery task per
variant, in parallel on however many workers run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.advisor.models import Sweep, SweepVariant
from planner.capacity.models import Policy
from planner.launches import Launch
from planner.studies.launch import StudyLaunch, check_policy_fits, launch_study
from planner.studies.limits import check_heavy_task_limit
from planner.traces.models import Trace
from scheduling.advisor import parse_constraints, parse_knobs, variants
from scheduling.errors import InputError

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


def _field_error(error: InputError) -> ValidationError:
    """An advisor InputError as a ValidationError on its top-level field (knobs, constraints...)."""
    field = (error.field or "knobs").split(".")[0].split("[")[0]
    return ValidationError({field: error.describe()})


def variant_policy_name(sweep: Sweep, number: int) -> str:
    return f"{sweep.name[:70]} #{sweep.pk} v{number}"


@dataclass(frozen=True, kw_only=True)
class SweepLaunch(Launch):
    """A sweep to launch: the base policy's variants over the knobs, replayed over the trace as one
    study."""

    trace: Trace
    base_policy: Policy
    name: str = ""
    knobs: Mapping[str, Any] | None = None
    mode: str = "grid"
    size: int = 50
    seed: int = 0
    constraints: Sequence[Mapping[str, Any]] | None = None
    urgent_shares: Sequence[str] = ()
    created_by: AbstractBaseUser | None = None


@transaction.atomic
def start_sweep(launch: SweepLaunch, *, enqueue: bool = True) -> Sweep:
    """Make the variants, store them as policies and launch their study (the base policy is
    its baseline). Raises ValidationError naming the field (knobs, constraints, size...)."""
    trace, base_policy = launch.trace, launch.base_policy
    # Checked before any variant is made: a refused sweep leaves nothing behind.
    check_heavy_task_limit(launch.created_by)
    try:
        check_policy_fits(base_policy.engine_policy(), trace, "base_policy")
    except ValidationError as error:
        raise ValidationError({"base_policy": error.messages}) from None
    base = base_policy.to_policy_dict()
    share_names = [share["name"] for share in base["shares"]]
    unknown = [share for share in launch.urgent_shares if share not in share_names]
    if unknown:
        raise ValidationError({"urgent_shares": f"{', '.join(unknown)}: not a share of {base_policy.name}"})
    try:
        parse_knobs(launch.knobs or {}, share_names)
        parse_constraints(list(launch.constraints or []), share_names)
        made = variants(base, launch.knobs or {}, mode=launch.mode, size=launch.size, seed=launch.seed)
    except InputError as error:
        raise _field_error(error) from None
    if not made:
        raise ValidationError({"knobs": "these knobs give no policy other than the base: try more values"})
    sweep = Sweep.objects.create(
        name=launch.name or f"{base_policy.name} on {trace.name}",
        trace=trace,
        base_policy=base_policy,
        knobs=dict(launch.knobs or {}),
        mode=launch.mode,
        size=launch.size,
        seed=launch.seed,
        constraints=list(launch.constraints or []),
        urgent_shares=list(launch.urgent_shares),
        created_by=launch.created_by,
    )
    policies = []
    for number, variant in enumerate(made, start=1):
        policy = Policy.create_from_dict(
            variant.policy, pool=base_policy.pool, name=variant_policy_name(sweep, number), parent=base_policy
        )
        policies.append(policy)
        SweepVariant.objects.create(
            sweep=sweep,
            policy=policy,
            number=number,
            label=variant.label,
            changes={
                **{share: vars(setting) for share, setting in variant.changes.items()},
                # The policy-wide knob, under a key no share can have (share names are not empty).
                **({"": {"fair_sharing": variant.fair_sharing}} if variant.fair_sharing is not None else {}),
            },
        )
    sweep.study = launch_study(
        StudyLaunch(
            name=f"Advisor: {sweep.name}",
            description=f"Sweep #{sweep.pk}: {len(made)} variants of {base_policy.name} ({launch.mode}).",
            trace=trace,
            policies=[base_policy, *policies],
            baseline=base_policy,
            created_by=launch.created_by,
        ),
        enqueue=enqueue,
    )
    sweep.save(update_fields=["study"])
    return sweep


@transaction.atomic
def keep_variant(variant: SweepVariant, name: str = "") -> Policy:
    """Save a variant as a policy of its own: renamed (when a name is given) and kept when the
    sweep is deleted. Raises ValidationError when the name is taken."""
    policy = variant.policy
    if policy is None:
        raise ValidationError({"policy": "this variant's policy was deleted"})
    name = name.strip()
    if name and name != policy.name:
        if Policy.objects.filter(name=name).exclude(pk=policy.pk).exists():
            raise ValidationError({"name": f"a policy named {name!r} exists already"})
        policy.name = name
        policy.save(update_fields=["name", "updated_at"])
    variant.kept = True
    variant.save(update_fields=["kept"])
    return policy


@transaction.atomic
def delete_sweep(sweep: Sweep) -> None:
    """Delete the sweep, its study and every variant policy not kept (nor the base of another sweep)."""
    unkept = list(
        sweep.variants.filter(kept=False, policy__isnull=False)
        .exclude(policy__sweeps__isnull=False)  # the base of another sweep stays
        .values_list("policy_id", flat=True)
    )
    study = sweep.study
    sweep.delete()
    if study is not None:
        study.delete()
    Policy.objects.filter(pk__in=unkept).delete()
