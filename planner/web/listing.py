"""What the lists show: work in progress stays on its own page. A sweep's variants that were not
kept appear only on the sweep's page (not in policy lists, pool counts or the study form), and a
sweep's study only there too (not in the overview or the study list). One place for both rules.
"""

from __future__ import annotations

from django.db.models import Count, Exists, OuterRef, Q, QuerySet

from planner.studies.models import Run, RunStatus, Study

UNKEPT_VARIANT = Q(sweep_variants__isnull=False, sweep_variants__kept=False)


def listed_policies(policies: QuerySet) -> QuerySet:
    """Policies without those a sweep made and nobody kept."""
    return policies.exclude(UNKEPT_VARIANT)


def listed_studies(studies: QuerySet) -> QuerySet:
    """Studies without the ones sweeps run (their sweep's page shows them)."""
    return studies.filter(sweep__isnull=True)


def searchable_studies() -> QuerySet:
    """Listed studies with at least one succeeded run, newest first: those a job can be looked up
    in (the menu's "Find a job", the overview's job box, the first screens)."""
    done = Run.objects.filter(study=OuterRef("pk"), status=RunStatus.SUCCEEDED)
    return (
        listed_studies(Study.objects.all())
        .filter(Exists(done))
        .select_related("trace")
        .defer("trace__summary")
        .order_by("-created_at", "-id")
    )


def listed_policy_count() -> Count:
    """For ``Pool.objects.annotate(policy_count=...)``: its policies, unkept variants left out."""
    return Count(
        "policies",
        filter=~Q(policies__sweep_variants__isnull=False, policies__sweep_variants__kept=False),
        distinct=True,
    )
