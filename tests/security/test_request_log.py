"""A 403 logged a full traceback twice (Django's handler and the root's). It is one line now; a
server error keeps its traceback."""

from __future__ import annotations

import io
import logging

import pytest


@pytest.fixture
def console():
    """What the planner's console handlers write during the test (pytest's own capture aside)."""
    stream = io.StringIO()
    loggers = [logging.getLogger(name) for name in ("", "django", "django.request")]
    handlers = {h for logger in loggers for h in logger.handlers if type(h) is logging.StreamHandler}
    previous = [(h, h.setStream(stream)) for h in handlers]
    yield stream
    for handler, old in previous:
        handler.setStream(old)


def test_a_403_logs_one_line(world, console):
    response = world.session("viewer").get("/finance/")
    assert response.status_code == 403
    assert console.getvalue().splitlines() == ["Forbidden (Permission denied): /finance/"]


def test_an_api_403_logs_one_line(world, console):
    response = world.api("viewer").post("/api/pools/", {"name": "x"}, format="json")
    assert response.status_code == 403
    assert console.getvalue().splitlines() == ["Forbidden: /api/pools/"]


def test_a_server_error_keeps_its_traceback():
    record = logging.LogRecord(
        "django.request", logging.ERROR, __file__, 1, "Internal Server Error: /", (), None
    )
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        import sys

        record.exc_info = sys.exc_info()
    record.status_code = 500
    from planner.log import OneLineClientErrors

    assert OneLineClientErrors().filter(record) and record.exc_info is not None
