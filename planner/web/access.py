"""Who may open a page: sign-in first (redirect to the login page), then the role, checked by
``planner.accounts.permissions`` like the API. Decorators for function views, mixins for classes."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied

from planner.accounts.permissions import can_edit, can_read, can_read_finance

READ_DENIED = "Your account has no planner role yet: ask an admin to give you the viewer role."
EDIT_DENIED = "Editing needs the admin role."
FINANCE_DENIED = "Finance reports need the finance or admin role."


def _role_required(check: Callable, message: str) -> Callable:
    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            if not request.user.is_authenticated:
                return redirect_to_login(request.get_full_path())
            if not check(request.user):
                raise PermissionDenied(message)
            return view(request, *args, **kwargs)

        return wrapped

    return decorator


reader_required = _role_required(can_read, READ_DENIED)
editor_required = _role_required(can_edit, EDIT_DENIED)
finance_required = _role_required(can_read_finance, FINANCE_DENIED)


class ReaderRequiredMixin(LoginRequiredMixin):
    """Class-based views: signed in with any planner role."""

    role_check: Callable = staticmethod(can_read)
    role_message = READ_DENIED

    def dispatch(self, request, *args, **kwargs):
        if not request.user.is_authenticated:
            return self.handle_no_permission()
        if not self.role_check(request.user):
            raise PermissionDenied(self.role_message)
        return super().dispatch(request, *args, **kwargs)


class EditorRequiredMixin(ReaderRequiredMixin):
    role_check = staticmethod(can_edit)
    role_message = EDIT_DENIED


class FinanceRequiredMixin(ReaderRequiredMixin):
    role_check = staticmethod(can_read_finance)
    role_message = FINANCE_DENIED
