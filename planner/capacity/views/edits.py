"""The one way the policy page handles an edit form (a share, a cohort, the pool's capacity): the
form checked, then stored; an error goes next to the field it names and the page comes back (400)."""

from __future__ import annotations

from collections.abc import Callable

from django import forms
from django.contrib import messages
from django.core.exceptions import ValidationError
from django.shortcuts import redirect

from planner.capacity.models import Policy
from planner.capacity.views.context import policy_page, render_page


def store_edit(
    request, policy: Policy, form: forms.Form, store: Callable[[], str], *, edit: str, form_name: str
):
    """When ``form`` is valid, ``store()`` checks and stores it (raising ValidationError if the policy
    refuses it) and returns what the page then says; else the page again with ``form`` open at ``edit``."""
    if form.is_valid():
        try:
            said = store()
        except ValidationError as error:
            form.place(error)
        else:
            messages.success(request, said)
            return redirect(policy_page(policy))
    return render_page(request, policy, status=400, edit=edit, **{form_name: form})
