"""Variants of a policy from its page: a copy under a new name, or a preset's one-click variant."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST

from planner.capacity.forms import VariantNameForm
from planner.capacity.models import Policy
from planner.capacity.views.context import policy_page, render_page
from planner.web.access import editor_required
from planner.web.variants import PRESETS, make_variant


@require_POST
@editor_required
def policy_duplicate(request, pk: int):
    policy = get_object_or_404(Policy, pk=pk)
    form = VariantNameForm(request.POST)
    if not form.is_valid():
        return render_page(request, policy, status=400, duplicate_form=form)
    try:
        variant = policy.duplicate(form.cleaned_data["name"])
    except ValidationError as error:
        messages.error(request, " ".join(error.messages))
        return redirect(policy_page(policy, "variants"))
    messages.success(request, f"{variant.name} is a copy of {policy.name}: change its shares below.")
    return redirect(policy_page(variant))


@require_POST
@editor_required
def policy_preset(request, pk: int):
    policy = get_object_or_404(Policy, pk=pk)
    preset = PRESETS.get(request.POST.get("preset", ""))
    if preset is None:
        messages.error(request, "Unknown preset: pick one of the buttons.")
        return redirect(policy_page(policy, "variants"))
    try:
        variant = make_variant(policy, preset)
    except ValidationError as error:
        messages.error(
            request, f"The {preset.label} variant is not a valid policy: {' '.join(error.messages)}"
        )
        return redirect(policy_page(policy, "variants"))
    messages.success(request, f"Created {variant.name}: {preset.explanation}.")
    return redirect(policy_page(variant))
