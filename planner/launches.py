"""The one argument a launch takes (``launch_study``, ``start_curve``, ``start_search``,
``start_sweep``, ``start_calibration``, ``start_forecast``): a frozen dataclass per launch, defined in
its app's launch.py, that a form's ``cleaned_data`` or a serializer's ``validated_data`` becomes
through ``from_data`` instead of each caller copying every field by name."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import fields
from typing import Any, Self


class Launch:
    """Base of the launch dataclasses: their constructor from a form's or a serializer's data."""

    @classmethod
    def from_data(cls, data: Mapping[str, Any], **given: Any) -> Self:
        """The fields ``data`` holds under their own names; a field it leaves out, or leaves empty
        (None: an optional form field not filled in), keeps its default. ``given`` (the user,
        and values the caller read differently) wins over ``data``."""
        names = [field.name for field in fields(cls)]  # type: ignore[arg-type]
        values = {name: data[name] for name in names if data.get(name) is not None}
        return cls(**(values | given))
