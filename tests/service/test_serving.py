"""planner.serving.GuardedInput, the body guard around the WSGI application (its server-side tests,
with a real gunicorn, are tests/faults/test_slow_clients.py)."""

from __future__ import annotations

import io

import pytest

from planner.serving import BODY_TIMEOUT, GuardedInput, IncompleteBody, guard_body


class Stalling(io.BytesIO):
    """A body whose client stops sending after what it holds: the socket's idle limit fires."""

    def read(self, size=-1):
        data = super().read(size)
        if not data:
            raise TimeoutError("timed out")
        return data


def test_a_whole_body_is_read_as_it_came():
    body = GuardedInput(io.BytesIO(b"line one\nline two\n"), 18)
    assert body.readline() == b"line one\n"
    assert body.read(100) == b"line two\n"
    assert body.read(100) == b""


def test_a_body_ending_before_its_content_length_is_refused():
    body = GuardedInput(io.BytesIO(b"abc"), 10)
    assert body.read(2) == b"ab"
    assert body.read(8) == b"c"  # a short piece: the reader asks again
    with pytest.raises(IncompleteBody, match="^the request body ended 7 bytes short of its Content-Length$"):
        body.read(7)
    with pytest.raises(IncompleteBody):
        GuardedInput(io.BytesIO(b"abc"), 10).read()  # read whole, and short


def test_a_body_that_stops_arriving_is_refused_naming_the_setting():
    body = GuardedInput(Stalling(b"abc"), 10)
    body.read(3)
    with pytest.raises(IncompleteBody) as caught:
        body.read(7)
    assert str(caught.value) == (
        f"the request body stopped arriving for {BODY_TIMEOUT:g} s (PLANNER_BODY_TIMEOUT_SECONDS) "
        "before the 10 bytes its Content-Length announced"
    )


def test_a_chunked_body_that_stops_is_refused_and_one_that_ends_is_not():
    assert GuardedInput(io.BytesIO(b"abc"), None).read() == b"abc"
    with pytest.raises(IncompleteBody, match="before its last chunk"):
        GuardedInput(Stalling(b""), None).read(5)


def test_the_application_sees_the_guarded_body_only_when_there_is_one():
    seen = {}

    def app(environ, start_response):
        seen["input"] = environ["wsgi.input"]
        return []

    guard_body(app)({"CONTENT_LENGTH": "3", "wsgi.input": io.BytesIO(b"abc")}, None)
    assert isinstance(seen["input"], GuardedInput)
    plain = io.BytesIO()
    guard_body(app)({"CONTENT_LENGTH": "", "wsgi.input": plain}, None)
    assert seen["input"] is plain
