"""What a policy is worth in GPUs: the smallest pool at which policy A is as good as policy B at
today's size, on a metric the user picks, found to a whole instance.

The search is a state machine over verdicts (size -> does A at that size match B at today's?):
``next_sizes`` says which sizes to replay next, several at once so that a step's replays run in
parallel, and ``conclusion`` what the verdicts found. Until the answer is bracketed it walks a
ladder of sizes away from today's (up while A falls short, down while it matches); then each step
splits the bracket at ``parallel`` evenly spaced sizes, so it narrows about ``parallel + 1`` times
a step. It assumes that more capacity never makes A worse (waits fall as the pool grows); the
verdicts it saw are kept, so a run that contradicts this can be read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any

from scheduling.capacity_curve import worst_p95
from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES, parse_enum

LADDER_UP = (1.125, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0)  # of today's size, while A falls short
LADDER_DOWN = (0.875, 0.75, 0.5, 0.25)  # while A already matches
DEFAULT_PARALLEL = 3
MAX_PARALLEL = 16
DEFAULT_MAX_FACTOR = 4.0  # the search gives up above 4x today's pool (choice)


class Metric(str, Enum):
    SHARE_P95 = "share_p95"  # every share's p95 wait
    URGENT_P95 = "urgent_p95"  # the worst p95 wait among the urgent shares
    MEAN_WAIT = "mean_wait"  # the mean wait over all jobs


METRIC_WORDS = {
    Metric.SHARE_P95: "p95 waits",
    Metric.URGENT_P95: "urgent shares' p95 wait",
    Metric.MEAN_WAIT: "mean wait",
}


def parse_metric(value: Any) -> Metric:
    return parse_enum(Metric, value, "metric")


@dataclass(frozen=True)
class Criterion:
    """When A's replay counts as good as B's: on ``metric``, no more than B's value plus the larger
    of ``tolerance_seconds`` and ``tolerance_percent`` of it, and no more unschedulable jobs (a
    smaller pool must not look better by refusing jobs)."""

    metric: Metric = Metric.SHARE_P95
    urgent_shares: tuple[str, ...] = ()
    tolerance_seconds: float = 60.0
    tolerance_percent: float = 2.0

    def allowance(self, target: float) -> float:
        return max(self.tolerance_seconds, target * self.tolerance_percent / 100)


def compared_values(point: Mapping[str, Any], criterion: Criterion) -> dict[str, float | None]:
    """The values the criterion compares, by name: each share's p95, the urgent shares' worst p95
    (``urgent``), or the mean wait (``all jobs``)."""
    if criterion.metric is Metric.SHARE_P95:
        return {name: share["wait"]["p95"] for name, share in point["shares"].items()}
    if criterion.metric is Metric.URGENT_P95:
        return {"urgent": worst_p95(point, criterion.urgent_shares)}
    return {"all jobs": point["wait"]["mean"]}


def matches(
    candidate: Mapping[str, Any], target: Mapping[str, Any], criterion: Criterion
) -> tuple[bool, str]:
    """Whether ``candidate`` (A at some size) is as good as ``target`` (B at today's size), and
    why not in words when it is not (the first value that falls short)."""
    if candidate["unschedulable"] > target["unschedulable"]:
        count = candidate["unschedulable"]
        return (
            False,
            f"{count:,} unschedulable job{'' if count == 1 else 's'}, against {target['unschedulable']:,}",
        )
    mine = compared_values(candidate, criterion)
    for name, wanted in compared_values(target, criterion).items():
        if wanted is None:
            continue  # B started no job of that share: nothing to match
        value = mine.get(name)
        if value is None:
            return False, f"{name}: no job started"
        if value > wanted + criterion.allowance(wanted):
            return False, f"{name}: {_duration(value)} against {_duration(wanted)}"
    return True, "matches"


@dataclass(frozen=True)
class SearchRange:
    """Sizes in instances of the sized type: today's, and the bounds the search stays within."""

    today: int
    lower: int = 1
    upper: int = 0  # 0: DEFAULT_MAX_FACTOR x today
    parallel: int = DEFAULT_PARALLEL

    def __post_init__(self) -> None:
        if self.today < 1:
            raise InputError(f"{self.today}: today's pool has no instance of the sized type", field="today")
        if not 1 <= self.parallel <= MAX_PARALLEL:
            raise InputError(f"{self.parallel}: between 1 and {MAX_PARALLEL} sizes a step", field="parallel")
        if not 1 <= self.lower <= self.today:
            raise InputError(
                f"{self.lower}: the lower bound must be from 1 to today's {self.today}", field="lower"
            )
        if self.upper and self.upper < self.today:
            raise InputError(f"{self.upper}: the upper bound is below today's {self.today}", field="upper")
        if self.upper > MAX_INSTANCES or self.today > MAX_INSTANCES:
            raise InputError(
                f"{max(self.upper, self.today):,} instances: a size is at most {MAX_INSTANCES:,}",
                field="upper",
            )

    @property
    def top(self) -> int:
        return self.upper or max(self.today + 1, math.ceil(self.today * DEFAULT_MAX_FACTOR))

    def ladder_up(self) -> list[int]:
        steps = [math.ceil(self.today * factor) for factor in LADDER_UP]
        return sorted({min(size, self.top) for size in steps if size > self.today} | {self.top})

    def ladder_down(self) -> list[int]:
        steps = [math.floor(self.today * factor) for factor in LADDER_DOWN]
        return sorted(
            {max(size, self.lower) for size in steps if size < self.today} | {self.lower}, reverse=True
        )


@dataclass(frozen=True)
class Conclusion:
    """What the verdicts found. ``size``: the smallest matching size (None when A does not match
    even at the top); ``exact``: the next size down was seen not to match (or is below ``lower``);
    ``bracket``: the largest size seen short and the smallest seen matching."""

    done: bool
    size: int | None
    exact: bool
    bracket: tuple[int | None, int | None]


def _bracket(verdicts: Mapping[int, bool]) -> tuple[int | None, int | None]:
    matching = [size for size, ok in verdicts.items() if ok]
    best = min(matching) if matching else None
    short = [size for size, ok in verdicts.items() if not ok and (best is None or size < best)]
    return (max(short) if short else None), best


def next_sizes(search: SearchRange, verdicts: Mapping[int, bool]) -> list[int]:
    """The sizes to replay next (at most ``parallel``, none already judged); empty when done. The
    first step is today's size with the first rungs up the ladder."""
    short, best = _bracket(verdicts)
    seen = set(verdicts)
    if not verdicts:
        return [search.today, *search.ladder_up()[: search.parallel - 1]]
    if best is None:  # A falls short everywhere seen: climb
        if short is not None and short >= search.top:
            return []
        return [size for size in search.ladder_up() if size > (short or 0) and size not in seen][
            : search.parallel
        ]
    if short is None:  # A matches everywhere seen: descend
        if best <= search.lower:
            return []
        return [size for size in search.ladder_down() if size < best and size not in seen][: search.parallel]
    gap = best - short
    if gap <= 1:
        return []
    count = min(search.parallel, gap - 1)
    picks = {short + round(i * gap / (count + 1)) for i in range(1, count + 1)}
    return sorted(size for size in picks if short < size < best and size not in seen)


def conclusion(search: SearchRange, verdicts: Mapping[int, bool]) -> Conclusion:
    short, best = _bracket(verdicts)
    done = bool(verdicts) and not next_sizes(search, verdicts)
    exact = best is not None and (best <= search.lower or short == best - 1)
    return Conclusion(done=done, size=best, exact=exact, bracket=(short, best))


def worth_sentence(
    *,
    policy_a: str,
    policy_b: str,
    metric_words: str,
    today_gpus: float,
    answer_gpus: float | None,
    top_gpus: float,
    extra_monthly_usd: float | None = None,
    b_rerun_monthly_usd: float | None = None,
    b_rerun_gpu_hours_month: float | None = None,
) -> str:
    """The answer in one sentence. The $ figures are given only to readers who may see them;
    without them the sentence says GPUs and rerun GPU-hours."""
    today = f"{today_gpus:,.0f}"
    if answer_gpus is None:
        return (
            f"{policy_a} does not match {policy_b}'s {metric_words} at {today} GPUs even with "
            f"{top_gpus:,.0f} GPUs, the search's upper bound."
        )
    delta = answer_gpus - today_gpus
    if delta == 0:
        return f"{policy_a} already matches {policy_b}'s {metric_words} at {today} GPUs."
    percent = delta / today_gpus * 100 if today_gpus else 0.0
    needs = f"{policy_a} needs {'only ' if delta < 0 else ''}{answer_gpus:,.0f} GPUs"
    change = f" ({delta:+,.0f}, {percent:+.0f}%)"
    head = f"{needs}{change} to match {policy_b}'s {metric_words} at {today}"
    if extra_monthly_usd is not None:
        more_or_less = "more" if extra_monthly_usd >= 0 else "less"
        cost = f"${abs(extra_monthly_usd):,.0f} a month {more_or_less} at list price"
        against = (
            f", against ${b_rerun_monthly_usd:,.0f} a month of rerun cost under {policy_b}"
            if b_rerun_monthly_usd is not None
            else ""
        )
        return f"{head}: {cost}{against}."
    if b_rerun_gpu_hours_month is not None:
        return f"{head}, against {b_rerun_gpu_hours_month:,.0f} GPU-hours a month of reruns under {policy_b}."
    return f"{head}."


def _duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:,.1f} min"
    return f"{seconds / 3600:,.1f} h"


def parse_urgent(shares: Sequence[str], known: Sequence[str]) -> tuple[str, ...]:
    unknown = [name for name in shares if name not in known]
    if unknown:
        raise InputError(f"{', '.join(unknown)}: not a share of the policies", field="urgent_shares")
    return tuple(shares)
