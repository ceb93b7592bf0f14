"""Rendered parts of pages (and parsed figures) kept in each web process: an LRU of
``PLANNER_PAGE_CACHE_ENTRIES`` (64; 0 turns it off) under a key that names everything the part was
made from, so a changed input is a new key and nothing stale is ever served.

What a key holds is the caller's to list (``page_key``): each run's id, finish time and
``metrics_digest`` (written with its figures), the names shown, the query string, whether the reader
sees $, the share colours, and ``VERSION``. A run whose figures have no digest (written around
``planner.studies.models.recorded_metrics``) makes the part uncacheable (``UNCACHEABLE``). Parts are
rendered with ``render_to_string`` and no request: no user, role, CSRF token or message can get into
one. The cache is empty after each restart (a deploy), and per process: no invalidation to miss.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, TypeVar

import orjson
from django.conf import settings

VERSION = 1  # raise when a part changes while its key does not (code served without a restart)
UNCACHEABLE = None  # what page_key returns when a part must be made afresh

T = TypeVar("T")

_entries: OrderedDict[str, Any] = OrderedDict()
_lock = threading.Lock()
stats = {"hits": 0, "misses": 0}


def page_key(kind: str, *parts: Any) -> str:
    """The key of one part of a page: ``kind`` and every input it was made from (JSON-able; dates as
    strings), hashed."""
    payload = orjson.dumps([VERSION, kind, *parts], default=str, option=orjson.OPT_NON_STR_KEYS)
    return f"{kind}:{hashlib.sha256(payload).hexdigest()}"


def cached(key: str | None) -> Any | None:
    """The part kept under ``key``, or None."""
    if key is None or settings.PLANNER_PAGE_CACHE_ENTRIES <= 0:
        return None
    with _lock:
        value = _entries.get(key)
        if value is not None:
            _entries.move_to_end(key)
            stats["hits"] += 1
        else:
            stats["misses"] += 1
        return value


def keep(key: str | None, value: Any) -> None:
    """Keep ``value`` under ``key`` (the key of what it was made from), forgetting the least
    recently used parts past the limit."""
    limit = settings.PLANNER_PAGE_CACHE_ENTRIES
    if key is None or limit <= 0:
        return
    with _lock:
        _entries[key] = value
        _entries.move_to_end(key)
        while len(_entries) > limit:
            _entries.popitem(last=False)


def remembered(key: str | None, make: Callable[[], T]) -> T:
    """The part kept under ``key``, else ``make()`` kept under it (``key`` None: made, not kept)."""
    value = cached(key)
    if value is None:
        value = make()
        keep(key, value)
    return value


def clear() -> None:
    """Forget every part (tests)."""
    with _lock:
        _entries.clear()
        stats.update(hits=0, misses=0)
