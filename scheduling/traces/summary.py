"""What a trace holds, before any replay: jobs and GPU-hours per share, arrivals and GPU demand
over time, and histograms of sizes, durations and priorities. JSON-able and bounded in size
(it does not grow with the number of jobs), for the trace page and stored on upload.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from scheduling.trace import NO_TYPE, Trace, accepted_types

MAX_BUCKETS = 2000
MAX_DISTINCT_VALUES = 64  # more distinct sizes or priorities than this are binned
DURATION_BINS_PER_DECADE = 4


def summarize(trace: Trace, *, buckets: int = 200, gpus_per_type: Mapping[str, float] | None = None) -> dict:
    """The summary of a trace. ``gpus_per_type`` gives GPUs per instance of each type
    (default 1; jobs without a type use the only type given, else 1).

    ``span`` runs from the first to the last submission and is cut into ``buckets`` equal
    buckets. Per share and bucket: ``arrivals`` counts submissions; ``demand`` has the GPUs
    requested by the jobs submitted in it (``gpus_requested``) and the GPU-seconds that would
    run in it if every job started when submitted (``gpu_seconds``, cut at the span's end;
    divide by ``width`` for average GPUs)."""
    buckets = max(1, min(int(buckets), MAX_BUCKETS))
    gpus = job_gpus(trace, gpus_per_type)
    gpu_seconds = gpus * trace.duration
    submit = trace.submit_time
    start = float(submit.min()) if len(trace) else 0.0
    end = float(submit.max()) if len(trace) else 0.0
    width = max(end - start, 1.0) / buckets
    edges = start + width * np.arange(buckets + 1)
    slot = np.minimum(((submit - start) / width).astype(np.int64), buckets - 1)

    shares = []
    arrivals: dict[str, list[int]] = {}
    demand: dict[str, dict[str, list[float]]] = {}
    for code, share_name in enumerate(trace.share_names):
        mine = trace.share == code
        durations = trace.duration[mine]
        shares.append(
            {
                "name": share_name,
                "jobs": int(mine.sum()),
                "gpu_hours": float(gpu_seconds[mine].sum()) / 3600,
                "duration_seconds": _stats(durations),
            }
        )
        arrivals[share_name] = np.bincount(slot[mine], minlength=buckets).tolist()
        demand[share_name] = {
            "gpus_requested": np.bincount(slot[mine], weights=gpus[mine], minlength=buckets).tolist(),
            "gpu_seconds": _busy_per_bucket(submit[mine], trace.duration[mine], gpus[mine], edges).tolist(),
        }

    return {
        "jobs": len(trace),
        "gpu_hours": float(gpu_seconds.sum()) / 3600,
        "span": {"start": start, "end": end, "seconds": end - start, "epoch_times": bool(trace.epoch_times)},
        "shares": shares,
        "instance_types": _type_counts(trace),
        "users": len(set(trace.user) - {""}) if trace.user is not None else None,
        "checkpointing_jobs": int(np.count_nonzero(~np.isnan(trace.checkpoint_interval))),
        "limited_retry_jobs": int(np.count_nonzero(trace.preemption_retries >= 0)),
        "recorded_starts": (
            int(np.count_nonzero(~np.isnan(trace.recorded_start))) if trace.recorded_start is not None else 0
        ),
        "recorded_preemptions": (
            int(trace.recorded_preemptions[trace.recorded_preemptions >= 0].sum())
            if trace.recorded_preemptions is not None
            else None
        ),
        "priority_updates": len(trace.updates),
        "arrivals": {"t": edges[:-1].tolist(), "width": width, "shares": arrivals},
        "demand": {"t": edges[:-1].tolist(), "width": width, "shares": demand},
        "sizes": _value_histogram(trace.instance_count, binning="log2"),
        "durations": _duration_histogram(trace.duration),
        "priorities": _value_histogram(trace.priority, binning="linear"),
    }


def job_gpus(trace: Trace, gpus_per_type: Mapping[str, float] | None = None) -> np.ndarray:
    """GPUs each job asks for: instance_count x GPUs per instance of its type."""
    per_type = dict(gpus_per_type or {})
    untyped = next(iter(per_type.values())) if len(per_type) == 1 else 1.0
    # A job of several types (section 12) is counted with its first type's GPUs **(choice)**.
    per_code = np.array(
        [float(per_type.get(name, per_type.get(accepted_types(name)[0], 1.0))) for name in trace.type_names]
        + [float(untyped)]
    )
    # NO_TYPE (-1) indexes the last entry: the untyped value.
    codes = np.where(trace.instance_type == NO_TYPE, len(trace.type_names), trace.instance_type)
    return trace.instance_count * per_code[codes]


def _busy_per_bucket(
    starts: np.ndarray, durations: np.ndarray, gpus: np.ndarray, edges: np.ndarray
) -> np.ndarray:
    """GPU-seconds inside each bucket if every job started when submitted: the difference of
    F(t) = sum of gpus x (time run by t), computed from sorted starts and ends."""

    def run_by(times: np.ndarray, weights: np.ndarray) -> np.ndarray:
        order = np.argsort(times, kind="stable")
        times, weights = times[order], weights[order]
        weight_sum = np.concatenate([[0.0], np.cumsum(weights)])
        moment = np.concatenate([[0.0], np.cumsum(weights * times)])
        before = np.searchsorted(times, edges, side="right")
        return edges * weight_sum[before] - moment[before]

    cumulative = run_by(starts, gpus) - run_by(starts + durations, gpus)
    return np.maximum(np.diff(cumulative), 0.0)


def _stats(values: np.ndarray) -> dict[str, float | None]:
    if not len(values):
        return {"mean": None, "p50": None, "p95": None}
    p50, p95 = np.percentile(values, [50, 95])
    return {"mean": float(values.mean()), "p50": float(p50), "p95": float(p95)}


def _type_counts(trace: Trace) -> dict[str, int]:
    counts = np.bincount(trace.instance_type[trace.instance_type >= 0], minlength=len(trace.type_names))
    out = {name: int(n) for name, n in zip(trace.type_names, counts, strict=True)}
    untyped = int(np.count_nonzero(trace.instance_type == NO_TYPE))
    if untyped:
        out[""] = untyped  # jobs without a type: they run on the policy's only type
    return out


def _value_histogram(values: np.ndarray, *, binning: str) -> dict:
    """Jobs per distinct value; with more than MAX_DISTINCT_VALUES values, jobs per bin:
    ``values`` are then the bins' lower bounds and ``upper`` their exclusive upper bounds
    (powers of two for ``log2``, equal widths for ``linear``)."""
    distinct, counts = np.unique(values, return_counts=True)
    if len(distinct) <= MAX_DISTINCT_VALUES:
        return {"values": distinct.tolist(), "jobs": counts.tolist(), "binned": False}
    low, high = int(distinct[0]), int(distinct[-1])
    if binning == "log2":
        lower = 2 ** np.arange(int(math.log2(max(low, 1))), int(math.log2(high)) + 1)
        upper = lower * 2
    else:
        step = math.ceil((high - low + 1) / MAX_DISTINCT_VALUES)
        lower = np.arange(low, high + 1, step)
        upper = lower + step
    jobs = np.bincount(np.searchsorted(lower, values, side="right") - 1, minlength=len(lower))
    return {"values": lower.tolist(), "upper": upper.tolist(), "jobs": jobs.tolist(), "binned": True}


def _duration_histogram(durations: np.ndarray) -> dict:
    """Jobs per log-spaced duration bin: [0, 1 s), then DURATION_BINS_PER_DECADE bins per decade."""
    longest = float(durations.max()) if len(durations) else 1.0
    decades = max(1, math.ceil(math.log10(max(longest, 1.0)) + 1e-12))
    if 10.0**decades <= longest:
        decades += 1
    powers = 10.0 ** (np.arange(decades * DURATION_BINS_PER_DECADE + 1) / DURATION_BINS_PER_DECADE)
    edges = np.concatenate([[0.0], powers])
    jobs = np.bincount(np.searchsorted(edges, durations, side="right") - 1, minlength=len(edges) - 1)[
        : len(edges) - 1
    ]
    return {"edges": edges.tolist(), "jobs": jobs.tolist()}
