"""Capacity curves: a trace replayed under a few policies at a series of pool sizes, and what each
replay comes to (``point_summary``: the waits of every share, utilization, rerun cost) laid out as
one line per policy against the pool's GPUs and its monthly list price (``curve_lines``).

Points of one curve are compared over one common window (SEMANTICS.md section 5): utilization is
busy GPU-hours over the pool's GPUs times the union of the replays' horizons, and costs per month
are the window's totals scaled to a month of ``HOURS_PER_MONTH``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.scaling import HOURS_PER_MONTH, monthly_list_price, pool_gpus

DEFAULT_FACTORS = (0.75, 0.875, 1.0, 1.125, 1.25, 1.5, 1.75, 2.0)  # 8 sizes around today's
MAX_SIZES = 40
MAX_POLICIES = 8
MONTH_SECONDS = HOURS_PER_MONTH * 3600


def curve_sizes(today: int, *, factors: Sequence[float] = (), sizes: Sequence[int] = ()) -> list[int]:
    """The pool sizes of a curve, in instances of the sized type, ascending and without repeats:
    ``sizes`` as given, else ``today`` times each factor rounded half up (default
    ``DEFAULT_FACTORS``). Every size is at least 1; at most ``MAX_SIZES`` of them."""
    if sizes:
        for i, size in enumerate(sizes):
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                raise InputError(f"{size!r} is not a whole number of instances >= 1", field=f"sizes[{i}]")
        chosen = set(sizes)
    else:
        chosen = set()
        for i, factor in enumerate(factors or DEFAULT_FACTORS):
            if isinstance(factor, bool) or not isinstance(factor, (int, float)) or not 0 < factor <= 100:
                raise InputError(f"{factor!r} is not a factor between 0 and 100", field=f"factors[{i}]")
            chosen.add(max(1, int(today * factor + 0.5)))
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
    points: Sequence[tuple[str, int, Mapping[str, Any]]], urgent_shares: Sequence[str] = ()
) -> list[CurveRow]:
    """``(policy name, size, point_summary)`` triples as rows, in the order given, over their
    common window: utilization = busy GPU-hours / (GPUs x window); rerun per month."""
    start, end = common_window(summary for _, _, summary in points)
    window = end - start
    rows = []
    for policy, size, point in points:
        capacity_hours = point["gpus"] * window / 3600
        rows.append(
            CurveRow(
                policy=policy,
                size=size,
                gpus=point["gpus"],
                monthly_price_usd=point["monthly_price_usd"],
                utilization=point["busy_gpu_hours"] / capacity_hours if capacity_hours > 0 else 0.0,
                worst_p95_seconds=worst_p95(point, urgent_shares),
                mean_wait_seconds=point["wait"]["mean"],
                share_p95_seconds={name: share["wait"]["p95"] for name, share in point["shares"].items()},
                rerun_gpu_hours_per_month=per_month(point["rerun_gpu_hours"], window),
                rerun_usd_per_month=per_month(point["rerun_cost_usd"], window),
                unschedulable=point["unschedulable"],
                jobs=point["jobs"],
            )
        )
    return rows


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
