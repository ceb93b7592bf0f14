"""The decision sentence at the top of a study page, computed from the runs' aggregates alone.

What a lead came for, in one sentence with the numbers: the baseline against the best
alternative on the study's measures, naming the share and saying which alternatives change
nothing, e.g. "itp-2021-full-pooling cuts the longest-waiting share's p95 wait from 131.8 h to
3.6 h (cluster03) at the same 65.1% utilization; stranded down from $1,824,025 to $0, rerun cost
up from $0 to $3,000. itp-2021-no-preemption changes nothing."

The measures, in the order they rank the alternatives:

1. the p95 wait of the longest-waiting share: the share whose p95 wait is longest under the
   baseline (the first such share in the policies' order on a tie), in hours; the p95 wait of
   all jobs when no share has one;
2. utilization, in % (higher is better);
3. stranded capacity (idle quota others waited for) and 4. the pool's idle capacity, in $ for a
   reader of $ figures on a priced pool, else in GPU-hours (lower is better);
5. rerun cost (work lost to preemption and start-up), in $ or GPU-hours the same way.

Two values are the same when they print the same (0.1 h, 0.1 pts, whole GPU-hours or $): a
difference the page would not show is not a finding. The best alternative is the first in that
ranking (compared measure by measure, a missing value last; the study's order on a full tie); an
alternative whose every measure equals the baseline's "changes nothing".

Pure functions over ``RunColumn`` (``planner.reports.comparison``): no database, no Django.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner.reports.comparison import HOUR, RunColumn, baseline_of

GPU_HOURS = "GPU-hours"
USD = "$"


@dataclass(frozen=True)
class Measures:
    """One run's figures on the study's measures (None: the run's metrics do not have it)."""

    name: str
    wait: float | None  # p95 wait of the longest-waiting share, hours
    utilization: float | None  # %
    stranded: float | None  # $ or GPU-hours
    idle: float | None
    rerun: float | None


@dataclass(frozen=True)
class Decision:
    text: str
    share: str | None  # the longest-waiting share (None: every job's p95 wait is used)
    best: str | None  # the best alternative's name (None with a single policy)
    unchanged: tuple[str, ...]  # alternatives whose every measure equals the baseline's
    unit: str  # the unit of idle, stranded and rerun cost: "$" or "GPU-hours"


def priced(metrics: Mapping[str, Any]) -> bool:
    """Whether any instance type of the run's pool has an hourly price (else every $ is $0)."""
    return any(float(t.get("hourly_price") or 0.0) > 0 for t in (metrics.get("types") or {}).values())


def longest_waiting_share(baseline: RunColumn) -> str | None:
    """The share with the longest p95 wait under the baseline; the first of equals."""
    best: tuple[float, str] | None = None
    for share in baseline.metrics.get("shares", []):
        p95 = (share.get("wait_seconds") or {}).get("p95")
        if p95 is not None and (best is None or p95 > best[0]):
            best = (p95, share["name"])
    return None if best is None else best[1]


def _p95_hours(block: Mapping[str, Any] | None) -> float | None:
    p95 = ((block or {}).get("wait_seconds") or {}).get("p95")
    return None if p95 is None else p95 / HOUR


def _sum(values: list[Any]) -> float | None:
    present = [float(v) for v in values if v is not None]
    return sum(present) if present else None


def measures(run: RunColumn, share: str | None, unit: str) -> Measures:
    metrics = run.metrics
    summary = metrics.get("summary", {})
    shares = metrics.get("shares", [])
    if share is None:
        wait = _p95_hours(summary)
    else:
        wait = _p95_hours(next((s for s in shares if s["name"] == share), None))
    suffix = "usd" if unit == USD else "gpu_hours"
    utilization = summary.get("utilization")
    pool = metrics.get("pool") or {}
    return Measures(
        name=run.name,
        wait=wait,
        utilization=None if utilization is None else 100 * utilization,
        stranded=_sum([s.get(f"stranded_{suffix}") for s in shares]),
        idle=pool.get(f"idle_{suffix}"),
        rerun=summary.get("rerun_cost_usd" if unit == USD else "rerun_gpu_hours"),
    )


# -- comparing: the same when printed the same ------------------------------------------------

FIELDS = ("wait", "utilization", "stranded", "idle", "rerun")
LOWER_IS_BETTER = {"wait": True, "utilization": False, "stranded": True, "idle": True, "rerun": True}
DIGITS = {"wait": 1, "utilization": 1, "stranded": 0, "idle": 0, "rerun": 0}


def _shown(field: str, value: float | None) -> float | None:
    """The value as the sentence prints it (a wait under an hour in whole minutes)."""
    if value is None:
        return None
    if field == "wait" and abs(value) < 1:
        return round(value * 60) / 60
    return round(value, DIGITS[field])


def same(field: str, a: float | None, b: float | None) -> bool:
    return _shown(field, a) == _shown(field, b)


def changes_nothing(alternative: Measures, baseline: Measures) -> bool:
    return all(same(f, getattr(alternative, f), getattr(baseline, f)) for f in FIELDS)


def improves(alternative: Measures, baseline: Measures) -> bool:
    """Better than the baseline on at least one measure."""
    for field in FIELDS:
        a, b = _shown(field, getattr(alternative, field)), _shown(field, getattr(baseline, field))
        if a is not None and b is not None and a != b and (a < b) == LOWER_IS_BETTER[field]:
            return True
    return False


def rank_key(m: Measures) -> tuple:
    """Measure by measure, the better first; a missing value after every present one."""
    key = []
    for field in FIELDS:
        value = _shown(field, getattr(m, field))
        if value is None:
            key.append((1, 0.0))
        else:
            key.append((0, value if LOWER_IS_BETTER[field] else -value))
    return tuple(key)


# -- words ------------------------------------------------------------------------------------


def _hours(value: float) -> str:
    """A wait: in hours, or in minutes under an hour (as ``_shown`` compares it)."""
    if abs(value) < 1:
        return f"{round(value * 60):,.0f} min"
    return f"{value:,.1f} h"


def _percent(value: float) -> str:
    return f"{value:,.1f}%"


def _amount(value: float, unit: str) -> str:
    return f"${value:,.0f}" if unit == USD else f"{value:,.0f}"


def _from_to(before: float, after: float, unit: str) -> str:
    """ "from $2 to $0", "from 729,610 to 0 GPU-hours"."""
    text = f"from {_amount(before, unit)} to {_amount(after, unit)}"
    return text if unit == USD else f"{text} {GPU_HOURS}"


def _names(names: Sequence[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]


def _wait_subject(share: str | None) -> str:
    return "the longest-waiting share's p95 wait" if share else "the p95 wait of all jobs"


def _wait_clause(best: Measures, base: Measures, share: str | None) -> str:
    where = f" ({share})" if share else ""
    subject = _wait_subject(share)
    if best.wait is None or base.wait is None:
        return f"leaves {subject} unknown{where}"
    if same("wait", best.wait, base.wait):
        return f"leaves {subject} at {_hours(base.wait)}{where}"
    verb = "cuts" if best.wait < base.wait else "raises"
    return f"{verb} {subject} from {_hours(base.wait)} to {_hours(best.wait)}{where}"


def _utilization_clause(best: Measures, base: Measures) -> str:
    if best.utilization is None or base.utilization is None:
        return ""
    if same("utilization", best.utilization, base.utilization):
        return f" at the same {_percent(base.utilization)} utilization"
    way = "up" if best.utilization > base.utilization else "down"
    return f", with utilization {way} from {_percent(base.utilization)} to {_percent(best.utilization)}"


def _amount_clauses(best: Measures, base: Measures, unit: str) -> list[str]:
    clauses = []
    for field, label in (("stranded", "stranded"), ("idle", "idle"), ("rerun", "rerun cost")):
        a, b = getattr(best, field), getattr(base, field)
        if a is None or b is None or same(field, a, b):
            continue
        way = "down" if a < b else "up"
        clauses.append(f"{label} {way} {_from_to(b, a, unit)}")
    return clauses


def _single(base: Measures, share: str | None) -> str:
    parts = [f"Only {base.name} was replayed"]
    if base.wait is not None:
        if share:
            parts.append(f"its longest-waiting share, {share}, waits {_hours(base.wait)} at p95")
        else:
            parts.append(f"its jobs wait {_hours(base.wait)} at p95")
    text = ": ".join(parts)
    if base.utilization is not None:
        text += f", at {_percent(base.utilization)} utilization"
    return text + "; launch a study with other policies to compare."


def decide(runs: Sequence[RunColumn], *, failed: Sequence[str] = (), money: bool = False) -> Decision | None:
    """The decision sentence of the succeeded ``runs`` (None without any); ``failed`` names the
    runs that failed (said, not compared); ``money``: the reader may read $ figures (idle,
    stranded and rerun cost are then in $ when the pool has prices, else in GPU-hours with a
    word saying why)."""
    if not runs:
        return None
    baseline = baseline_of(runs)
    assert baseline is not None
    has_prices = priced(baseline.metrics)
    unit = USD if money and has_prices else GPU_HOURS
    share = longest_waiting_share(baseline)
    base = measures(baseline, share, unit)
    alternatives = [measures(run, share, unit) for run in runs if run is not baseline]
    notes = []
    if not any(run.is_baseline for run in runs):
        notes.append(
            f"Compared with {baseline.name}, the first policy that succeeded: the baseline run did not."
        )
    if failed:
        verb = "was" if len(failed) == 1 else "were"
        notes.append(f"{_names(list(failed))} failed and {verb} not compared.")
    if money and not has_prices:
        notes.append(
            f"No instance type of the pool has an hourly price, so the figures are in {GPU_HOURS}, not $."
        )

    if not alternatives:
        text = _single(base, share)
        return Decision(" ".join([text, *notes]), share, None, (), unit)

    unchanged = tuple(m.name for m in alternatives if changes_nothing(m, base))
    changing = [m for m in alternatives if m.name not in unchanged]
    if not changing:
        verb = "gives" if len(unchanged) == 1 else "give"
        figures = f" ({_hours(base.wait)}, {share})" if base.wait is not None and share else ""
        text = (
            f"No alternative changes anything: {_names(list(unchanged))} {verb} the same "
            f"p95 wait of {'the longest-waiting share' if share else 'all jobs'}{figures}, utilization, "
            f"stranded, idle and rerun cost as {base.name}."
        )
        return Decision(" ".join([text, *notes]), share, None, unchanged, unit)

    best = min(changing, key=rank_key)  # min is stable: the study's order on a full tie
    sentence = f"{best.name} {_wait_clause(best, base, share)}{_utilization_clause(best, base)}"
    amounts = _amount_clauses(best, base, unit)
    if amounts:
        sentence += "; " + ", ".join(amounts)
    if not improves(best, base):
        sentence = f"No alternative does better than {base.name}: {sentence}"
    sentences = [sentence + "."]
    others = [m for m in changing if m is not best and m.wait is not None]
    if others:
        subject = f"{share}'s p95 wait" if share else "the p95 wait of all jobs"
        sentences.append(
            "Under " + "; under ".join(f"{m.name}, {subject} is {_hours(m.wait)}" for m in others) + "."
        )
    if unchanged:
        verb = "changes" if len(unchanged) == 1 else "change"
        sentences.append(f"{_names(list(unchanged))} {verb} nothing.")
    return Decision(" ".join([*sentences, *notes]), share, best.name, unchanged, unit)
