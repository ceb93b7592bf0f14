"""$ figures in the curves app: the planner's one rule (``planner.accounts.money``), named for the
curves' views, pages and CSVs. Viewers read GPUs and GPU-hours, never $."""

from __future__ import annotations

from typing import Any

from planner.accounts.money import for_user


def visible(value: Any, user) -> Any:
    """What ``user`` may read of ``value``: all of it for finance and admin, no $ for the others."""
    return for_user(user, value)
