"""Who may do what, checked in one place for the REST API and the browser pages.

Read: any role. Edit pools, shares, policies, traces and run studies: admin. Finance
reports: finance and admin. Superusers pass every check.
"""

from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from planner.accounts.roles import EDIT_PERMISSION, FINANCE_PERMISSION, READ_PERMISSION


def can_read(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(READ_PERMISSION))


def can_edit(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(EDIT_PERMISSION))


def can_read_finance(user) -> bool:
    return bool(user and user.is_authenticated and user.has_perm(FINANCE_PERMISSION))


def role_of(user) -> str:
    """The strongest role a user holds, for display ("admin", "finance", "viewer" or "")."""
    if can_edit(user):
        return "admin"
    if can_read_finance(user):
        return "finance"
    if can_read(user):
        return "viewer"
    return ""


class IsPlannerUser(BasePermission):
    """Any role may read; only admins may write (the default for every API view)."""

    message = "Your role does not allow this: editing needs the admin role."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return can_read(request.user)
        return can_edit(request.user)


class IsFinanceReader(BasePermission):
    """Finance reports: the finance and admin roles."""

    message = "Finance reports need the finance or admin role."

    def has_permission(self, request, view) -> bool:
        return request.method in SAFE_METHODS and can_read_finance(request.user)
