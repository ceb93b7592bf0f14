"""Who may open a page: sign-in first (redirect to the login page), then the role, checked by
``planner.accounts.permissions`` like the API. Decorators for function views, mixins for classes."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.mixins import LoginRequiredMixin
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, JsonResponse

from planner.accounts.permissions import can_edit, can_read, can_read_finance

READ_DENIED = "Your account has no planner role yet: ask an admin to give you the viewer role."
EDIT_DENIED = "Editing needs the admin role."
FINANCE_DENIED = "Finance reports need the finance or admin role."
NO_CREDENTIALS = "Authentication credentials were not provided: send Authorization: Token <key>."


def _guarded(guard: Callable[[HttpRequest], HttpResponse | None]) -> Callable:
    """A view decorator: ``guard`` answers the request instead of the view (a redirect to the
    login page, a JSON error), raises PermissionDenied, or lets the view run (None)."""

    def decorator(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request, *args, **kwargs):
            refused = guard(request)
            return refused if refused is not None else view(request, *args, **kwargs)

        return wrapped

    return decorator


def _role_required(check: Callable, message: str) -> Callable:
    def guard(request: HttpRequest) -> HttpResponse | None:
        if not request.user.is_authenticated:
            return redirect_to_login(request.get_full_path())
        if not check(request.user):
            raise PermissionDenied(message)
        return None

    return _guarded(guard)


def check_editor(request: HttpRequest) -> None:
    """A reader's page that also takes edits (a list page's launch form, the policy editor): its POST
    needs the editor's role, else PermissionDenied (403)."""
    if not can_edit(request.user):
        raise PermissionDenied(EDIT_DENIED)


reader_required = _role_required(can_read, READ_DENIED)
editor_required = _role_required(can_edit, EDIT_DENIED)
finance_required = _role_required(can_read_finance, FINANCE_DENIED)


def _wants_token(request) -> bool:
    """A script, not a browser: it sent ``Authorization``, or an Accept without HTML (curl's */*);
    a browser's Accept names text/html."""
    accept = request.META.get("HTTP_ACCEPT", "")
    return "HTTP_AUTHORIZATION" in request.META or (bool(accept) and "text/html" not in accept)


def _token_user(request):
    """(user, error): the user of an ``Authorization: Token <key>`` header, as the API reads it."""
    from rest_framework.authentication import TokenAuthentication
    from rest_framework.exceptions import AuthenticationFailed

    try:
        found = TokenAuthentication().authenticate(request)
    except AuthenticationFailed as error:
        return None, str(error.detail)
    return (found[0], None) if found else (None, None)


def _json_error(status: int, detail: str) -> JsonResponse:
    response = JsonResponse({"detail": detail}, status=status)
    if status == 401:
        response["WWW-Authenticate"] = "Token"
    return response


def _token_or_login(check: Callable, message: str) -> Callable:
    """Like ``_role_required`` for downloads scripts fetch (CSV): a token is read as the API reads
    it, and a script gets 401/403 with a JSON ``detail`` instead of the login page's redirect."""

    def guard(request: HttpRequest) -> HttpResponse | None:
        user, error = _token_user(request) if "HTTP_AUTHORIZATION" in request.META else (None, None)
        if error:
            return _json_error(401, error)
        if user is not None:
            request.user = user
        if not request.user.is_authenticated:
            if _wants_token(request):
                return _json_error(401, NO_CREDENTIALS)
            return redirect_to_login(request.get_full_path())
        if not check(request.user):
            if user is not None or _wants_token(request):
                return _json_error(403, message)
            raise PermissionDenied(message)
        return None

    return _guarded(guard)


reader_or_token = _token_or_login(can_read, READ_DENIED)
finance_or_token = _token_or_login(can_read_finance, FINANCE_DENIED)


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
