"""Field readers for one JSON object (a Kueue Workload, an AWS Batch job), shared by the trace importers
and the forecast's snapshot readers. Each rule and its message is written once here; a subclass says
only how an error names the object (``fail``), since a trace names a row and a snapshot a path.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from scheduling.errors import InputError


class JsonFields(ABC):
    """Reads fields of one JSON object; ``fail`` makes the error naming the object and the field."""

    @abstractmethod
    def fail(self, message: str, field: str) -> InputError:
        """The error for ``field`` of this object (a trace names its row, a snapshot its path)."""

    def mapping(self, value: Any, field: str) -> Mapping[str, Any]:
        """An object; absent (None) reads as empty."""
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail("must be an object", field)
        return value

    def whole(self, value: Any, field: str, minimum: int = 0) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
            raise self.fail(f"{value!r} is not a whole number", field)
        if value < minimum:
            raise self.fail(f"{value!r} is below {minimum}", field)
        return int(value)

    def rfc3339(self, value: Any, field: str) -> datetime:
        """A Kubernetes time (``2024-05-01T09:00:00Z``), which must carry its time zone."""
        if not isinstance(value, str) or not value.strip():
            raise self.fail(f"{value!r} is not an RFC 3339 time", field)
        try:
            stamp = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(f"{value!r} is not an RFC 3339 time", field) from None
        if stamp.tzinfo is None:
            raise self.fail(f"{value!r} has no time zone", field)
        return stamp

    def millis(self, value: Any, field: str, *, required: bool = False) -> float | None:
        """An AWS time in epoch milliseconds, as seconds; None when absent and not required."""
        if value is None:
            if required:
                raise self.fail("is missing", field)
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise self.fail(f"{value!r} is not a time in epoch milliseconds", field)
        if value < 0 or value > 1e13:
            raise self.fail(f"{value!r} is not a time in epoch milliseconds (1970 to 2286)", field)
        return float(value) / 1000.0
