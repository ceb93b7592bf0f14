"""Starting curves and worth searches, moving a search on, and recovering points whose worker died.

Every point is one Celery task, sent once the transaction that made it commits. A search moves on
in ``advance_search`` (under a row lock, idempotent): when every replay of its step is in, it
judges them and plans the next step or concludes. It runs after each of its points' tasks, and
again whenever the search is read, so a worker that died between recording a point and moving the
search on delays it, never stalls it. Moving a search on is ``planner.curves.search`` (judging) and
``planner.curves.tasks`` (sending).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from django.core.exceptions import ValidationError
from django.db import transaction

from planner.capacity.models import Policy
from planner.curves.models import CapacityCurve, CurvePoint, PointRole, SearchPoint, WorthSearch
from planner.curves.search import new_candidates
from planner.curves.sizing import point_fields, scaled_policy
from planner.curves.tasks import advance_search, enqueue_curve_points, enqueue_search_points
from planner.launches import Launch
from planner.studies.attempts import reap_stale
from planner.studies.limits import check_heavy_task_limit
from planner.studies.models import RunStatus
from planner.traces.models import Trace
from planner.validators import LONG_NAME_LENGTH
from scheduling.capacity_curve import MAX_PLANS, MAX_POLICIES, curve_sizes, plan_label
from scheduling.capacity_plans import TrainingPlan, add_training_plan
from scheduling.errors import InputError
from scheduling.model import check_name, parse_policy
from scheduling.scaling import SizeMode, capacity_at, pool_gpus, scale_policy, sized_type
from scheduling.worth import SearchRange, next_sizes, parse_metric

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser


def _snapshot(policy: Policy, field: str) -> dict:
    try:
        return policy.engine_policy().to_dict()
    except ValidationError as error:
        raise ValidationError({field: f"{policy.name}: {' '.join(error.messages)}"}) from None


def _check_trace_shares(trace: Trace, snapshot: dict, policy_name: str, field: str) -> None:
    """The trace's shares must all be in the policy (a replay would refuse it on a worker)."""
    names = {share["name"] for share in snapshot["shares"]}
    missing = [s["name"] for s in (trace.summary or {}).get("shares", []) if s["name"] not in names]
    if missing:
        shown = ", ".join(missing[:5]) + (" ..." if len(missing) > 5 else "")
        raise ValidationError({field: f"{policy_name} has no share for the trace's {shown}"})


def _sizing(snapshot: dict, mode: str, instance_type: str, field: str) -> tuple[SizeMode, str]:
    try:
        size_mode = SizeMode(mode)
    except ValueError:
        raise ValidationError({"mode": f"{mode!r} is not one of proportional, one_type"}) from None
    name = instance_type or sized_type(snapshot)
    if not snapshot["capacity"].get(name):
        raise ValidationError({"instance_type": f"{snapshot['name']} has no capacity of {name!r} to scale"})
    return size_mode, name


def _checked_name(name: str) -> str:
    """A curve's or search's own name, held to the one rule for names (``check_name``: one line of
    printable text): "" (the default name, made from names already checked) passes."""
    if not name:
        return name
    try:
        return check_name(name, "name", LONG_NAME_LENGTH)
    except InputError as error:
        raise ValidationError({"name": error.reason}) from None


def _urgent(urgent_shares: Sequence[str], snapshots: Sequence[dict]) -> list[str]:
    known = {share["name"] for snapshot in snapshots for share in snapshot["shares"]}
    unknown = [name for name in urgent_shares if name not in known]
    if unknown:
        raise ValidationError({"urgent_shares": f"{', '.join(unknown)}: not a share of these policies"})
    return list(dict.fromkeys(urgent_shares))


PLAN_FIELDS = ("policy", "instance_type", "instances", "share", "start", "end")


def _planned(
    plans: Sequence[tuple[Policy | None, TrainingPlan]],
    policies: Sequence[Policy],
    snapshots: Sequence[dict],
    size_mode: SizeMode,
    type_name: str,
) -> list[tuple[int, TrainingPlan, int, dict, dict]]:
    """Per plan: (line, plan, the line's own size, its capacity, the policy at that size with the
    plan in its calendar). Errors name the plan and its field: ``plans[1].share: ...``."""
    if len(plans) > MAX_PLANS:
        raise ValidationError({"plans": f"{len(plans)} plans: a curve replays at most {MAX_PLANS}"})
    out = []
    for i, (policy, plan) in enumerate(plans):
        where = f"plans[{i}]"
        line = 0 if policy is None else next((n for n, p in enumerate(policies) if p.pk == policy.pk), None)
        if line is None:
            raise ValidationError(
                {"plans": f"{where}.policy: {policy.name} is not one of the curve's policies"}
            )
        snapshot = snapshots[line]
        if not snapshot["capacity"].get(type_name):
            raise ValidationError(
                {"policies": f"{policies[line].name} has no capacity of {type_name!r} to scale"}
            )
        size = int(snapshot["capacity"][type_name])
        try:
            capacity = capacity_at(snapshot, size, mode=size_mode, instance_type=type_name)
            today = parse_policy(scale_policy(snapshot, capacity))
            planned = add_training_plan(today, plan).to_dict()
        except InputError as error:
            field = error.field if error.field in PLAN_FIELDS else ""
            reason = error.reason if field else error.describe()
            name = policies[line].name
            raise ValidationError(
                {"plans": f"{where}{'.' + field if field else ''}: {reason} ({name})"}
            ) from None
        out.append((line, plan, size, capacity, planned))
    return out


@dataclass(frozen=True, kw_only=True)
class CurveLaunch(Launch):
    """A capacity curve to launch: the policies, replayed over the trace at each size (and with
    each training plan)."""

    trace: Trace
    policies: Sequence[Policy]
    name: str = ""
    mode: str = SizeMode.PROPORTIONAL.value
    instance_type: str = ""
    factors: Sequence[float] = ()
    sizes: Sequence[int] = ()
    urgent_shares: Sequence[str] = ()
    plans: Sequence[tuple[Policy | None, TrainingPlan]] = ()
    created_by: AbstractBaseUser | None = None


@transaction.atomic
def start_curve(launch: CurveLaunch, *, enqueue: bool = True) -> CapacityCurve:
    """One point per policy and size, each enqueued. Sizes count instances of the sized type (the
    first policy's type with the most GPUs, unless ``instance_type`` names one), ``factors`` of the
    first policy's size by default. Each of ``plans`` (a training plan on one of ``policies``, the
    first when None) is one more point: that policy at its own size with the plan added; its own
    size joins the curve's sizes, so the plan is compared with the policy without it. Raises
    ValidationError naming the field."""
    trace, policies = launch.trace, launch.policies
    name = _checked_name(launch.name)
    check_heavy_task_limit(launch.created_by)
    if not policies:
        raise ValidationError({"policies": "choose at least one policy"})
    if len({p.pk for p in policies}) != len(policies):
        raise ValidationError({"policies": "a policy appears twice"})
    if len(policies) > MAX_POLICIES:
        raise ValidationError({"policies": f"{len(policies)} policies: a curve draws at most {MAX_POLICIES}"})
    snapshots = [_snapshot(policy, "policies") for policy in policies]
    for policy, snapshot in zip(policies, snapshots, strict=True):
        _check_trace_shares(trace, snapshot, policy.name, "policies")
    size_mode, type_name = _sizing(snapshots[0], launch.mode, launch.instance_type, "instance_type")
    try:
        chosen = curve_sizes(snapshots[0]["capacity"][type_name], factors=launch.factors, sizes=launch.sizes)
    except InputError as error:
        raise ValidationError({(error.field or "sizes").split("[")[0]: error.describe()}) from None
    planned = _planned(launch.plans, policies, snapshots, size_mode, type_name)
    chosen = sorted({*chosen, *(size for _, _, size, _, _ in planned)})
    rows = []
    for line, (policy, snapshot) in enumerate(zip(policies, snapshots, strict=True)):
        if not snapshot["capacity"].get(type_name):
            raise ValidationError({"policies": f"{policy.name} has no capacity of {type_name!r} to scale"})
        for size in chosen:
            capacity, scaled = scaled_policy(snapshot, size, size_mode, type_name, "sizes")
            rows.append((line, policy, size, capacity, scaled))
    curve = CapacityCurve.objects.create(
        name=name or f"{trace.name}: {', '.join(p.name for p in policies)}"[:200],
        trace=trace,
        mode=size_mode.value,
        instance_type=type_name,
        sizes=chosen,
        today=int(snapshots[0]["capacity"][type_name]),
        lines=[{"policy": policy.pk, "name": policy.name} for policy in policies],
        urgent_shares=_urgent(launch.urgent_shares, snapshots),
        plans=[
            {"line": line, "policy": policies[line].pk, **vars(plan), "label": plan_label(plan)}
            for line, plan, _, _, _ in planned
        ],
        created_by=launch.created_by,
    )
    rows += [
        (line, policies[line], size, capacity, policy, i)
        for i, (line, _, size, capacity, policy) in enumerate(planned)
    ]
    points = CurvePoint.objects.bulk_create(
        CurvePoint(
            curve=curve,
            policy=policy,
            policy_name=policy.name,
            line=line,
            plan=plan[0] if plan else None,
            **point_fields(size, capacity, scaled),
        )
        for line, policy, size, capacity, scaled, *plan in rows
    )
    if enqueue:
        enqueue_curve_points((point.pk for point in points), what=f"The curve {curve.name}")
    return curve


@dataclass(frozen=True, kw_only=True)
class SearchLaunch(Launch):
    """A worth search to launch: the size at which policy A matches policy B at today's size, by
    a metric."""

    trace: Trace
    policy_a: Policy
    policy_b: Policy
    name: str = ""
    metric: str = "share_p95"
    urgent_shares: Sequence[str] = ()
    tolerance_seconds: float = 60.0
    tolerance_percent: float = 2.0
    mode: str = SizeMode.PROPORTIONAL.value
    instance_type: str = ""
    upper: int = 0
    parallel: int = 3
    created_by: AbstractBaseUser | None = None


@transaction.atomic
def start_search(launch: SearchLaunch, *, enqueue: bool = True) -> WorthSearch:
    """The first step: B at today's size (B's own pool) and A at today's size and the first rungs
    up. Raises ValidationError naming the field."""
    trace, policy_a, policy_b = launch.trace, launch.policy_a, launch.policy_b
    name = _checked_name(launch.name)
    check_heavy_task_limit(launch.created_by)
    if policy_a.pk == policy_b.pk:
        raise ValidationError({"policy_b": "compare two different policies"})
    snapshot_a, snapshot_b = _snapshot(policy_a, "policy_a"), _snapshot(policy_b, "policy_b")
    _check_trace_shares(trace, snapshot_a, policy_a.name, "policy_a")
    _check_trace_shares(trace, snapshot_b, policy_b.name, "policy_b")
    size_mode, type_name = _sizing(snapshot_b, launch.mode, launch.instance_type, "instance_type")
    if not snapshot_a["capacity"].get(type_name):
        raise ValidationError({"policy_a": f"{policy_a.name} has no capacity of {type_name!r} to scale"})
    try:
        chosen_metric = parse_metric(launch.metric)
    except InputError as error:
        raise ValidationError({"metric": error.describe()}) from None
    if launch.tolerance_seconds < 0 or launch.tolerance_percent < 0:
        raise ValidationError({"tolerance_seconds": "tolerances cannot be negative"})
    today = int(snapshot_b["capacity"][type_name])
    try:
        search_range = SearchRange(today=today, upper=launch.upper, parallel=launch.parallel)
    except InputError as error:
        raise ValidationError({error.field or "upper": error.describe()}) from None
    search = WorthSearch.objects.create(
        name=name or f"{policy_a.name} against {policy_b.name} on {trace.name}"[:200],
        trace=trace,
        policy_a=policy_a,
        policy_a_name=policy_a.name,
        policy_a_snapshot=snapshot_a,
        policy_b=policy_b,
        policy_b_name=policy_b.name,
        policy_b_snapshot=snapshot_b,
        metric=chosen_metric.value,
        urgent_shares=_urgent(launch.urgent_shares, [snapshot_a, snapshot_b]),
        tolerance_seconds=launch.tolerance_seconds,
        tolerance_percent=launch.tolerance_percent,
        mode=size_mode.value,
        instance_type=type_name,
        today=today,
        upper=search_range.top,
        parallel=launch.parallel,
        status=RunStatus.RUNNING,
        steps=1,
        created_by=launch.created_by,
    )
    target = SearchPoint.objects.create(
        search=search,
        role=PointRole.TARGET,
        step=1,
        size=today,
        capacity=dict(snapshot_b["capacity"]),
        gpus=pool_gpus(parse_policy(snapshot_b)),
        policy_snapshot=snapshot_b,
    )
    candidates = new_candidates(search, next_sizes(search_range, {}), step=1)
    if enqueue:
        enqueue_search_points(
            [target.pk, *(point.pk for point in candidates)], what=f"The worth search {search.name}"
        )
    return search


def reap_curves(points=None, now=None) -> dict[str, list[int]]:
    """Re-enqueue, or fail after the last attempt, curve points whose heartbeat is stale."""
    rows = points if points is not None else CurvePoint.objects.all()
    return reap_stale(rows, enqueue_curve_points, now)


def reap_searches(searches=None, now=None) -> dict[str, list[int]]:
    """The same for search points, then move on every unfinished search among ``searches``."""
    searches = (
        searches if searches is not None else WorthSearch.objects.exclude(status__in=["succeeded", "failed"])
    )
    outcome = reap_stale(SearchPoint.objects.filter(search__in=searches), enqueue_search_points, now)
    for search_id in list(searches.values_list("pk", flat=True)):
        advance_search(search_id)
    return outcome


def queued_points() -> tuple[list[int], list[int]]:
    """The queued curve and search points (sent again by ``reap_runs --queued``)."""
    return (
        list(CurvePoint.objects.filter(status=RunStatus.QUEUED).values_list("pk", flat=True)),
        list(SearchPoint.objects.filter(status=RunStatus.QUEUED).values_list("pk", flat=True)),
    )
