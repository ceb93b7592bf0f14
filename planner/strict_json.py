"""Engine output as strict JSON for database JSON columns: PostgreSQL's jsonb rejects NaN and
infinities, so they become null; numpy scalars become Python numbers."""

from __future__ import annotations

import math
from typing import Any


def strict_json(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    if hasattr(value, "item") and hasattr(value, "dtype"):  # numpy scalars
        return strict_json(value.item())
    return value
