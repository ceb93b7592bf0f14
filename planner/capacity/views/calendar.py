"""The policy page's calendar (SEMANTICS.md section 9): add, edit and delete a dated change, and add
a training plan; an error goes next to the row that caused it."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.db import transaction
from django.shortcuts import redirect

from planner.capacity.forms import CalendarRowForm, TrainingPlanForm
from planner.capacity.models import CalendarError, ChangeSpec, Policy, describe_time, duplicate_change_rows
from planner.capacity.views.context import policy_page, render_page, type_names_of


def calendar_of(policy: Policy) -> tuple[list, list[ChangeSpec]]:
    rows = list(policy.changes.select_related("share", "instance_type"))
    return rows, [row.spec() for row in rows]


def check_calendar(policy: Policy, rows: list, specs: list[ChangeSpec], edited: int | None):
    """Validate a proposed calendar; ``(None, {})`` when it holds, else the message for the edited
    row (``edited``: its index in ``specs``) and, per stored row id, the errors of other rows."""
    duplicates = duplicate_change_rows(specs)
    for row, earlier in duplicates.items():
        if edited in (row, earlier):
            spec = specs[row]
            return f"{spec.target()} already has {spec.instance_type} set at this time: edit that row", {}
    try:
        policy.validate_with(changes=specs)
    except CalendarError as error:
        # The engine names the last row of the instant that breaks section 1: when that instant
        # is the edited row's own, the edit is what broke it and the message goes there.
        same_instant = edited is not None and specs[error.row].time == specs[edited].time
        if error.row == edited or error.row >= len(rows) or same_instant:
            return " ".join(error.messages), {}
        return (
            "another change is no longer valid with this one: see the message under it",
            {rows[error.row].pk: error.messages},
        )
    except ValidationError as error:  # about the calendar as a whole: its length
        return " ".join(error.messages), {}
    return None, {}


def save_change(request, policy: Policy):
    """Add a calendar row, or save an edited one; an error goes next to the row that caused it."""
    editing = request.POST.get("action") == "save-change"
    rows, specs = calendar_of(policy)
    change = None
    if editing:
        change = next((row for row in rows if str(row.pk) == request.POST.get("change", "")), None)
        if change is None:
            messages.error(request, "That change is gone: reload the page.")
            return redirect(policy_page(policy, "calendar"))
    share_names = list(policy.shares.order_by("position", "id").values_list("name", flat=True))
    form = CalendarRowForm(
        request.POST, share_names=share_names, instance_types=type_names_of(policy), prefix="change"
    )
    edit = f"change-{change.pk}" if change else "new-change"
    row_errors: dict[int, list[str]] = {}
    if form.is_valid():
        spec = form.spec()
        if change is not None:
            edited = rows.index(change)
            specs[edited] = spec
        else:
            edited = len(specs)
            specs.append(spec)
        problem, row_errors = check_calendar(policy, rows, specs, edited)
        if problem is None:
            with transaction.atomic():
                policy.replace_changes(specs)
            messages.success(request, f"Change at {describe_time(spec.time)} saved.")
            return redirect(policy_page(policy, "calendar"))
        form.add_error(None, problem)
    return render_page(request, policy, status=400, edit=edit, change_form=form, row_errors=row_errors)


def delete_change(request, policy: Policy):
    rows, specs = calendar_of(policy)
    change = next((row for row in rows if str(row.pk) == request.POST.get("change", "")), None)
    if change is None:
        return redirect(policy_page(policy, "calendar"))
    index = rows.index(change)
    remaining_rows = rows[:index] + rows[index + 1 :]
    problem, row_errors = check_calendar(policy, remaining_rows, specs[:index] + specs[index + 1 :], None)
    if problem is not None or row_errors:
        messages.error(
            request,
            f"The change at {describe_time(change.time)} was not deleted: without it, "
            "the change marked below would not be valid.",
        )
        return render_page(request, policy, status=400, row_errors=row_errors)
    change.delete()
    messages.success(request, f"Change at {describe_time(change.time)} deleted.")
    return redirect(policy_page(policy, "calendar"))


def add_training_plan(request, policy: Policy):
    share_names = list(policy.shares.order_by("position", "id").values_list("name", flat=True))
    form = TrainingPlanForm(
        request.POST, share_names=share_names, instance_types=type_names_of(policy), prefix="plan"
    )
    if form.is_valid():
        plan = form.plan()
        try:
            policy.add_training_plan(plan)
        except ValidationError as error:
            place_plan_errors(form, error)
        else:
            messages.success(
                request,
                f"Training plan added: {plan.instances} x {plan.instance_type} for {plan.share} "
                f"from {describe_time(plan.start)} to {describe_time(plan.end)}.",
            )
            return redirect(policy_page(policy, "calendar"))
    return render_page(request, policy, status=400, plan_form=form)


def place_plan_errors(form: TrainingPlanForm, error: ValidationError) -> None:
    """The plan's own fields get their errors; the calendar's (a row it would break) go on top."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for key, messages_ in error.message_dict.items():
        for message in messages_:
            form.add_error(key if key in form.fields else None, message)
