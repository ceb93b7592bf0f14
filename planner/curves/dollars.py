"""$ figures are for the finance and admin roles: viewers read GPUs and GPU-hours, never $.
One place for the curves app: every API answer, page and CSV goes through ``visible``."""

from __future__ import annotations

from typing import Any

from planner.accounts.permissions import can_read_finance


def is_dollar_key(key: str) -> bool:
    return "usd" in key.split("_") or "price" in key


def without_dollars(value: Any) -> Any:
    """``value`` with every key that holds $ left out, at any depth: keys with a ``usd`` word
    (``usd``, ``rerun_cost_usd``, ``rerun_usd_per_month``) or ``price`` in them."""
    if isinstance(value, dict):
        return {key: without_dollars(item) for key, item in value.items() if not is_dollar_key(str(key))}
    if isinstance(value, list):
        return [without_dollars(item) for item in value]
    return value


def visible(value: Any, user) -> Any:
    """What ``user`` may read of ``value``: all of it for finance and admin, no $ for the others."""
    return value if can_read_finance(user) else without_dollars(value)
