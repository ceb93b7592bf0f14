"""What the policy page shows, gathered in parts: the stored policy, the forms open for editing,
the tree of cohorts and shares, the calendar, and the studies and variants around it.
``policy_context`` puts them together; ``render_page`` renders it (with the status of a refused edit)."""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Prefetch
from django.shortcuts import render
from django.urls import reverse

from planner.accounts.permissions import can_edit
from planner.capacity.forms import (
    CalendarRowForm,
    CapacityForm,
    CohortForm,
    PolicySettingsForm,
    ShareForm,
    TrainingPlanForm,
    VariantNameForm,
)
from planner.capacity.models import (
    CalendarChange,
    Cohort,
    CohortLimit,
    InstanceType,
    Policy,
    PoolCapacity,
    Share,
    ShareLimit,
    describe_time,
)
from planner.capacity.views.figures import calendar_figure, quota_figure
from planner.capacity.views.tree import tree_rows
from planner.studies.models import Study
from planner.web import charts
from planner.web.listing import listed_policies
from planner.web.query import parse_id
from planner.web.variants import presets_for
from planner.web.views.headline import study_url

SHARE_FORM_ID = "share-form"
COHORT_FORM_ID = "cohort-form"
CAPACITY_FORM_ID = "capacity-form"
CHANGE_FORM_ID = "change-form"
# The calendar table shows its first rows and counts the rest (10,000 rows took 30 s to render).
CALENDAR_ROWS_SHOWN = 100
TEMPLATE = "web/policy_detail.html"


@dataclass
class StoredPolicy:
    """The stored rows the page reads, each read once."""

    policy: Policy
    capacity: list[PoolCapacity]
    shares: list[Share]
    cohorts: list[Cohort]
    types: list[InstanceType]

    @property
    def type_names(self) -> list[str]:
        return [t.name for t in self.types]

    @property
    def share_names(self) -> list[str]:
        return [share.name for share in self.shares]

    @property
    def cohort_names(self) -> list[str]:
        return [cohort.name for cohort in self.cohorts]

    @property
    def capacity_counts(self) -> dict[str, int]:
        return {c.instance_type.name: c.count for c in self.capacity}


def instance_types_of(capacity: list[PoolCapacity], shares: list[Share]) -> list[InstanceType]:
    """The pool's instance types, then any other type a share names."""
    types = {c.instance_type.name: c.instance_type for c in capacity}
    for share in shares:
        for limit in share.limits.all():
            types.setdefault(limit.instance_type.name, limit.instance_type)
    return list(types.values())


def load(policy: Policy) -> StoredPolicy:
    capacity = list(policy.pool.capacities.select_related("instance_type"))
    shares = list(
        policy.shares.order_by("position", "id")
        .select_related("cohort")
        .prefetch_related(Prefetch("limits", queryset=ShareLimit.objects.select_related("instance_type")))
    )
    cohorts = list(
        policy.cohorts.select_related("parent").prefetch_related(
            Prefetch("limits", queryset=CohortLimit.objects.select_related("instance_type"))
        )
    )
    return StoredPolicy(policy, capacity, shares, cohorts, instance_types_of(capacity, shares))


def type_names_of(policy: Policy) -> list[str]:
    return load(policy).type_names


def share_form_for(stored: StoredPolicy, edit: str) -> ShareForm | None:
    """The share form ``?edit=share-<id>`` or ``?edit=new`` opens, filled with the stored share."""
    names = {"instance_types": stored.type_names, "cohort_names": stored.cohort_names, "prefix": "share"}
    share = next((s for s in stored.shares if f"share-{s.pk}" == edit), None)
    if share is not None:
        spec = share.spec()
        return ShareForm(initial=ShareForm.initial_from(spec, stored.type_names), kept=spec, **names)
    if edit == "new":
        initial = {"strategy": "LEND_AND_BORROW", "in_share_preemption": "never", "reclaim": "any"}
        return ShareForm(initial=initial, **names)
    return None


def cohort_form_for(stored: StoredPolicy, edit: str) -> CohortForm | None:
    """The cohort form ``?edit=cohort-<id>`` or ``?edit=new-cohort`` opens."""
    names = {"instance_types": stored.type_names, "cohort_names": stored.cohort_names, "prefix": "cohort"}
    cohort = next((c for c in stored.cohorts if f"cohort-{c.pk}" == edit), None)
    if cohort is not None:
        return CohortForm(initial=CohortForm.initial_from(cohort.spec(), stored.type_names), **names)
    if edit == "new-cohort":
        return CohortForm(initial={"fair_weight": 1}, **names)
    return None


def capacity_form_for(stored: StoredPolicy, edit: str) -> CapacityForm | None:
    if edit != "capacity":
        return None
    counts = stored.capacity_counts
    return CapacityForm(
        initial={f"count_{i}": counts.get(t, 0) for i, t in enumerate(stored.type_names)},
        instance_types=stored.type_names,
        prefix="capacity",
    )


def open_forms(stored: StoredPolicy, edit: str, bound: dict, editable: bool) -> dict:
    """The forms of the page: those already filled in (``bound``, with their errors), else the one
    ``edit`` opens; none for a reader."""
    if not editable:
        return {}
    forms = {
        "share_form": bound.get("share_form") or share_form_for(stored, edit),
        "cohort_form": bound.get("cohort_form") or cohort_form_for(stored, edit),
        "capacity_form": bound.get("capacity_form") or capacity_form_for(stored, edit),
        "settings_form": bound.get("settings_form")
        or (PolicySettingsForm(instance=stored.policy, prefix="settings") if edit == "settings" else None),
        "plan_form": bound.get("plan_form")
        or TrainingPlanForm(share_names=stored.share_names, instance_types=stored.type_names, prefix="plan"),
    }
    return forms


def tie_to_form_ids(forms: dict) -> None:
    """The table's cells belong to a form elsewhere on the page (a form cannot wrap table rows)."""
    for key, form_id in (
        ("share_form", SHARE_FORM_ID),
        ("cohort_form", COHORT_FORM_ID),
        ("capacity_form", CAPACITY_FORM_ID),
        ("change_form", CHANGE_FORM_ID),
    ):
        if forms.get(key) is not None:
            for field in forms[key].fields.values():
                field.widget.attrs["form"] = form_id


def tree_context(stored: StoredPolicy, forms: dict, edit: str) -> dict:
    """The shares table: the tree's rows, each share's colour, the row being edited, the totals."""
    rows = tree_rows(stored.shares, stored.cohorts, stored.type_names)
    colors = charts.share_colors(stored.share_names)
    editing = edit if forms.get("share_form") is not None or forms.get("cohort_form") is not None else ""
    for row in rows:
        row.extra["color"] = colors.get(row.name, "") if row.kind == "share" else ""
        row.extra["editing"] = editing == f"{row.kind}-{row.pk}"
    quota_totals = [sum(row.quotas[i] for row in rows) for i in range(len(stored.type_names))]
    return {
        "rows": rows,
        "quota_totals": quota_totals,
        "has_cohorts": bool(stored.cohorts),
        "has_flavors": len(stored.type_names) > 1,
    }


def calendar_context(stored: StoredPolicy, edit: str, bound: dict, editable: bool) -> dict:
    """The calendar table (its first rows, and the row being edited), its form and its chart."""
    policy = stored.policy
    count = policy.changes.count()
    rows = list(policy.changes.select_related("share", "instance_type")[:CALENDAR_ROWS_SHOWN])
    if edit.startswith("change-") and not any(f"change-{c.pk}" == edit for c in rows):
        # A row past the ones shown is opened for editing from a link: show it too, last.
        rows += list(policy.changes.select_related("share", "instance_type").filter(pk=_id_of(edit)))
    form = bound.get("change_form")
    if editable and form is None:
        form = change_form_for(stored, rows, edit)
    shown = min(len(rows), CALENDAR_ROWS_SHOWN)
    return {
        "calendar_rows": calendar_rows(rows, edit, bound.get("row_errors", {}), form),
        "calendar_count": count,
        "calendar_shown": shown,
        "calendar_hidden": max(0, count - shown),
        "change_form": form,
        "calendar_chart": calendar_figure(policy, count),
    }


def change_form_for(stored: StoredPolicy, rows: list[CalendarChange], edit: str) -> CalendarRowForm | None:
    names = {"share_names": stored.share_names, "instance_types": stored.type_names, "prefix": "change"}
    change = next((c for c in rows if f"change-{c.pk}" == edit), None)
    if change is not None:
        return CalendarRowForm(initial=CalendarRowForm.initial_from(change.spec()), **names)
    if edit == "new-change":
        return CalendarRowForm(initial={"instance_type": (stored.type_names or [""])[0]}, **names)
    return None


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


def _id_of(edit: str) -> int:
    """The row id in ``?edit=change-<id>``; 0 (no row) for anything else."""
    return parse_id(edit.removeprefix("change-")) or 0


def related_context(stored: StoredPolicy, bound: dict) -> dict:
    """The studies that replayed the policy, its variants and the presets that make more."""
    policy = stored.policy
    studies = (
        Study.objects.filter(runs__policy=policy)
        .select_related("trace")
        .defer("trace__summary")
        .distinct()
        .order_by("-created_at")
    )
    return {
        "studies": [(study, study_url(study.pk)) for study in studies],
        "variants": policy.variants.all(),
        "presets": presets_for(policy),
        "duplicate_form": bound.get("duplicate_form")
        or VariantNameForm(initial={"name": f"{policy.name} variant"}),
        "pool_policy_count": listed_policies(policy.pool.policies.all()).count(),
    }


def pool_context(stored: StoredPolicy) -> dict:
    counts = stored.capacity_counts
    return {
        "pool": stored.policy.pool,
        "types": stored.types,
        "capacity_counts": [counts.get(t, 0) for t in stored.type_names],
        "pool_gpus": sum(counts.get(t.name, 0) * t.gpus for t in stored.types),
        "quota_chart": quota_figure(stored.shares, stored.types, counts, stored.cohorts),
    }


def policy_context(request, policy: Policy, *, edit: str = "", **bound) -> dict:
    """The policy page; ``bound`` holds forms already filled in (with their errors)."""
    stored = load(policy)
    editable = can_edit(request.user)
    forms = open_forms(stored, edit, bound, editable)
    calendar = calendar_context(stored, edit, bound, editable)
    tie_to_form_ids({**forms, "change_form": calendar["change_form"]})
    return {
        "policy": policy,
        "editable": editable,
        "edit": edit,
        "share_form_id": SHARE_FORM_ID,
        "cohort_form_id": COHORT_FORM_ID,
        "capacity_form_id": CAPACITY_FORM_ID,
        "change_form_id": CHANGE_FORM_ID,
        **forms,
        **pool_context(stored),
        **tree_context(stored, forms, edit),
        **calendar,
        **related_context(stored, bound),
    }


def render_page(request, policy: Policy, *, status: int = 200, edit: str = "", **bound):
    return render(request, TEMPLATE, policy_context(request, policy, edit=edit, **bound), status=status)


def policy_page(policy: Policy, anchor: str = "shares") -> str:
    return reverse("web:policy", args=[policy.pk]) + f"#{anchor}"
