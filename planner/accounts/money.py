"""Which figures are money, and the one filter that hides them from a role without finance access.

The line: every role reads GPU-hours, instances, waits and preemptions; only finance and admin read
$ figures. A $ figure is a key ending in ``_usd`` (``rerun_cost_usd``, ``stranded_usd``...), a ``usd``
block (``periods.shares.<name>.usd``), a unit inside a name (a curve's ``rerun_usd_per_month``) or a
price (an instance type's ``hourly_price``); on the pages, a table column or a card line whose unit
is ``$``. Keys that only start with ``usd`` are kept: dicts keyed by share names hold user-chosen
keys, and a share may be called ``usd_team``. The API (``planner.api.renderers``), the page views and
the CSV downloads all ask this module, so a new $ field is hidden everywhere by its name alone.
"""

from __future__ import annotations

from typing import Any

from planner.accounts.permissions import can_read_finance

MONEY_UNIT = "$"
MONEY_KEYS = frozenset({"usd", "price"})


def is_money_key(key: object) -> bool:
    if not isinstance(key, str):
        return False
    return key in MONEY_KEYS or key.endswith(("_usd", "_price")) or "_usd_" in key or "_price_" in key


def is_money_unit(unit: str) -> bool:
    return unit == MONEY_UNIT


def shows_money(user) -> bool:
    """Whether ``user`` may read $ figures (the finance and admin roles)."""
    return can_read_finance(user)


def strip_money(value: Any) -> Any:
    """``value`` (JSON-like: dicts, lists, scalars) without any $ figure, at any depth; a copy."""
    if isinstance(value, dict):
        return {k: strip_money(v) for k, v in value.items() if not is_money_key(k)}
    if isinstance(value, (list, tuple)):
        # Lists of numbers (series, CDFs: thousands of values) are shared, not copied or scanned:
        # the planner's JSON lists hold one kind of value, so the ends tell what the list holds.
        if not value or not any(isinstance(v, (dict, list, tuple)) for v in (value[0], value[-1])):
            return value
        return [strip_money(v) for v in value]
    return value


def for_user(user, value: Any) -> Any:
    """``value`` as ``user`` may read it: whole for finance and admin, without $ figures otherwise."""
    return value if shows_money(user) else strip_money(value)
