"""The engine's rules for names and numbers (``scheduling.model``) as Django validators, so that model
``clean()``, the admin, the page forms and the API serializers (which copy a model field's validators)
refuse the same values with the same message, on SQLite and PostgreSQL alike."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django.core.exceptions import ValidationError
from django.utils.deconstruct import deconstructible

from scheduling.errors import InputError
from scheduling.model import (
    MAX_BORROW_LIMIT_PERCENT,
    MAX_GPUS_PER_INSTANCE,
    MAX_HOURLY_PRICE,
    MAX_STARTUP_SECONDS,
    check_name,
    parse_bounded_number,
    parse_fair_weight,
    parse_instance_count,
)

# What each validator checks, by the engine function that decides (the field name is for messages).
_RULES: dict[str, Callable[[Any], object]] = {
    "name": lambda v: check_name(v, "name"),
    "long_name": lambda v: check_name(v, "name", LONG_NAME_LENGTH),
    "instance_count": lambda v: parse_instance_count(v, "count"),
    "gpus_per_instance": lambda v: parse_bounded_number(v, "gpus", 0, MAX_GPUS_PER_INSTANCE),
    "hourly_price": lambda v: parse_bounded_number(v, "hourly_price", 0, MAX_HOURLY_PRICE),
    "startup_seconds": lambda v: parse_bounded_number(v, "startup_seconds", 0, MAX_STARTUP_SECONDS),
    "fair_weight": lambda v: parse_fair_weight(v, "fair_weight"),
    "borrow_limit_percent": lambda v: parse_bounded_number(
        v, "borrow_limit_percent", -1, MAX_BORROW_LIMIT_PERCENT
    ),
}
LONG_NAME_LENGTH = 200  # studies and traces: their columns are longer


@deconstructible
class EngineRule:
    """A Django validator running one of the engine's rules (``EngineRule("instance_count")``)."""

    def __init__(self, rule: str):
        if rule not in _RULES:
            raise ValueError(f"no engine rule {rule!r}")
        self.rule = rule

    def __call__(self, value: Any) -> None:
        if value is None:
            return
        try:
            _RULES[self.rule](value)
        except InputError as error:
            raise ValidationError(error.reason) from None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, EngineRule) and other.rule == self.rule


validate_name = EngineRule("name")
validate_long_name = EngineRule("long_name")
validate_instance_count = EngineRule("instance_count")
validate_gpus_per_instance = EngineRule("gpus_per_instance")
validate_hourly_price = EngineRule("hourly_price")
validate_startup_seconds = EngineRule("startup_seconds")
validate_borrow_limit_percent = EngineRule("borrow_limit_percent")
validate_fair_weight = EngineRule("fair_weight")
