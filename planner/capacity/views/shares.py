"""The policy page's shares, pool capacity and settings: each saved only when the engine's
validator takes the whole policy with it; an error goes next to the field that caused it."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import get_object_or_404, redirect

from planner.capacity.forms import CapacityForm, PolicySettingsForm, ShareForm
from planner.capacity.models import Policy, Share, ShareSpec
from planner.capacity.views.context import load, policy_page, render_page, type_names_of
from planner.capacity.views.edits import store_edit


def store_share(share: Share, spec: ShareSpec) -> None:
    """Check ``spec`` in its policy (the engine decides) and store it; raises ValidationError."""
    with transaction.atomic():
        share.check_in_policy(spec)
        share.apply(spec)
        share.save()
        share.set_limits(spec)


def bound_share_form(request, policy: Policy, kept: ShareSpec | None = None) -> ShareForm:
    stored = load(policy)
    return ShareForm(
        request.POST,
        instance_types=stored.type_names,
        cohort_names=stored.cohort_names,
        kept=kept,
        prefix="share",
    )


def save_share(request, policy: Policy):
    share = get_object_or_404(
        Share.objects.select_related("cohort"), pk=request.POST.get("share"), policy=policy
    )
    form = bound_share_form(request, policy, kept=share.spec())

    def store() -> str:
        store_share(share, form.spec())
        return f"Share {share.name} saved."

    return store_edit(request, policy, form, store, edit=f"share-{share.pk}", form_name="share_form")


def add_share(request, policy: Policy):
    form = bound_share_form(request, policy)

    def store() -> str:
        last = policy.shares.order_by("-position").first()
        share = Share(policy=policy, position=(last.position + 1) if last else 0)
        store_share(share, form.spec())
        return f"Share {share.name} added."

    return store_edit(request, policy, form, store, edit="new", form_name="share_form")


def delete_share(request, policy: Policy):
    share = get_object_or_404(Share, pk=request.POST.get("share"), policy=policy)
    others = policy.shares.select_related("cohort").exclude(pk=share.pk).order_by("position", "id")
    remaining = [s.spec() for s in others]
    try:
        policy.validate_with(shares=remaining)
    except ValidationError as error:
        messages.error(request, f"Share {share.name} was not deleted: {' '.join(error.messages)}")
        return redirect(policy_page(policy))
    share.delete()
    messages.success(request, f"Share {share.name} deleted.")
    return redirect(policy_page(policy))


def save_capacity(request, policy: Policy):
    form = CapacityForm(request.POST, instance_types=type_names_of(policy), prefix="capacity")

    def store() -> str:
        capacity = form.capacity()
        with transaction.atomic():
            policy.pool.check_capacity(capacity)
            policy.pool.set_capacity(capacity)
        return f"Capacity of pool {policy.pool.name} saved."

    return store_edit(request, policy, form, store, edit="capacity", form_name="capacity_form")


def save_settings(request, policy: Policy):
    form = PolicySettingsForm(request.POST, instance=policy, prefix="settings")
    if form.is_valid():
        form.save()
        messages.success(request, f"Policy {policy.name} saved.")
        return redirect(policy_page(policy, "settings"))
    policy.refresh_from_db()
    return render_page(request, policy, status=400, edit="settings", settings_form=form)
