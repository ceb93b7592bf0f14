"""One window for runs that are compared (SEMANTICS.md section 5): a run's stored metrics
measured again over a wider (or narrower) window that still contains the run's span.

Outside its span (first submit to last end) a run has nothing running and nothing waiting, so
every account there is idle quota (and idle unassigned capacity): re-measuring only adds or
removes that idle time, exactly, from the totals and the daily periods, and re-buckets the
usage series onto the window (areas kept). Waits, JCTs, CDFs, preemptions and rerun costs do
not depend on the window. No trace, no outcomes, no replay: the metrics dict and the policy.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from scheduling.model import Policy

DAY = 86400.0
Window = tuple[float, float]


def span_of(metrics: Mapping[str, Any]) -> Window:
    """The run's own span; metrics stored before windows existed were measured over it."""
    summary = metrics["summary"]
    block = summary.get("span") or summary["horizon"]
    return float(block["start"]), float(block["end"])


def measured_over(metrics: Mapping[str, Any]) -> Window:
    """The interval the metrics are measured over now."""
    block = metrics["summary"]["horizon"]
    return float(block["start"]), float(block["end"])


def common_window(spans: Iterable[Window]) -> Window | None:
    """The union of the runs' spans (None without runs): the hours every policy is counted over."""
    spans = list(spans)
    if not spans:
        return None
    return min(s for s, _ in spans), max(e for _, e in spans)


def measure_over(metrics: Mapping[str, Any], policy: Policy, window: Window) -> dict[str, Any]:
    """``metrics`` (of a replay under ``policy``) measured over ``window`` instead of the interval
    they are measured over now. Raises ValueError if the window cuts into the run's span."""
    span = span_of(metrics)
    old = measured_over(metrics)
    start, end = float(window[0]), float(window[1])
    if not (start <= span[0] and end >= span[1]):
        raise ValueError(
            f"the window {start:g} to {end:g} does not contain the run's span {span[0]:g} to {span[1]:g}"
        )
    out = copy.deepcopy(dict(metrics))
    if (start, end) == old:
        return out
    rates = _IdleRates(policy, [s["name"] for s in out["shares"]])
    extra = (end - start) - (old[1] - old[0])  # seconds of idle added (removed if negative)
    _summary(out, old, (start, end), span, rates)
    _shares(out, rates, extra)
    _pool(out, rates, extra)
    if out.get("series"):
        out["series"] = _series(out["series"], old, (start, end))
    if out.get("periods"):
        out["periods"] = _periods(out["periods"], rates, old, (start, end))
    return out


class _IdleRates:
    """Per share and for the pool, what an idle second is worth: instances per type, GPUs and $."""

    def __init__(self, policy: Policy, share_names: list[str]):
        self.types = list(policy.instance_types)
        gpus = {t: float(policy.instance_types[t].gpus) for t in self.types}
        price = {t: float(policy.instance_types[t].hourly_price) for t in self.types}
        by_name = {share.name: share for share in policy.shares}
        self.quota = {
            name: {t: float(by_name[name].quota(t)) if name in by_name else 0.0 for t in self.types}
            for name in share_names
        }
        self.share_gpus = {name: sum(q[t] * gpus[t] for t in self.types) for name, q in self.quota.items()}
        self.share_usd = {name: sum(q[t] * price[t] for t in self.types) for name, q in self.quota.items()}
        capacity = {t: float(policy.capacity.get(t, 0)) for t in self.types}
        self.pool_gpus = sum(capacity[t] * gpus[t] for t in self.types)
        self.pool_usd = sum(capacity[t] * price[t] for t in self.types)
        unassigned = {t: float(policy.unassigned(t)) for t in self.types}
        self.unassigned_gpus = sum(unassigned[t] * gpus[t] for t in self.types)
        self.unassigned_usd = sum(unassigned[t] * price[t] for t in self.types)


def _summary(out: dict, old: Window, new: Window, span: Window, rates: _IdleRates) -> None:
    scale = _ratio(old[1] - old[0], new[1] - new[0])  # busy is the same, capacity grows
    summary = out["summary"]
    for key in ("utilization", "useful_utilization"):
        summary[key] = summary.get(key, 0.0) * scale
    summary["horizon"] = {"start": new[0], "end": new[1], "seconds": new[1] - new[0]}
    summary["span"] = {"start": span[0], "end": span[1], "seconds": span[1] - span[0]}
    for row in out.get("types", {}).values():
        for key in ("utilization", "useful_utilization"):
            row[key] = row.get(key, 0.0) * scale


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else 0.0


def _shares(out: dict, rates: _IdleRates, extra: float) -> None:
    for share in out["shares"]:
        name = share["name"]
        for type_name, row in share.get("by_type", {}).items():
            added = rates.quota[name].get(type_name, 0.0) * extra
            row["capacity"] += added
            row["idle"] += added
        instance_seconds = sum(rates.quota[name].values()) * extra
        for key in ("capacity", "idle"):
            share[f"{key}_gpu_hours"] += rates.share_gpus[name] * extra / 3600
            share[f"{key}_usd"] += rates.share_usd[name] * extra / 3600
            share[f"{key}_instance_seconds"] += instance_seconds


def _pool(out: dict, rates: _IdleRates, extra: float) -> None:
    pool = out.get("pool")
    if not pool:
        return
    for key in ("capacity", "idle"):
        pool[f"{key}_gpu_hours"] += rates.pool_gpus * extra / 3600
        pool[f"{key}_usd"] += rates.pool_usd * extra / 3600
    pool["unassigned_idle_gpu_hours"] = pool.get("unassigned_idle_gpu_hours", 0.0) + (
        rates.unassigned_gpus * extra / 3600
    )


def _series(series: dict, old: Window, new: Window) -> dict:
    """The usage series re-bucketed onto as many buckets over the new window: each bucket's
    average is its area over its width, the area outside the old interval being idle quota
    (for idle) or nothing (own, borrowed, lent, stranded)."""
    n = len(series.get("t", []))
    if n == 0:
        return series
    old_width = float(series["width"])
    old_edges = old[0] + old_width * np.arange(n + 1)
    width = (new[1] - new[0]) / n if new[1] > new[0] else old_width
    edges = new[0] + width * np.arange(n + 1)
    shares = {}
    for name, row in series["shares"].items():
        out_row = dict(row)
        for key, values in row.items():
            if isinstance(values, list):
                outside = float(row.get("quota", 0.0)) if key == "idle" else 0.0
                out_row[key] = _rebucket(values, old_edges, edges, outside)
        shares[name] = out_row
    unassigned_gpus = float(series.get("pool_capacity", 0.0)) - sum(
        float(row.get("quota", 0.0)) for row in series["shares"].values()
    )
    unassigned = {
        key: _rebucket(values, old_edges, edges, max(0.0, unassigned_gpus) if key == "idle" else 0.0)
        for key, values in series.get("unassigned", {}).items()
    }
    return {**series, "t": edges[:-1].tolist(), "width": width, "shares": shares, "unassigned": unassigned}


def _rebucket(values: list, old_edges: np.ndarray, edges: np.ndarray, outside: float) -> list:
    """Bucket averages of a step function (``values`` on ``old_edges``, ``outside`` beyond them)
    on other edges, by interpolating its cumulative area."""
    v = np.asarray(values, dtype=float)
    lo, hi = min(edges[0], old_edges[0]), max(edges[-1], old_edges[-1])
    knots = np.concatenate(([lo], old_edges, [hi]))
    rates = np.concatenate(([outside], v, [outside]))
    area = np.concatenate(([0.0], np.cumsum(rates * np.diff(knots))))
    at = np.interp(edges, knots, area)
    widths = np.diff(edges)
    averages = np.divide(np.diff(at), widths, out=np.zeros(len(widths)), where=widths > 0)
    return averages.round(4).tolist()


def _overlap(day: np.ndarray, window: Window) -> np.ndarray:
    """Seconds of each day [d, d + DAY) inside the window."""
    return np.clip(np.minimum(day + DAY, window[1]) - np.maximum(day, window[0]), 0.0, None)


def _periods(periods: dict, rates: _IdleRates, old: Window, new: Window) -> dict:
    """The daily accounts on the new window's days: days it adds carry only idle quota, and each
    day's capacity and idle grow (or shrink) by the seconds of it the new window adds."""
    old_days = np.asarray(periods["day"], dtype=float)
    if len(old_days) == 0:
        return periods
    day0 = math.floor(new[0] / DAY) * DAY
    n_days = max(1, math.ceil((new[1] - day0) / DAY))
    days = day0 + DAY * np.arange(n_days)
    extra = (_overlap(days, new) - _overlap(days, old)) / 3600  # hours added to each day
    index = np.round((days - old_days[0]) / DAY).astype(int)
    known = (index >= 0) & (index < len(old_days))

    def carried(values: list, added_per_hour: float = 0.0) -> list:
        """The old daily values on the new days (0 on days the old window did not have), plus
        ``added_per_hour`` for each hour the new window adds to that day."""
        old_values = np.asarray(values, dtype=float)
        result = np.zeros(n_days)
        result[known] = old_values[index[known]]
        return (result + added_per_hour * extra).round(6).tolist()

    shares = {}
    for name, row in periods["shares"].items():
        gpus, usd = rates.share_gpus.get(name, 0.0), rates.share_usd.get(name, 0.0)
        new_row: dict[str, Any] = {}
        for key, values in row.items():
            if key != "usd":
                new_row[key] = carried(values, gpus if key in ("capacity", "idle") else 0.0)
        new_row["usd"] = {
            key: carried(values, usd if key in ("capacity", "idle") else 0.0)
            for key, values in row.get("usd", {}).items()
        }
        shares[name] = new_row
    out = {**periods, "day": days.tolist(), "shares": shares}
    if "unassigned" in periods:
        unassigned = periods["unassigned"]
        out["unassigned"] = {
            key: carried(values, rates.unassigned_gpus if key in ("capacity", "idle") else 0.0)
            for key, values in unassigned.items()
            if key != "usd"
        }
        out["unassigned"]["usd"] = {
            key: carried(values, rates.unassigned_usd if key in ("capacity", "idle") else 0.0)
            for key, values in unassigned.get("usd", {}).items()
        }
    if "pool" in periods:
        pool = periods["pool"]
        out["pool"] = {key: carried(values, rates.pool_gpus) for key, values in pool.items() if key != "usd"}
        out["pool"]["usd"] = {
            key: carried(values, rates.pool_usd) for key, values in pool.get("usd", {}).items()
        }
    return out
