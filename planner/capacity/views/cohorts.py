"""The policy page's tree of cohorts (SEMANTICS.md section 13): add, edit (rename, parent, quota,
limits, weight) and remove a cohort. Each edit is checked with the whole policy by the engine's
validator before anything is stored; its error goes next to the field it names."""

from __future__ import annotations

from dataclasses import replace

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect

from planner.capacity.forms import CohortForm
from planner.capacity.models import Cohort, CohortSpec, InstanceType, Policy, renamed_in_tree
from planner.capacity.views.context import load, policy_page
from planner.capacity.views.edits import store_edit


def bound_cohort_form(request, policy: Policy) -> CohortForm:
    stored = load(policy)
    return CohortForm(
        request.POST, instance_types=stored.type_names, cohort_names=stored.cohort_names, prefix="cohort"
    )


def check_cohort(policy: Policy, index: int, spec: CohortSpec, *, stored_name: str | None) -> None:
    """Validate the policy with cohort ``index`` replaced by ``spec`` (appended when ``index`` is
    the length of the tree); a rename carries its children and shares with it."""
    cohorts, shares = policy.cohort_specs(), policy.share_specs()
    if stored_name is not None:
        cohorts, shares = renamed_in_tree(cohorts, shares, stored_name, spec.name)
    cohorts = [*cohorts[:index], spec, *cohorts[index + 1 :]]
    policy.validate_with(shares=shares, cohorts=cohorts, edited_cohort=index)


def store_cohort(cohort: Cohort, spec: CohortSpec) -> None:
    """Store a checked cohort: its own fields, its parent by name and its per-type rows."""
    cohort.name = spec.name
    cohort.fair_weight = spec.fair_weight
    cohort.parent = Cohort.objects.get(policy=cohort.policy, name=spec.parent) if spec.parent else None
    cohort.save()
    types = {t.name: t for t in InstanceType.objects.filter(name__in=spec.type_names())}
    cohort.limits.all().delete()
    cohort.limits.bulk_create(cohort.limit_rows(spec, types))


def save_cohort(request, policy: Policy):
    cohort = get_object_or_404(Cohort, pk=request.POST.get("cohort"), policy=policy)
    form = bound_cohort_form(request, policy)

    def store() -> str:
        spec = form.spec()
        index = list(policy.cohorts.values_list("pk", flat=True)).index(cohort.pk)
        with transaction.atomic():
            check_cohort(policy, index, spec, stored_name=cohort.name)
            store_cohort(cohort, spec)
        return f"Cohort {spec.name} saved."

    return store_edit(request, policy, form, store, edit=f"cohort-{cohort.pk}", form_name="cohort_form")


def add_cohort(request, policy: Policy):
    form = bound_cohort_form(request, policy)

    def store() -> str:
        spec = form.spec()
        with transaction.atomic():
            check_cohort(policy, policy.cohorts.count(), spec, stored_name=None)
            last = policy.cohorts.order_by("-position").first()
            store_cohort(Cohort(policy=policy, position=(last.position + 1) if last else 0), spec)
        return f"Cohort {spec.name} added."

    return store_edit(request, policy, form, store, edit="new-cohort", form_name="cohort_form")


def delete_cohort(request, policy: Policy):
    """Remove a cohort; its shares and cohorts move up to its parent (its own quota is then the
    pool's unassigned capacity), if the policy stays valid so."""
    cohort = get_object_or_404(
        Cohort.objects.select_related("parent"), pk=request.POST.get("cohort"), policy=policy
    )
    parent = cohort.parent.name if cohort.parent_id else None
    cohorts = [c for c in policy.cohort_specs() if c.name != cohort.name]
    cohorts = [replace(c, parent=parent) if c.parent == cohort.name else c for c in cohorts]
    shares = [replace(s, cohort=parent) if s.cohort == cohort.name else s for s in policy.share_specs()]
    try:
        policy.validate_with(shares=shares, cohorts=cohorts)
    except ValidationError as error:
        messages.error(request, f"Cohort {cohort.name} was not removed: {' '.join(error.messages)}")
        return redirect(policy_page(policy))
    with transaction.atomic():
        cohort.children.update(parent=cohort.parent)
        cohort.shares.update(cohort=cohort.parent)
        cohort.delete()
    where = f"cohort {parent}" if parent else "the root"
    messages.success(request, f"Cohort {cohort.name} removed; what it held is now in {where}.")
    return redirect(policy_page(policy))
