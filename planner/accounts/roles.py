"""The three roles as Django groups and the permissions each one holds.

``admin`` edits pools, shares, policies and traces and runs studies; ``finance`` reads
everything plus the finance reports; ``viewer`` reads. ``apply_roles`` is shared by the
data migration and ``manage.py setup_roles`` so both give the same result, idempotently.
"""

from __future__ import annotations

from typing import Any

ADMIN = "admin"
FINANCE = "finance"
VIEWER = "viewer"
ROLES = (ADMIN, FINANCE, VIEWER)

# The models the planner owns, by app label: every role may view them, admin may edit them.
PLANNER_MODELS = {
    "capacity": ("instancetype", "pool", "poolcapacity", "policy", "share", "sharelimit", "calendarchange"),
    "traces": ("trace",),
    "studies": ("study", "run"),
}
FINANCE_REPORT = ("studies", "view_finance_report")

# Permission names checked by the API and the pages (``user.has_perm``).
READ_PERMISSION = "capacity.view_policy"
EDIT_PERMISSION = "capacity.change_policy"
RUN_STUDY_PERMISSION = "studies.add_study"
FINANCE_PERMISSION = "studies.view_finance_report"


def role_permissions() -> dict[str, list[tuple[str, str]]]:
    """(app_label, codename) pairs per role."""
    view = [(app, f"view_{model}") for app, models in PLANNER_MODELS.items() for model in models]
    edit = [
        (app, f"{action}_{model}")
        for app, models in PLANNER_MODELS.items()
        for model in models
        for action in ("add", "change", "delete")
    ]
    return {
        ADMIN: view + edit + [FINANCE_REPORT],
        FINANCE: view + [FINANCE_REPORT],
        VIEWER: view,
    }


def apply_roles(group_model: Any, permission_model: Any) -> None:
    """Create the role groups and set exactly their permissions (models may be historical)."""
    for role, wanted in role_permissions().items():
        group, _ = group_model.objects.get_or_create(name=role)
        permissions = []
        for app_label, codename in wanted:
            permission = permission_model.objects.filter(
                content_type__app_label=app_label, codename=codename
            ).first()
            if permission is None:
                raise LookupError(f"permission {app_label}.{codename} does not exist: run migrate first")
            permissions.append(permission)
        group.permissions.set(permissions)
