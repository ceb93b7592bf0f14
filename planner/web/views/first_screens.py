"""What each role's first screen on the overview answers first.

- finance (and admin): what the pool's idle and stranded capacity cost under each policy of the
  newest priced study, read from each run's pool and share totals (no per-job data);
- everyone, a team member first: "find my job" (the menu's job finder) and the forecasts, when the
  forecasts app answers at /forecasts/.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.urls import Resolver404, resolve

from planner.studies.models import Run, RunStatus, Study
from planner.web.listing import searchable_studies

STUDIES_LOOKED_AT = 20  # the newest studies searched for one with prices
FORECASTS_PATH = "/forecasts/"


@dataclass(frozen=True)
class PolicyMoney:
    run_id: int
    policy: str
    is_baseline: bool
    pool_usd: float
    idle_usd: float
    stranded_usd: float

    @property
    def idle_fraction(self) -> float | None:
        return self.idle_usd / self.pool_usd if self.pool_usd > 0 else None


@dataclass(frozen=True)
class StudyMoney:
    study: Study
    policies: list[PolicyMoney]
    unpriced_newer: int  # newer studies left out because their instance types have no price

    @property
    def baseline(self) -> PolicyMoney:
        return next((p for p in self.policies if p.is_baseline), self.policies[0])

    @property
    def least_idle(self) -> PolicyMoney:
        return min(self.policies, key=lambda p: (p.idle_usd + p.stranded_usd, p.run_id))


def _money_rows(study: Study) -> list[PolicyMoney]:
    rows = (
        Run.objects.filter(study=study, status=RunStatus.SUCCEEDED)
        .order_by("id")
        .values("id", "policy_name", "policy_id", "metrics__pool", "metrics__shares")
    )
    out = []
    for row in rows:
        pool = row["metrics__pool"] or {}
        shares = [s for s in row["metrics__shares"] or [] if isinstance(s, dict)]
        out.append(
            PolicyMoney(
                run_id=row["id"],
                policy=row["policy_name"],
                is_baseline=row["policy_id"] is not None and row["policy_id"] == study.baseline_id,
                pool_usd=float(pool.get("capacity_usd") or 0.0),
                idle_usd=float(pool.get("idle_usd") or 0.0),
                stranded_usd=float(sum(float(s.get("stranded_usd") or 0.0) for s in shares)),
            )
        )
    return out


def newest_priced_study() -> StudyMoney | None:
    """The newest study (not a sweep's) with a finished replay whose pool has a price; None if
    no such study. Studies of unpriced pools ($0 everywhere) are skipped and counted."""
    # every study before the one returned was skipped, so its index is the count
    for skipped, study in enumerate(searchable_studies()[:STUDIES_LOOKED_AT]):
        rows = _money_rows(study)
        if rows and any(row.pool_usd > 0 for row in rows):
            return StudyMoney(study, rows, skipped)
    return None


def forecasts_url() -> str | None:
    try:
        resolve(FORECASTS_PATH)
    except Resolver404:
        return None
    return FORECASTS_PATH
