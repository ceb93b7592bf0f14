"""The policy list and the policy page: a GET shows it, a POST runs the edit its ``action`` names
(admins only)."""

from __future__ import annotations

from django.contrib import messages
from django.db.models import Count
from django.shortcuts import get_object_or_404, redirect, render

import planner.capacity.views.calendar as calendar
import planner.capacity.views.cohorts as cohorts
import planner.capacity.views.shares as shares
from planner.capacity.models import Policy, Pool
from planner.capacity.views.context import policy_page, render_page
from planner.web.access import check_editor, reader_required
from planner.web.listing import listed_policies
from planner.web.query import query_id

ACTIONS = {
    "save-share": shares.save_share,
    "add-share": shares.add_share,
    "delete-share": shares.delete_share,
    "save-capacity": shares.save_capacity,
    "save-settings": shares.save_settings,
    "save-cohort": cohorts.save_cohort,
    "add-cohort": cohorts.add_cohort,
    "delete-cohort": cohorts.delete_cohort,
    "add-change": calendar.save_change,
    "save-change": calendar.save_change,
    "delete-change": calendar.delete_change,
    "add-training-plan": calendar.add_training_plan,
}


@reader_required
def policy_list(request):
    policies = listed_policies(Policy.objects.select_related("pool", "parent")).annotate(
        share_count=Count("shares", distinct=True), study_count=Count("runs__study", distinct=True)
    )
    pools = Pool.objects.all()
    pool_id = query_id(request.GET, "pool")
    if pool_id:
        policies = policies.filter(pool_id=pool_id)
    return render(request, "web/policy_list.html", {"policies": policies, "pools": pools, "pool_id": pool_id})


@reader_required
def policy_detail(request, pk: int):
    policy = get_object_or_404(Policy.objects.select_related("pool", "parent"), pk=pk)
    if request.method != "POST":
        return render_page(request, policy, edit=request.GET.get("edit", ""))
    check_editor(request)
    action = request.POST.get("action", "")
    if action not in ACTIONS:
        messages.error(request, f"Unknown action {action!r}: reload the page and try again.")
        return redirect(policy_page(policy))
    return ACTIONS[action](request, policy)
