"""Logging pieces of the settings: a refused request (403, 404, 400) is one line in the log, not a
traceback; only server errors (5xx) keep theirs."""

from __future__ import annotations

import logging


class OneLineClientErrors(logging.Filter):
    """Drops the traceback of ``django.request`` records about client errors (status below 500):
    a PermissionDenied raised on purpose is not a bug to debug."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
