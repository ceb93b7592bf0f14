"""The headline of a study, read from its runs' metrics only: utilization per policy and the p95
wait of the share that waits longest under the baseline (the share a reader worries about first)."""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import NoReverseMatch, reverse

from planner.studies.models import Run, RunStatus, Study


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


def share_p95(metrics: dict | None, share: str | None) -> float | None:
    if not metrics or share is None:
        return None
    for row in metrics.get("shares", []):
        if row.get("name") == share:
            p95 = (row.get("wait_seconds") or {}).get("p95")
            return None if p95 is None else p95 / 3600
    return None


def longest_waiting_share(metrics: dict | None) -> str | None:
    rows = [
        r for r in (metrics or {}).get("shares", []) if (r.get("wait_seconds") or {}).get("p95") is not None
    ]
    if not rows:
        return None
    return max(rows, key=lambda r: r["wait_seconds"]["p95"])["name"]


def headline(study: Study) -> StudyHeadline:
    runs: list[Run] = list(study.runs.all())
    baseline = next((r for r in runs if r.policy_id == study.baseline_id), runs[0] if runs else None)
    share = longest_waiting_share(baseline.metrics if baseline else None)
    if share is None:
        share = next((longest_waiting_share(r.metrics) for r in runs if r.metrics), None)
    policies = []
    for run in runs:
        summary = (run.metrics or {}).get("summary", {}) if run.status == RunStatus.SUCCEEDED else {}
        policies.append(
            PolicyHeadline(
                policy=run.policy_name,
                status=run.status,
                progress=run.progress,
                utilization=summary.get("utilization"),
                useful_utilization=summary.get("useful_utilization"),
                share_p95_wait_hours=share_p95(run.metrics, share) if summary else None,
                is_baseline=run is baseline,
            )
        )
    return StudyHeadline(study=study, share=share, policies=policies)
