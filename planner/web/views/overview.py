"""The first screen: pools and their capacity, the latest studies with their headline, the traces."""

from __future__ import annotations

from django.db.models import Prefetch
from django.shortcuts import render

from planner.accounts.permissions import can_read_finance
from planner.capacity.models import Pool, PoolCapacity
from planner.studies.models import Study
from planner.traces.models import Trace
from planner.web.access import reader_required
from planner.web.listing import listed_policy_count, listed_studies, searchable_studies
from planner.web.views.first_screens import forecasts_url, newest_priced_study
from planner.web.views.headline import headlines

LATEST_STUDIES = 5
LATEST_TRACES = 8


@reader_required
def overview(request):
    pools = Pool.objects.prefetch_related(
        Prefetch("capacities", queryset=PoolCapacity.objects.select_related("instance_type"))
    ).annotate(policy_count=listed_policy_count())
    pool_rows = [
        {
            "pool": pool,
            "capacities": list(pool.capacities.all()),
            "gpus": sum(c.count * c.instance_type.gpus for c in pool.capacities.all()),
            "policy_count": pool.policy_count,
        }
        for pool in pools
    ]
    studies = listed_studies(Study.objects.select_related("trace").defer("trace__summary"))[:LATEST_STUDIES]
    traces = Trace.objects.ready().values("id", "name", "job_count", "created_at", "summary__gpu_hours")[
        :LATEST_TRACES
    ]
    return render(
        request,
        "web/overview.html",
        {
            "pools": pool_rows,
            "headlines": headlines(studies),
            "traces": traces,
            "trace_count": Trace.objects.ready().count(),
            "study_count": listed_studies(Study.objects.all()).count(),
            # each role's first question (planner/web/views/first_screens.py)
            "money": newest_priced_study() if can_read_finance(request.user) else None,
            "job_studies": list(searchable_studies()[:50]),
            "forecasts_url": forecasts_url(),
        },
    )
