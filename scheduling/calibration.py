"""Calibration: how far a replay's waits resemble the waits a trace recorded. Per share and overall,
the recorded (recorded_start - submit) against the simulated wait distribution, with the two-sample
Kolmogorov-Smirnov distance, p50/p95 ratios, both CDFs and a verdict in words; and, when the trace
recorded them (AWS Batch and Kueue histories), preemptions simulated against recorded, in words too.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from scheduling.errors import InputError
from scheduling.metrics import cdf, distribution
from scheduling.model import Policy
from scheduling.result import ReplayResult
from scheduling.trace import Trace
from scheduling.traces.mapping import CsvTable, text_stream

CDF_POINTS = 500
# Waits within this factor of each other, or this close in seconds, read as "close" (choice).
CLOSE_RATIO = 1.25
CLOSE_SECONDS = 60.0
# KS distance bands for the verdict (choice): agree closely / roughly / poorly.
KS_CLOSE = 0.1
KS_ROUGH = 0.25
# Preemption counts within this factor of each other, or this many apart, read as "close" (choice).
PREEMPTIONS_CLOSE_RATIO = 1.25
PREEMPTIONS_CLOSE_COUNT = 2

OPENB_ASSUMPTION = (
    "The openb cluster had no per-class quotas that the trace records. Assumed in force: one pool of "
    "the cluster's {gpus:,} GPUs (the sum of gpu in openb_node_list_gpu_node.csv), the QoS classes as "
    "shares whose quotas split it in proportion to each class's GPU-hours, every share lending and "
    "borrowing without limit and nobody preempted (one shared Kubernetes cluster, QoS as priority). "
    "Fractional GPUs are rounded up to whole ones."
)


# -- the Kolmogorov-Smirnov test -----------------------------------------------------------------


def ks_distance(first: np.ndarray, second: np.ndarray) -> float:
    """max |F1 - F2| over the pooled values, F the empirical CDFs (0.0 when either is empty)."""
    a = np.sort(np.asarray(first, dtype=np.float64))
    b = np.sort(np.asarray(second, dtype=np.float64))
    if not len(a) or not len(b):
        return 0.0
    pooled = np.concatenate([a, b])
    f1 = np.searchsorted(a, pooled, side="right") / len(a)
    f2 = np.searchsorted(b, pooled, side="right") / len(b)
    return float(np.max(np.abs(f1 - f2)))


def kolmogorov_survival(statistic: float, terms: int = 100) -> float:
    """P(K > statistic) for the Kolmogorov distribution: 2 sum (-1)^(k-1) exp(-2 k^2 x^2), or its
    Jacobi form 1 - sqrt(2 pi)/x sum exp(-(2k-1)^2 pi^2 / (8 x^2)) below 1, where that converges
    faster."""
    x = float(statistic)
    if x <= 0:
        return 1.0
    k = np.arange(1, terms + 1, dtype=np.float64)
    if x < 1.0:
        cdf_value = math.sqrt(2 * math.pi) / x * np.exp(-((2 * k - 1) ** 2) * math.pi**2 / (8 * x * x)).sum()
        return float(min(1.0, max(0.0, 1.0 - cdf_value)))
    tail = 2 * (((-1) ** (k - 1)) * np.exp(-2 * k * k * x * x)).sum()
    return float(min(1.0, max(0.0, tail)))


def ks_p_value(distance: float, n: int, m: int) -> float | None:
    """The asymptotic two-sided p-value of a two-sample KS distance: P(K > sqrt(n m / (n + m)) D).
    None when a sample is empty."""
    if n <= 0 or m <= 0:
        return None
    return kolmogorov_survival(math.sqrt(n * m / (n + m)) * distance)


# -- comparing two wait distributions ----------------------------------------------------------


def percentile_comparison(recorded: float | None, simulated: float | None) -> dict[str, float | None]:
    """Recorded and simulated values of one percentile, their ratio (simulated / recorded) and
    difference (simulated - recorded, seconds). When recorded is 0 the ratio is 1.0 if simulated is
    0 too, else None (no finite ratio): read the difference then."""
    if recorded is None or simulated is None:
        return {"recorded": recorded, "simulated": simulated, "ratio": None, "difference": None}
    if recorded > 0:
        ratio: float | None = simulated / recorded
    else:
        ratio = 1.0 if simulated == 0 else None
    return {"recorded": recorded, "simulated": simulated, "ratio": ratio, "difference": simulated - recorded}


def compare_waits(
    recorded: np.ndarray, simulated: np.ndarray, max_points: int = CDF_POINTS
) -> dict[str, Any]:
    """Two wait samples (seconds): their distributions, KS distance and p-value, p50 and p95 compared,
    and both CDFs at at most ``max_points`` points."""
    recorded = np.asarray(recorded, dtype=np.float64)
    simulated = np.asarray(simulated, dtype=np.float64)
    distance = ks_distance(recorded, simulated)
    recorded_waits = distribution(recorded)
    simulated_waits = distribution(simulated)
    return {
        "recorded": recorded_waits,
        "simulated": simulated_waits,
        "ks": {"distance": distance, "p_value": ks_p_value(distance, len(recorded), len(simulated))},
        "p50": percentile_comparison(recorded_waits["p50"], simulated_waits["p50"]),
        "p95": percentile_comparison(recorded_waits["p95"], simulated_waits["p95"]),
        "cdfs": {"recorded": cdf(recorded, max_points), "simulated": cdf(simulated, max_points)},
    }


# -- words -----------------------------------------------------------------------------------------


def wait_text(seconds: float) -> str:
    """A wait for a sentence: ``0.5 s``, ``45 s``, ``4.1 min``, ``3.2 h``, ``2.5 d``."""
    if seconds < 10 and not float(seconds).is_integer():
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{seconds / 60:.1f} min"
    if seconds < 2 * 86400:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} d"


def ratio_text(ratio: float) -> str:
    """``0.4x``, ``2.5x``, ``12x``, ``0.05x``."""
    if ratio >= 10:
        return f"{ratio:,.0f}x"
    if ratio >= 0.1 or ratio == 0:
        return f"{ratio:.1f}x" if ratio else "0x"
    return f"{ratio:.2g}x"


def _is_close(recorded: float, simulated: float, *, apart: float, ratio: float) -> bool:
    """Whether a simulated figure is close to its recorded one: at most ``apart`` from it, or
    within ``ratio`` of it either way. Waits and preemptions are judged by this one rule, each
    with its own tolerances."""
    if abs(simulated - recorded) <= apart:
        return True
    return recorded > 0 and 1 / ratio <= simulated / recorded <= ratio


def wait_direction(recorded: float, simulated: float) -> str:
    """``shorter``, ``longer`` or ``close`` (within CLOSE_RATIO of each other, or CLOSE_SECONDS
    apart): the one rule that says whether a simulated wait differs from a recorded one."""
    if _is_close(recorded, simulated, apart=CLOSE_SECONDS, ratio=CLOSE_RATIO):
        return "close"
    return "shorter" if simulated < recorded else "longer"


def ks_words(distance: float) -> str:
    if distance <= KS_CLOSE:
        return "the distributions agree closely"
    if distance <= KS_ROUGH:
        return "the distributions agree roughly"
    return "the distributions differ"


def verdict(comparison: Mapping[str, Any], compared: int) -> str:
    """One line a person can read, e.g. ``simulated waits are shorter: p95 0.4x recorded (1.2 h
    against 3.0 h); the distributions differ (KS 0.41)``."""
    if not compared:
        return "nothing to compare: no job has both a recorded and a simulated start"
    p95 = comparison["p95"]
    recorded, simulated = p95["recorded"], p95["simulated"]
    direction = wait_direction(recorded, simulated)
    if direction == "close":
        head = "simulated waits are close to the recorded ones"
    else:
        head = f"simulated waits are {direction}"
    against = f"{wait_text(simulated)} against {wait_text(recorded)}"
    if recorded > 0 and simulated > 0:
        figure = f"p95 {ratio_text(p95['ratio'])} recorded ({against})"
    else:
        figure = f"p95 {against} recorded"
    distance = comparison["ks"]["distance"]
    return f"{head}: {figure}; {ks_words(distance)} (KS {distance:.2f})"


def preemption_direction(recorded: int, simulated: int) -> str:
    """``fewer``, ``more`` or ``close`` (within PREEMPTIONS_CLOSE_RATIO of each other, or at most
    PREEMPTIONS_CLOSE_COUNT apart): the one rule that says whether simulated preemptions differ."""
    if _is_close(recorded, simulated, apart=PREEMPTIONS_CLOSE_COUNT, ratio=PREEMPTIONS_CLOSE_RATIO):
        return "close"
    return "fewer" if simulated < recorded else "more"


def _jobs(count: int) -> str:
    return f"{count:,} job" if count == 1 else f"{count:,} jobs"


def compare_preemptions(recorded: np.ndarray, simulated: np.ndarray) -> dict[str, Any]:
    """Preemptions of the same jobs, recorded by the real scheduler and simulated: totals, jobs preempted
    at least once, per 100 jobs, the ratio simulated / recorded and a verdict in words, e.g.
    ``simulated preemptions are fewer: 12 against 30 recorded (0.4x); 9 jobs preempted against 21``."""
    recorded = np.asarray(recorded, dtype=np.int64)
    simulated = np.asarray(simulated, dtype=np.int64)
    jobs = len(recorded)
    total_recorded, total_simulated = int(recorded.sum()), int(simulated.sum())
    ratio = total_simulated / total_recorded if total_recorded else (1.0 if total_simulated == 0 else None)
    direction = preemption_direction(total_recorded, total_simulated)
    if not jobs:
        words = "nothing to compare: no job has a recorded preemption count"
    else:
        head = (
            "simulated preemptions are close to the recorded ones"
            if direction == "close"
            else f"simulated preemptions are {direction}"
        )
        figure = f"{total_simulated:,} against {total_recorded:,} recorded"
        if not total_recorded and not total_simulated:
            head, figure = "no preemption, in the replay as in the record", _jobs(jobs)
        if ratio is not None and total_recorded and total_simulated:
            figure += f" ({ratio_text(ratio)})"
        preempted = f"{_jobs(int((simulated > 0).sum()))} preempted against {int((recorded > 0).sum()):,}"
        words = f"{head}: {figure}" + (f"; {preempted}" if total_recorded or total_simulated else "")
    return {
        "jobs": jobs,
        "recorded": total_recorded,
        "simulated": total_simulated,
        "jobs_preempted": {"recorded": int((recorded > 0).sum()), "simulated": int((simulated > 0).sum())},
        "per_100_jobs": {
            "recorded": 100 * total_recorded / jobs if jobs else None,
            "simulated": 100 * total_simulated / jobs if jobs else None,
        },
        "ratio": ratio,
        "direction": direction if jobs else None,
        "verdict": words,
    }


# -- a trace and its replay ----------------------------------------------------------------------


def recorded_waits(trace: Trace) -> np.ndarray:
    """recorded_start - submit_time per job (nan where no start was recorded); raises InputError
    when the trace records no start at all."""
    if trace.recorded_start is None or not np.isfinite(trace.recorded_start).any():
        raise InputError(
            "the trace records no start times: calibration compares replayed waits with recorded ones "
            "(Slurm sacct, Alibaba openb, Helios and planner CSV with recorded_start have them)",
            field="recorded_start",
        )
    return np.asarray(trace.recorded_start, dtype=np.float64) - trace.submit_time


def _block(
    name: str,
    recorded: np.ndarray,
    simulated: np.ndarray,
    max_points: int,
    preemptions: tuple[np.ndarray, np.ndarray] | None = None,
) -> dict[str, Any]:
    """The comparison over one set of jobs: which are compared, which are left out and why; with
    ``preemptions`` (recorded, -1 where unknown, and simulated per job) their comparison too."""
    has_recorded = np.isfinite(recorded)
    before_submit = has_recorded & (recorded < 0)
    usable = has_recorded & ~before_submit
    started = np.isfinite(simulated)
    compared = usable & started
    comparison = compare_waits(recorded[compared], simulated[compared], max_points)
    count = int(compared.sum())
    return {
        "name": name,
        "jobs": len(recorded),
        "compared": count,
        "excluded": {
            "no_recorded_start": int((~has_recorded).sum()),
            "recorded_before_submit": int(before_submit.sum()),
            "not_started_in_replay": int((usable & ~started).sum()),
        },
        **comparison,
        "verdict": verdict(comparison, count),
        **({} if preemptions is None else {"preemptions": _preemption_block(*preemptions)}),
    }


def _preemption_block(recorded: np.ndarray, simulated: np.ndarray) -> dict[str, Any]:
    """Compared are the jobs whose recorded count is known (a list-service-jobs summary has none)."""
    known = recorded >= 0
    return {**compare_preemptions(recorded[known], simulated[known]), "unknown": int((~known).sum())}


def calibrate(trace: Trace, result: ReplayResult, max_points: int = CDF_POINTS) -> dict[str, Any]:
    """Recorded against simulated waits of ``trace`` replayed in ``result`` (under the policy that was
    in force), per share of the trace (those with jobs, in the trace's order) and over all jobs.

    A job is compared when it has a recorded start no earlier than its submit time and started in
    the replay; the others are counted under ``excluded``. Raises InputError when the trace records
    no start time or the result is of another trace."""
    recorded = recorded_waits(trace)
    if len(result.outcomes.first_start) != len(trace):
        message = f"the replay has {len(result.outcomes.first_start):,} jobs, the trace {len(trace):,}"
        raise InputError(message, field="result")
    simulated = result.outcomes.wait(trace.submit_time)
    recorded_preemptions = trace.recorded_preemptions
    simulated_preemptions = np.asarray(result.outcomes.preemptions)

    def preemptions(mask: np.ndarray | slice) -> tuple[np.ndarray, np.ndarray] | None:
        if recorded_preemptions is None:
            return None
        return np.asarray(recorded_preemptions)[mask], simulated_preemptions[mask]

    shares = []
    for code, name in enumerate(trace.share_names):
        mask = trace.share == code
        if mask.any():
            shares.append(_block(name, recorded[mask], simulated[mask], max_points, preemptions(mask)))
    everything = slice(None)
    return {
        "all": _block("all", recorded, simulated, max_points, preemptions(everything)),
        "shares": shares,
        "policy": result.policy.name,
        "thresholds": {
            "close_ratio": CLOSE_RATIO,
            "close_seconds": CLOSE_SECONDS,
            "ks_close": KS_CLOSE,
            "ks_rough": KS_ROUGH,
            "preemptions_close_ratio": PREEMPTIONS_CLOSE_RATIO,
            "preemptions_close_count": PREEMPTIONS_CLOSE_COUNT,
        },
    }


# -- the policy in force on the openb cluster --------------------------------------------------


def openb_cluster_gpus(source: Any) -> int:
    """The sum of ``gpu`` over ``openb_node_list_gpu_node.csv`` (or a file like it)."""
    total = 0
    with text_stream(source) as lines:
        table = CsvTable(lines)
        table.require("gpu")
        for row, cells in table.rows():
            text = cells[table.index["gpu"]].strip()
            try:
                gpus = float(text)
            except ValueError:
                raise InputError(f"{text!r} is not a number of GPUs", row=row, field="gpu") from None
            if gpus < 0 or not gpus.is_integer():
                raise InputError(f"{text!r} is not a whole number of 0 or more", row=row, field="gpu")
            total += int(gpus)
    if total <= 0:
        raise InputError("the node list has no GPU", field="gpu")
    return total


def openb_policy_dict(trace: Trace, cluster_gpus: int, *, name: str = "openb-in-force") -> dict[str, Any]:
    """The policy assumed in force on the openb cluster (OPENB_ASSUMPTION): ``cluster_gpus`` whole
    GPUs (type ``gpu``), one share per QoS class of ``trace`` with a quota in proportion to its
    GPU-hours (largest remainders, summing to the pool), all LEND_AND_BORROW without limit, no
    preemption."""
    demand = np.bincount(
        trace.share, weights=trace.instance_count * trace.duration, minlength=len(trace.share_names)
    )
    if cluster_gpus < 1 or demand.sum() <= 0:
        raise InputError("the pool needs GPUs and the trace GPU demand", field="gpu")
    exact = demand / demand.sum() * cluster_gpus
    quotas = np.floor(exact).astype(int)
    for index in np.argsort(-(exact - quotas), kind="stable")[: cluster_gpus - int(quotas.sum())]:
        quotas[index] += 1
    data = {
        "name": name,
        "description": OPENB_ASSUMPTION.format(gpus=cluster_gpus),
        "instance_types": {"gpu": {"gpus": 1, "hourly_price": 0.0}},
        "capacity": {"gpu": cluster_gpus},
        "queueing": "best_effort_fifo",
        "startup_seconds": 0,
        "shares": [
            {
                "name": share,
                "capacity": {"gpu": int(quota)},
                "strategy": "LEND_AND_BORROW",
                "borrow_limit_percent": -1,
                "in_share_preemption": "never",
                "reclaim": "never",
            }
            for share, quota in zip(trace.share_names, quotas.tolist(), strict=True)
        ],
    }
    Policy.from_dict(data)
    return data
