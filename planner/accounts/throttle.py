"""Repeated wrong passwords are throttled wherever a password is checked: the login page, the Django
admin's login and HTTP Basic on ``/api/tokens/`` all authenticate through ``ThrottledModelBackend``.

After ``PLANNER_LOGIN_FAILURES`` wrong passwords for one username (or ``PLANNER_LOGIN_FAILURES_PER_ADDRESS``
from one client address) within ``PLANNER_LOGIN_WINDOW_SECONDS``, every password for that username (or
from that address) is refused for ``PLANNER_LOGIN_LOCK_SECONDS``, the right one included: guessing costs
minutes per handful of tries. Counts live in the ``login-throttle`` cache, shared by every process
(Redis with REDIS_URL, else files under var/). The address is REMOTE_ADDR: behind a proxy that is the
proxy's, so the per-username limit is the one that holds.
"""

from __future__ import annotations

import hashlib
import math
import time

from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.cache import caches
from django.core.exceptions import PermissionDenied

CACHE = "login-throttle"


def _cache():
    return caches[CACHE]


def _key(kind: str, value: str) -> str:
    # Hashed: a username or address can hold anything, a cache key cannot.
    return f"{kind}:{hashlib.sha256(value.encode('utf-8', 'surrogatepass')).hexdigest()}"


def client_address(request) -> str:
    return (getattr(request, "META", None) or {}).get("REMOTE_ADDR", "") if request is not None else ""


def _subjects(username: str, address: str) -> list[tuple[str, int]]:
    """(cache key, failures allowed) of what a password attempt counts against."""
    subjects = [(_key("user", username.strip().casefold()), settings.PLANNER_LOGIN_FAILURES)]
    if address:
        subjects.append((_key("address", address), settings.PLANNER_LOGIN_FAILURES_PER_ADDRESS))
    return subjects


def locked_for(username: str, address: str) -> float:
    """Seconds until a password for ``username`` from ``address`` is checked again (0: now)."""
    now = time.time()
    until = max((_cache().get(f"lock:{key}", 0.0) for key, _ in _subjects(username, address)), default=0.0)
    return max(0.0, until - now)


def record_failure(username: str, address: str) -> None:
    cache = _cache()
    for key, allowed in _subjects(username, address):
        count_key = f"failures:{key}"
        cache.add(count_key, 0, timeout=settings.PLANNER_LOGIN_WINDOW_SECONDS)
        try:
            failures = cache.incr(count_key)
        except ValueError:  # expired between add and incr
            cache.set(count_key, 1, timeout=settings.PLANNER_LOGIN_WINDOW_SECONDS)
            failures = 1
        if failures >= allowed:
            lock = settings.PLANNER_LOGIN_LOCK_SECONDS
            cache.set(f"lock:{key}", time.time() + lock, timeout=lock)
            cache.delete(count_key)


def record_success(username: str) -> None:
    cache = _cache()
    key, _ = _subjects(username, "")[0]
    cache.delete(f"failures:{key}")


def wait_text(seconds: float) -> str:
    minutes = math.ceil(seconds / 60)
    return f"{minutes} minute{'s' if minutes != 1 else ''}"


class ThrottledModelBackend(ModelBackend):
    """Django's username/password check, refused while the username or address is locked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(self._username_field(), "")
        address = client_address(request)
        if request is not None and locked_for(username or "", address):
            raise PermissionDenied("too many wrong passwords")  # stops every backend: no user
        user = super().authenticate(request, username=username, password=password, **kwargs)
        if request is not None:
            if user is None:
                record_failure(username or "", address)
            else:
                record_success(username or "")
        return user

    @staticmethod
    def _username_field() -> str:
        from django.contrib.auth import get_user_model

        return get_user_model().USERNAME_FIELD
