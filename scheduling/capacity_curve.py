"""Capacity curves: a trace replayed under a few policies at a series of pool sizes, and what each
replay comes to (``point_summary``: the waits of every share, utilization, rerun cost) laid out as
one line per policy against the pool's GPUs and its monthly list price (``curve_lines``).

Points of one curve are compared over one common window (SEMANTICS.md section 5): utilization is
busy GPU-hours over the pool's GPUs times the union of the replays' horizons, and costs per month
are the window's totals scaled to a month of ``HOURS_PER_MONTH``.

A training plan on a curve (``plan_row``, ``plan_effect``) is one more replay: a policy at its own
size with the plan in its calendar, placed at its average GPUs over the window and compared with
the same policy at that size without the plan: what its p95 wait bought, per $1,000 and per 1,000
GPU-hours of plan.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from scheduling.calibration import wait_text
from scheduling.capacity_plans import TrainingPlan
from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES, Policy
from scheduling.scaling import HOURS_PER_MONTH, monthly_list_price, pool_gpus

DEFAULT_FACTORS = (0.75, 0.875, 1.0, 1.125, 1.25, 1.5, 1.75, 2.0)  # 8 sizes around today's
MAX_SIZES = 40
MAX_POLICIES = 8
MAX_PLANS = 8  # training plans on one curve, each one more replay
MONTH_SECONDS = HOURS_PER_MONTH * 3600


def curve_sizes(today: int, *, factors: Sequence[float] = (), sizes: Sequence[int] = ()) -> list[int]:
    """The pool sizes of a curve, in instances of the sized type, ascending and without repeats:
    ``sizes`` as given, else ``today`` times each factor rounded half up (default
    ``DEFAULT_FACTORS``). Every size is at least 1; at most ``MAX_SIZES`` of them."""
    if sizes:
        for i, size in enumerate(sizes):
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise InputError(f"{size!r} is not a whole number of instances >= 1", field=f"sizes[{i}]")
            if size > MAX_INSTANCES:
                raise InputError(
                    f"{size:,} instances: a size is at most {MAX_INSTANCES:,}", field=f"sizes[{i}]"
                )
        chosen = set(sizes)
    else:
        chosen = set()
        for i, factor in enumerate(factors or DEFAULT_FACTORS):
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 100:
                raise InputError(f"{factor!r} is not a factor between 0 and 100", field=f"factors[{i}]")
            size = max(1, int(today * factor + 0.5))
            if size > MAX_INSTANCES:
                raise InputError(
                    f"{factor:g} x {today:,} is {size:,} instances: a size is at most {MAX_INSTANCES:,}",
                    field=f"factors[{i}]",
                )
            chosen.add(size)
    if len(chosen) > MAX_SIZES:
        raise InputError(f"{len(chosen)} sizes: a curve has at most {MAX_SIZES}", field="sizes")
    return sorted(chosen)


def point_summary(metrics: Mapping[str, Any], policy: Policy) -> dict[str, Any]:
    """What a curve or a search keeps of one replay (a few hundred bytes a share): the pool's
    size and price, jobs by outcome, busy and rerun GPU-hours, the horizon, and per share its
    jobs, unschedulable jobs, mean / p50 / p95 / max wait and rerun cost."""
    summary = metrics["summary"]
    wait = summary["wait_seconds"]
    return {
        "capacity": dict(policy.capacity),
        "gpus": pool_gpus(policy),
        "monthly_price_usd": monthly_list_price(policy),
        "jobs": summary["jobs"],
        "succeeded": summary["succeeded"],
        "failed": summary["failed"],
        "unschedulable": summary["unschedulable"],
        "utilization": summary["utilization"],
        "busy_gpu_hours": metrics["pool"]["busy_gpu_hours"],
        "rerun_gpu_hours": summary["rerun_gpu_hours"],
        "rerun_cost_usd": summary["rerun_cost_usd"],
        "preemptions": sum(summary["preemptions"].values()),
        "horizon": {"start": summary["horizon"]["start"], "end": summary["horizon"]["end"]},
        "wait": {key: wait.get(key) for key in ("mean", "p50", "p95", "max")},
        "shares": {
            share["name"]: {
                "jobs": share["jobs"],
                "unschedulable": share["unschedulable"],
                "wait": {key: share["wait_seconds"].get(key) for key in ("mean", "p50", "p95", "max")},
                "rerun_gpu_hours": share["rerun_gpu_hours"],
                "rerun_cost_usd": share["rerun_cost_usd"],
            }
            for share in metrics["shares"]
        },
    }


def worst_p95(point: Mapping[str, Any], shares: Iterable[str] = ()) -> float | None:
    """The worst p95 wait among ``shares`` (every share when none is named); None when none of
    them started a job."""
    wanted = list(shares) or list(point["shares"])
    values = [point["shares"][name]["wait"]["p95"] for name in wanted if name in point["shares"]]
    values = [value for value in values if value is not None]
    return max(values) if values else None


def common_window(points: Iterable[Mapping[str, Any]]) -> tuple[float, float]:
    """The union of the points' horizons: the window every point of a curve is measured over."""
    horizons = [point["horizon"] for point in points]
    if not horizons:
        return 0.0, 0.0
    return min(h["start"] for h in horizons), max(h["end"] for h in horizons)


def per_month(amount: float, window_seconds: float) -> float:
    """An amount over the window, as a month's worth."""
    return amount * MONTH_SECONDS / window_seconds if window_seconds > 0 else 0.0


@dataclass(frozen=True)
class CurveRow:
    """One point of a curve, measured over the curve's common window."""

    policy: str
    size: int
    gpus: float
    monthly_price_usd: float
    utilization: float
    worst_p95_seconds: float | None
    mean_wait_seconds: float | None
    share_p95_seconds: dict[str, float | None]
    rerun_gpu_hours_per_month: float
    rerun_usd_per_month: float
    unschedulable: int
    jobs: int

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def curve_rows(
    points: Sequence[tuple[str, int, Mapping[str, Any]]],
    urgent_shares: Sequence[str] = (),
    window: tuple[float, float] | None = None,
) -> list[CurveRow]:
    """``(policy name, size, point_summary)`` triples as rows, in the order given, over their
    common window (or ``window``, when a curve's plan points widen it): utilization = busy
    GPU-hours / (GPUs x window); rerun per month."""
    start, end = window or common_window(summary for _, _, summary in points)
    return [_row(policy, size, point, end - start, urgent_shares) for policy, size, point in points]


def _row(
    policy: str,
    size: int,
    point: Mapping[str, Any],
    window: float,
    urgent_shares: Sequence[str],
    *,
    gpus: float | None = None,
    monthly_price_usd: float | None = None,
) -> CurveRow:
    gpus = point["gpus"] if gpus is None else gpus
    capacity_hours = gpus * window / 3600
    return CurveRow(
        policy=policy,
        size=size,
        gpus=gpus,
        monthly_price_usd=point["monthly_price_usd"] if monthly_price_usd is None else monthly_price_usd,
        utilization=point["busy_gpu_hours"] / capacity_hours if capacity_hours > 0 else 0.0,
        worst_p95_seconds=worst_p95(point, urgent_shares),
        mean_wait_seconds=point["wait"]["mean"],
        share_p95_seconds={name: share["wait"]["p95"] for name, share in point["shares"].items()},
        rerun_gpu_hours_per_month=per_month(point["rerun_gpu_hours"], window),
        rerun_usd_per_month=per_month(point["rerun_cost_usd"], window),
        unschedulable=point["unschedulable"],
        jobs=point["jobs"],
    )


def curve_lines(rows: Sequence[CurveRow]) -> dict[str, list[CurveRow]]:
    """The rows grouped by policy (in the order policies first appear), each line by pool size."""
    lines: dict[str, list[CurveRow]] = {}
    for row in rows:
        lines.setdefault(row.policy, []).append(row)
    return {policy: sorted(line, key=lambda row: row.size) for policy, line in lines.items()}


def p95_bought_per_dollar(line: Sequence[CurveRow]) -> list[float | None]:
    """Along one policy's line: hours of worst p95 wait saved per $1,000 a month more of pool
    (from each size to the next; None where the price does not change or a p95 is missing)."""
    out: list[float | None] = []
    for before, after in zip(line, line[1:], strict=False):
        extra = after.monthly_price_usd - before.monthly_price_usd
        if extra <= 0 or before.worst_p95_seconds is None or after.worst_p95_seconds is None:
            out.append(None)
        else:
            out.append((before.worst_p95_seconds - after.worst_p95_seconds) / 3600 / (extra / 1000))
    return out


# -- training plans on a curve ---------------------------------------------------------------------


def plan_label(plan: TrainingPlan) -> str:
    """ "+8 x ml.p5.48xlarge for research, days 10-40": days from the trace's origin, or UTC dates
    for traces in Unix time (from 2001 on, as ``describe_time`` reads them)."""
    if plan.start >= 1e9:
        start, end = (datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d") for t in (plan.start, plan.end))
        when = f"{start} to {end}"
    elif plan.start % 86400 == 0 and plan.end % 86400 == 0:
        when = f"days {plan.start / 86400:g}-{plan.end / 86400:g}"
    else:
        when = f"hours {plan.start / 3600:,g}-{plan.end / 3600:,g}"
    return f"+{plan.instances} x {plan.instance_type} for {plan.share}, {when}"


def plan_hours(plan: TrainingPlan, window: tuple[float, float]) -> float:
    """Hours of the plan inside the curve's window (a plan outside it costs nothing there)."""
    start, end = window
    return max(0.0, min(plan.end, end) - max(plan.start, start)) / 3600


@dataclass(frozen=True)
class PlanRow:
    """A training plan replayed on a curve: ``row`` is the plan's replay placed at its average
    GPUs over the window (today's GPUs + plan GPU-hours / window hours) and today's price a month
    plus the plan's cost as a month's worth; ``base`` is the same policy at the same size without
    the plan. ``cost_usd`` = instances x the type's hourly price x the plan's hours in the window."""

    label: str
    plan: TrainingPlan
    hours: float
    gpu_hours: float
    cost_usd: float
    row: CurveRow
    base: CurveRow

    def as_dict(self) -> dict[str, Any]:
        return {
            "label": self.label,
            "plan": dict(vars(self.plan)),
            "hours": self.hours,
            "gpu_hours": self.gpu_hours,
            "cost_usd": self.cost_usd,
            "row": self.row.as_dict(),
            "base": self.base.as_dict(),
            "effect": plan_effect(self).as_dict(),
            "share_effect": plan_effect(self, self.plan.share).as_dict(),
        }


def plan_row(
    plan: TrainingPlan,
    policy: Policy,
    point: Mapping[str, Any],
    base: CurveRow,
    window: tuple[float, float],
    urgent_shares: Sequence[str] = (),
) -> PlanRow:
    """The plan's replay (``point``, a ``point_summary`` of ``policy`` with the plan added) over the
    curve's ``window``, against ``base`` (a row of the same window)."""
    instance_type = policy.instance_types[plan.instance_type]
    hours = plan_hours(plan, window)
    window_seconds = window[1] - window[0]
    gpu_hours = plan.instances * instance_type.gpus * hours
    cost = plan.instances * instance_type.hourly_price * hours
    gpus = point["gpus"] + (gpu_hours * 3600 / window_seconds if window_seconds > 0 else 0.0)
    row = _row(
        base.policy,
        base.size,
        point,
        window_seconds,
        urgent_shares,
        gpus=gpus,
        monthly_price_usd=point["monthly_price_usd"] + per_month(cost, window_seconds),
    )
    return PlanRow(plan_label(plan), plan, hours, gpu_hours, cost, row, base)


@dataclass(frozen=True)
class PlanEffect:
    """What a plan does to one wait metric: ``before`` (without it) and ``after`` in seconds, hours
    of it saved (negative: the plan made it worse), per $1,000 and per 1,000 GPU-hours of plan
    (None when a p95 is missing or the plan has no hours in the window)."""

    metric: str
    before_seconds: float | None
    after_seconds: float | None
    saved_hours: float | None
    hours_per_1000_usd: float | None
    hours_per_1000_gpu_hours: float | None

    def as_dict(self) -> dict[str, Any]:
        return dict(vars(self))


def plan_effect(plan: PlanRow, share: str = "") -> PlanEffect:
    """The change in ``share``'s p95 wait, or the curve's worst p95 (of its urgent shares) when no
    share is named."""
    if share:
        before, after = plan.base.share_p95_seconds.get(share), plan.row.share_p95_seconds.get(share)
        metric = f"{share}'s p95 wait"
    else:
        before, after = plan.base.worst_p95_seconds, plan.row.worst_p95_seconds
        metric = "the worst p95 wait"
    saved = None if before is None or after is None else (before - after) / 3600
    return PlanEffect(
        metric=metric,
        before_seconds=before,
        after_seconds=after,
        saved_hours=saved,
        hours_per_1000_usd=saved / (plan.cost_usd / 1000)
        if saved is not None and plan.cost_usd > 0
        else None,
        hours_per_1000_gpu_hours=(
            saved / (plan.gpu_hours / 1000) if saved is not None and plan.gpu_hours > 0 else None
        ),
    )


def plan_sentence(plan: PlanRow, effect: PlanEffect, *, money: bool) -> str:
    """ "The plan cuts research's p95 wait from 33.1 h to 12.0 h for $X (Y h of p95 per $1,000)":
    the cost in $ when ``money`` (finance and admin), else in GPU-hours (and per 1,000 of them)."""
    if effect.before_seconds is None or effect.after_seconds is None:
        return f"The plan's effect on {effect.metric} is unknown: a replay started none of its jobs."
    before, after = wait_text(effect.before_seconds), wait_text(effect.after_seconds)
    if effect.after_seconds < effect.before_seconds:
        verb = f"cuts {effect.metric} from {before} to {after}"
    elif effect.after_seconds > effect.before_seconds:
        verb = f"lengthens {effect.metric} from {before} to {after}"
    else:
        verb = f"leaves {effect.metric} at {before}"
    if money:
        rate, unit, cost = effect.hours_per_1000_usd, "$1,000", f"${plan.cost_usd:,.0f}"
    else:
        rate, unit, cost = (
            effect.hours_per_1000_gpu_hours,
            "1,000 GPU-hours",
            f"{plan.gpu_hours:,.0f} GPU-hours",
        )
    bought = f" ({rate:,.2f} h of p95 per {unit})" if rate is not None and rate != 0 else ""
    return f"The plan {verb} for {cost}{bought}."
