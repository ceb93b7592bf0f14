"""The sign-in form: Django's, saying when an account or address is locked after repeated wrong
passwords (``planner.accounts.throttle``) instead of only "incorrect password"."""

from __future__ import annotations

from django.contrib.auth.forms import AuthenticationForm
from django.core.exceptions import ValidationError

from planner.accounts.throttle import client_address, locked_for, wait_text

LOCKED = "Too many wrong passwords for this account or from this address: try again in {wait}."


class ThrottledAuthenticationForm(AuthenticationForm):
    def clean(self):
        try:
            return super().clean()
        except ValidationError:
            username = self.cleaned_data.get("username") or ""
            wait = locked_for(username, client_address(self.request))
            if wait:
                raise ValidationError(LOCKED.format(wait=wait_text(wait)), code="throttled") from None
            raise
