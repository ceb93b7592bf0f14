"""Policies: the list, and the policy page with its shares editor (one table: the pool's capacity,
then one row per share, a row turned into a form in place for admins), its calendar of dated
changes (a table edited the same way, and the training-plan helper), the quota charts, the
studies that used it, "duplicate as variant" and the one-click presets."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Count, Max, Min, Prefetch
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from planner.accounts.permissions import can_edit
from planner.capacity.models import (
    CalendarError,
    ChangeSpec,
    InstanceType,
    Policy,
    Pool,
    PoolCapacity,
    Share,
    ShareLimit,
    ShareSpec,
    describe_time,
    duplicate_change_rows,
)
from planner.studies.models import Study
from planner.web import charts
from planner.web.access import EDIT_DENIED, editor_required, reader_required
from planner.web.forms import (
    CalendarRowForm,
    CapacityForm,
    PolicySettingsForm,
    ShareForm,
    TrainingPlanForm,
    VariantNameForm,
)
from planner.web.listing import listed_policies
from planner.web.query import parse_id, query_id
from planner.web.variants import PRESETS, make_variant
from planner.web.views.headline import study_url
from scheduling.capacity_plans import capacity_steps

SHARE_FORM_ID = "share-form"
CAPACITY_FORM_ID = "capacity-form"
CHANGE_FORM_ID = "change-form"
# The calendar table shows its first rows and counts the rest; the step chart draws its first
# instants. A page never renders every row of a long calendar (10,000 changes took 30 s).
CALENDAR_ROWS_SHOWN = 100
CALENDAR_CHART_INSTANTS = 2_000


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


def instance_types_of(
    policy: Policy, capacity: list[PoolCapacity], shares: list[Share]
) -> list[InstanceType]:
    """The pool's instance types, then any other type a share names."""
    types = {c.instance_type.name: c.instance_type for c in capacity}
    for share in shares:
        for limit in share.limits.all():
            types.setdefault(limit.instance_type.name, limit.instance_type)
    return list(types.values())


def limit_text(values: dict | None, type_names: list[str], empty: str) -> str:
    if not values:
        return empty
    return ", ".join(f"{values[t]:,} {t}" for t in type_names if t in values)


def share_rows(shares: list[Share], type_names: list[str]) -> list[dict]:
    rows = []
    for share in shares:
        spec = share.spec()
        borrows = spec.strategy == "LEND_AND_BORROW"
        if not borrows:
            borrow = "—"
        elif spec.borrowing_limit:
            borrow = "at most " + limit_text(spec.borrowing_limit, type_names, "")
        elif spec.borrow_limit_percent is not None and spec.borrow_limit_percent >= 0:
            borrow = f"{spec.borrow_limit_percent:,g} % of quota"
        else:
            borrow = "unlimited"
        lend = (
            "—"
            if spec.strategy == "RESERVE"
            else limit_text(spec.lending_limit, type_names, "all idle quota")
        )
        rows.append(
            {
                "share": share,
                "spec": spec,
                "quotas": [spec.capacity.get(t, 0) for t in type_names],
                "borrow": borrow,
                "lend": lend,
            }
        )
    return rows


def quota_figure(shares: list[Share], types: list[InstanceType], capacity: dict[str, int]) -> dict:
    """Quota per share in GPUs (instances x GPUs per instance), with the unassigned rest."""
    gpus = {t.name: t.gpus for t in types}
    names, values = [], []
    for share in shares:
        spec = share.spec()
        names.append(share.name)
        values.append(sum(count * gpus.get(t, 1) for t, count in spec.capacity.items()))
    pool_gpus = sum(count * gpus.get(t, 1) for t, count in capacity.items())
    colors = charts.share_colors(names)
    traces = [
        charts.bar(
            [value],
            [name],
            name=name,
            color=colors[name],
            unit="GPUs",
            text=[charts.gpus_text(value)],
            orientation="h",
        )
        for name, value in zip(names, values, strict=True)
    ]
    unassigned = pool_gpus - sum(values)
    if unassigned > 0:
        traces.append(
            charts.bar(
                [unassigned],
                ["unassigned"],
                name="unassigned (lent to anyone)",
                color="#bbbbbb",
                unit="GPUs",
                text=[charts.gpus_text(unassigned)],
                pattern=charts.state_pattern("unassigned"),
                orientation="h",
            )
        )
    fig = charts.figure(
        traces,
        title=f"Quota per share (pool: {charts.gpus_text(pool_gpus)})",
        x_title="quota (GPUs)",
        y_title="",
        height=max(160, 60 + 34 * len(traces)),
        show_legend=False,
    )
    fig["layout"]["yaxis"]["autorange"] = "reversed"
    fig["layout"]["yaxis"].pop("tickformat")
    return fig


def policy_context(request, policy: Policy, *, edit: str = "", **bound) -> dict:
    """The policy page; ``bound`` holds forms already filled in (with their errors)."""
    capacity = list(policy.pool.capacities.select_related("instance_type"))
    shares = list(
        policy.shares.order_by("position", "id").prefetch_related(
            Prefetch("limits", queryset=ShareLimit.objects.select_related("instance_type"))
        )
    )
    types = instance_types_of(policy, capacity, shares)
    type_names = [t.name for t in types]
    capacity_counts = {c.instance_type.name: c.count for c in capacity}
    editable = can_edit(request.user)
    share_form = bound.get("share_form")
    capacity_form = bound.get("capacity_form")
    if editable and edit.startswith("share-") and share_form is None:
        share = next((s for s in shares if f"share-{s.pk}" == edit), None)
        if share is not None:
            share_form = ShareForm(
                initial=ShareForm.initial_from(share.spec(), type_names),
                instance_types=type_names,
                prefix="share",
            )
    if editable and edit == "new" and share_form is None:
        share_form = ShareForm(
            initial={"strategy": "LEND_AND_BORROW", "in_share_preemption": "never", "reclaim": "any"},
            instance_types=type_names,
            prefix="share",
        )
    if editable and edit == "capacity" and capacity_form is None:
        capacity_form = CapacityForm(
            initial={f"count_{i}": capacity_counts.get(t, 0) for i, t in enumerate(type_names)},
            instance_types=type_names,
            prefix="capacity",
        )
    calendar_count = policy.changes.count()
    calendar = list(policy.changes.select_related("share", "instance_type")[:CALENDAR_ROWS_SHOWN])
    if edit.startswith("change-") and not any(f"change-{c.pk}" == edit for c in calendar):
        # A row past the ones shown is opened for editing from a link: show it too, last.
        calendar += list(policy.changes.select_related("share", "instance_type").filter(pk=_id_of(edit)))
    share_names = [share.name for share in shares]
    change_form = bound.get("change_form")
    if editable and edit.startswith("change-") and change_form is None:
        change = next((c for c in calendar if f"change-{c.pk}" == edit), None)
        if change is not None:
            change_form = CalendarRowForm(
                initial=CalendarRowForm.initial_from(change.spec()),
                share_names=share_names,
                instance_types=type_names,
                prefix="change",
            )
    if editable and edit == "new-change" and change_form is None:
        change_form = CalendarRowForm(
            initial={"instance_type": type_names[0] if type_names else ""},
            share_names=share_names,
            instance_types=type_names,
            prefix="change",
        )
    plan_form = bound.get("plan_form")
    if editable and plan_form is None:
        plan_form = TrainingPlanForm(share_names=share_names, instance_types=type_names, prefix="plan")
    for form, form_id in (
        (share_form, SHARE_FORM_ID),
        (capacity_form, CAPACITY_FORM_ID),
        (change_form, CHANGE_FORM_ID),
    ):
        if form is not None:
            for field in form.fields.values():
                field.widget.attrs["form"] = form_id
    settings_form = bound.get("settings_form")
    if editable and edit == "settings" and settings_form is None:
        settings_form = PolicySettingsForm(instance=policy, prefix="settings")
    rows = share_rows(shares, type_names)
    colors = charts.share_colors(share.name for share in shares)
    for row in rows:
        row["color"] = colors[row["share"].name]
        row["editing"] = share_form is not None and edit == f"share-{row['share'].pk}"
    studies = (
        Study.objects.filter(runs__policy=policy)
        .select_related("trace")
        .defer("trace__summary")
        .distinct()
        .order_by("-created_at")
    )
    return {
        "policy": policy,
        "pool": policy.pool,
        "types": types,
        "capacity_counts": [capacity_counts.get(t, 0) for t in type_names],
        "pool_gpus": sum(capacity_counts.get(t.name, 0) * t.gpus for t in types),
        "quota_totals": [sum(s.spec().capacity.get(t, 0) for s in shares) for t in type_names],
        "rows": rows,
        "calendar_rows": calendar_rows(calendar, edit, bound.get("row_errors", {}), change_form),
        "calendar_count": calendar_count,
        "calendar_shown": min(len(calendar), CALENDAR_ROWS_SHOWN),
        "calendar_hidden": max(0, calendar_count - min(len(calendar), CALENDAR_ROWS_SHOWN)),
        "change_form": change_form,
        "change_form_id": CHANGE_FORM_ID,
        "plan_form": plan_form,
        "calendar_chart": calendar_figure(policy, calendar_count),
        "editable": editable,
        "edit": edit,
        "share_form": share_form,
        "capacity_form": capacity_form,
        "settings_form": settings_form,
        "share_form_id": SHARE_FORM_ID,
        "capacity_form_id": CAPACITY_FORM_ID,
        "pool_policy_count": listed_policies(policy.pool.policies.all()).count(),
        "quota_chart": quota_figure(shares, types, capacity_counts),
        "studies": [(study, study_url(study.pk)) for study in studies],
        "variants": policy.variants.all(),
        "presets": PRESETS.values(),
        "duplicate_form": bound.get("duplicate_form")
        or VariantNameForm(initial={"name": f"{policy.name} variant"}),
    }


def calendar_rows(calendar: list, edit: str, row_errors: dict[int, list[str]], change_form) -> list[dict]:
    """The calendar table's rows, in time order; ``row_errors`` holds, per row id, the errors
    the engine found in it after an edit of another row."""
    return [
        {
            "change": change,
            "time": describe_time(change.time),
            "target": "the pool" if change.share is None else f"share {change.share.name}",
            "editing": change_form is not None and edit == f"change-{change.pk}",
            "errors": row_errors.get(change.pk, []),
        }
        for change in calendar
    ]


def calendar_figure(policy: Policy, calendar_count: int) -> dict:
    """The pool's capacity and each share's quota in GPUs as step lines over the calendar (from an
    hour before its first change to an hour after its last, so that both ends show; a calendar of
    more than CALENDAR_CHART_INSTANTS instants is drawn up to that instant and the title says so)."""
    empty = charts.figure([], title="Capacity and quotas over time", x_title="", y_title="GPUs")
    if not calendar_count:
        return empty
    try:
        engine = policy.engine_policy()
    except ValidationError:
        return empty
    bounds = policy.changes.aggregate(first=Min("time"), last=Max("time"))
    first, last = bounds["first"], bounds["last"]
    title = "Capacity and quotas over time (GPUs)"
    instants = sorted({change.time for change in engine.changes})
    if len(instants) > CALENDAR_CHART_INSTANTS:
        last = instants[CALENDAR_CHART_INSTANTS - 1]
        title += f": the first {CALENDAR_CHART_INSTANTS:,} of {len(instants):,} instants"
    margin = max(3600.0, (last - first) * 0.1)
    start, end = max(0.0, first - margin), last + margin
    steps = capacity_steps(engine, start, end)
    return charts.capacity_steps_figure(steps, title=title, epoch=first >= 1e9)


def _id_of(edit: str) -> int:
    """The row id in ``?edit=change-<id>``; 0 (no row) for anything else."""
    return parse_id(edit.removeprefix("change-")) or 0


def policy_page(policy: Policy, anchor: str = "shares") -> str:
    return reverse("web:policy", args=[policy.pk]) + f"#{anchor}"


@reader_required
def policy_detail(request, pk: int):
    policy = get_object_or_404(Policy.objects.select_related("pool", "parent"), pk=pk)
    if request.method != "POST":
        return render(
            request,
            "web/policy_detail.html",
            policy_context(request, policy, edit=request.GET.get("edit", "")),
        )
    if not can_edit(request.user):
        raise PermissionDenied(EDIT_DENIED)
    action = request.POST.get("action", "")
    handlers = {
        "save-share": save_share,
        "add-share": add_share,
        "delete-share": delete_share,
        "save-capacity": save_capacity,
        "save-settings": save_settings,
        "add-change": save_change,
        "save-change": save_change,
        "delete-change": delete_change,
        "add-training-plan": add_training_plan,
    }
    if action not in handlers:
        messages.error(request, f"Unknown action {action!r}: reload the page and try again.")
        return redirect(policy_page(policy))
    return handlers[action](request, policy)


def type_names_of(policy: Policy) -> list[str]:
    capacity = list(policy.pool.capacities.select_related("instance_type"))
    shares = list(policy.shares.prefetch_related("limits__instance_type"))
    return [t.name for t in instance_types_of(policy, capacity, shares)]


def store_share(share: Share, spec: ShareSpec) -> None:
    """Check ``spec`` in its policy (the engine decides) and store it; raises ValidationError."""
    with transaction.atomic():
        share.check_in_policy(spec)
        share.name = spec.name
        share.strategy = spec.strategy
        share.borrow_limit_percent = spec.borrow_limit_percent
        share.in_share_preemption = spec.in_share_preemption
        share.reclaim = spec.reclaim
        share.fair_weight = spec.fair_weight
        share.save()
        share.set_limits(spec)


def save_share(request, policy: Policy):
    share = get_object_or_404(Share, pk=request.POST.get("share"), policy=policy)
    form = ShareForm(request.POST, instance_types=type_names_of(policy), prefix="share")
    if form.is_valid():
        try:
            store_share(share, form.spec())
        except ValidationError as error:
            form.place(error)
        else:
            messages.success(request, f"Share {share.name} saved.")
            return redirect(policy_page(policy))
    context = policy_context(request, policy, edit=f"share-{share.pk}", share_form=form)
    return render(request, "web/policy_detail.html", context, status=400)


def add_share(request, policy: Policy):
    form = ShareForm(request.POST, instance_types=type_names_of(policy), prefix="share")
    if form.is_valid():
        last = policy.shares.order_by("-position").first()
        share = Share(policy=policy, position=(last.position + 1) if last else 0)
        try:
            store_share(share, form.spec())
        except ValidationError as error:
            form.place(error)
        else:
            messages.success(request, f"Share {share.name} added.")
            return redirect(policy_page(policy))
    context = policy_context(request, policy, edit="new", share_form=form)
    return render(request, "web/policy_detail.html", context, status=400)


def delete_share(request, policy: Policy):
    share = get_object_or_404(Share, pk=request.POST.get("share"), policy=policy)
    remaining = [s.spec() for s in policy.shares.exclude(pk=share.pk).order_by("position", "id")]
    try:
        policy.validate_with(shares=remaining)
    except ValidationError as error:
        messages.error(request, f"Share {share.name} was not deleted: {' '.join(error.messages)}")
        return redirect(policy_page(policy))
    share.delete()
    messages.success(request, f"Share {share.name} deleted.")
    return redirect(policy_page(policy))


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
    context = policy_context(request, policy, edit=edit, change_form=form, row_errors=row_errors)
    return render(request, "web/policy_detail.html", context, status=400)


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
        context = policy_context(request, policy, row_errors=row_errors)
        return render(request, "web/policy_detail.html", context, status=400)
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
    context = policy_context(request, policy, plan_form=form)
    return render(request, "web/policy_detail.html", context, status=400)


def place_plan_errors(form: TrainingPlanForm, error: ValidationError) -> None:
    """The plan's own fields get their errors; the calendar's (a row it would break) go on top."""
    if not hasattr(error, "error_dict"):
        form.add_error(None, error.messages)
        return
    for key, messages_ in error.message_dict.items():
        for message in messages_:
            form.add_error(key if key in form.fields else None, message)


def save_capacity(request, policy: Policy):
    form = CapacityForm(request.POST, instance_types=type_names_of(policy), prefix="capacity")
    if form.is_valid():
        capacity = form.capacity()
        try:
            with transaction.atomic():
                policy.pool.check_capacity(capacity)
                policy.pool.set_capacity(capacity)
        except ValidationError as error:
            form.place(error)
        else:
            messages.success(request, f"Capacity of pool {policy.pool.name} saved.")
            return redirect(policy_page(policy))
    context = policy_context(request, policy, edit="capacity", capacity_form=form)
    return render(request, "web/policy_detail.html", context, status=400)


def save_settings(request, policy: Policy):
    form = PolicySettingsForm(request.POST, instance=policy, prefix="settings")
    if form.is_valid():
        form.save()
        messages.success(request, f"Policy {policy.name} saved.")
        return redirect(policy_page(policy, "settings"))
    policy.refresh_from_db()
    context = policy_context(request, policy, edit="settings", settings_form=form)
    return render(request, "web/policy_detail.html", context, status=400)


@require_POST
@editor_required
def policy_duplicate(request, pk: int):
    policy = get_object_or_404(Policy, pk=pk)
    form = VariantNameForm(request.POST)
    if not form.is_valid():
        context = policy_context(request, policy, duplicate_form=form)
        return render(request, "web/policy_detail.html", context, status=400)
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
