"""The headline of a study, read from its runs' ``summary`` (the small part of the metrics; never
the series or CDFs): utilization per policy and the p95 wait of the share that waits longest
under the baseline (the share a reader worries about first)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

from planner.studies.models import Run, RunStatus, Study

# What the headline reads of each run (``Run.summary``, never the full metrics).
RUN_VALUES = ("id", "study_id", "policy_id", "policy_name", "status", "progress", "summary")


@dataclass(frozen=True)
class PolicyHeadline:
    policy: str
    status: str
    progress: float
    utilization: float | None
    useful_utilization: float | None
    share_p95_wait_hours: float | None
    is_baseline: bool


@dataclass(frozen=True)
class StudyHeadline:
    study: Study
    share: str | None  # the longest-waiting share under the baseline
    policies: list[PolicyHeadline]


def study_url(study_id: int) -> str:
    """The study comparison page (``planner.reports``), at /studies/<id>/."""
    try:
        return reverse("reports:study", args=[study_id])
    except NoReverseMatch:
        return f"/studies/{study_id}/"


def p95_of(shares: list | None, share: str | None) -> float | None:
    """The share's p95 wait in hours, from ``summary["shares"]``."""
    for row in shares or []:
        if row.get("name") == share:
            p95 = (row.get("wait_seconds") or {}).get("p95")
            return None if p95 is None else p95 / 3600
    return None


def longest_waiting_share(shares: list | None) -> str | None:
    rows = [r for r in shares or [] if (r.get("wait_seconds") or {}).get("p95") is not None]
    if not rows:
        return None
    return max(rows, key=lambda r: r["wait_seconds"]["p95"])["name"]


def headline(study: Study, runs: list[dict]) -> StudyHeadline:
    """``runs``: the study's runs as ``Run.objects.values(*RUN_VALUES)`` rows."""
    done = [r for r in runs if r["status"] == RunStatus.SUCCEEDED and r["summary"]]
    baseline = next((r for r in runs if r["policy_id"] == study.baseline_id), runs[0] if runs else None)
    share = longest_waiting_share(baseline["summary"].get("shares")) if baseline in done else None
    if share is None and done:
        share = longest_waiting_share(done[0]["summary"].get("shares"))
    policies = []
    for run in runs:
        summary = run["summary"] if run in done else {}
        policies.append(
            PolicyHeadline(
                policy=run["policy_name"],
                status=run["status"],
                progress=run["progress"],
                utilization=summary.get("utilization"),
                useful_utilization=summary.get("useful_utilization"),
                share_p95_wait_hours=p95_of(summary.get("shares"), share),
                is_baseline=run is baseline,
            )
        )
    return StudyHeadline(study=study, share=share, policies=policies)


def headlines(studies: Iterable[Study]) -> list[tuple[StudyHeadline, str]]:
    """Each study's headline and page address, with one query for all their runs."""
    studies = list(studies)
    runs: dict[int, list[dict]] = defaultdict(list)
    for row in Run.objects.filter(study__in=studies).order_by("id").values(*RUN_VALUES):
        runs[row["study_id"]].append(row)
    return [(headline(study, runs[study.pk]), study_url(study.pk)) for study in studies]
