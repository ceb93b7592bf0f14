"""Policy dicts on one instance type ``gpu``, the pool most engine tests replay on: one copy of the two
small builders the rule files each wrote for themselves. Pure test data (no engine code), so the
reference model's tests may use it too."""

from __future__ import annotations

from typing import Any


def policy(capacity: int, *shares: dict, **options: Any) -> dict:
    """A pool of ``capacity`` ``gpu`` instances shared by ``shares``; ``options`` are further policy keys
    (queueing, fair_sharing, name, instance_types for a price, ...)."""
    return {"capacity": {"gpu": capacity}, "shares": list(shares), **options}


def share(name: str, quota: int, strategy: str = "LEND_AND_BORROW", **options: Any) -> dict:
    """A share with a quota of ``quota`` ``gpu`` instances; ``options`` are further share keys."""
    return {"name": name, "capacity": {"gpu": quota}, "strategy": strategy, **options}


def priced(hourly_price: float) -> dict[str, dict[str, Any]]:
    """``instance_types`` for a 1-GPU ``gpu`` at ``hourly_price`` an hour, for tests that count money."""
    return {"gpu": {"gpus": 1, "hourly_price": hourly_price}}
