"""Serving the planner so that slow clients cannot stall it (issue 25: four sockets that never finished
their headers made a normal request wait 33 s; an upload shorter than its Content-Length pinned a
worker for 30 s, then gave a 500).

gunicorn's threaded workers (``SlowClientWorker``, configured in ``planner/gunicorn_conf.py``) hand
each connection to a thread only once it has sent something, and here every request is bounded:

- its head (request line and headers) must arrive within ``PLANNER_HEADER_TIMEOUT_SECONDS`` of its
  first byte, however slowly it trickles (a deadline, not an idle limit);
- its body may pause at most ``PLANNER_BODY_TIMEOUT_SECONDS`` between two pieces; a body that stops
  or ends before its Content-Length is a 400 (``IncompleteBody``), never a 500 and never stored;
- a response piece the client does not take within ``PLANNER_SEND_TIMEOUT_SECONDS`` ends the
  connection.

In production a buffering proxy (nginx) in front does the same for every client before gunicorn sees
it (docs/robustness.md); these bounds hold without one too.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from typing import Any

from django.core.exceptions import BadRequest
from gunicorn.http.errors import NoMoreData
from gunicorn.workers.gthread import ThreadWorker

logger = logging.getLogger(__name__)


def _seconds(name: str, default: float) -> float:
    value = float(os.environ.get(name) or default)
    if not value > 0:
        raise ValueError(f"{name} must be a positive number of seconds, not {value}")
    return value


HEADER_TIMEOUT = _seconds("PLANNER_HEADER_TIMEOUT_SECONDS", 10.0)
BODY_TIMEOUT = _seconds("PLANNER_BODY_TIMEOUT_SECONDS", 20.0)
SEND_TIMEOUT = _seconds("PLANNER_SEND_TIMEOUT_SECONDS", 60.0)


class DeadlineSocket:
    """A client's socket whose reads are bounded: by a deadline while the request's head arrives,
    by an idle limit once its body is read (``start_body``, called by the application)."""

    def __init__(self, sock: socket.socket):
        self._sock = sock
        self._deadline: float | None = None
        self._idle: float | None = None

    def start_request(self) -> None:
        self._deadline = time.monotonic() + HEADER_TIMEOUT
        self._idle = None

    def start_body(self) -> None:
        self._deadline = None
        self._idle = BODY_TIMEOUT

    def _arm(self) -> None:
        if self._deadline is not None:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"the request's head took more than {HEADER_TIMEOUT:g} s")
            self._sock.settimeout(left)
        elif self._idle is not None:
            self._sock.settimeout(self._idle)

    def recv(self, *args: Any) -> bytes:
        return self._read(self._sock.recv, *args)

    def recv_into(self, *args: Any) -> int:
        return self._read(self._sock.recv_into, *args)

    def _read(self, method, *args: Any):
        try:
            self._arm()
            return method(*args)
        except TimeoutError:
            if self._deadline is None:
                raise  # the body's: a 400 (GuardedInput)
            # The head's: one line in the log, and gunicorn closes the connection quietly (as
            # for a client gone away) instead of logging a traceback per slow client.
            logger.warning(
                "a client took more than %g s (PLANNER_HEADER_TIMEOUT_SECONDS) to send a request's "
                "head: connection closed",
                HEADER_TIMEOUT,
            )
            raise NoMoreData() from None

    def send(self, *args: Any) -> int:
        self._sock.settimeout(SEND_TIMEOUT)
        return self._sock.send(*args)

    def sendall(self, *args: Any) -> None:
        self._sock.settimeout(SEND_TIMEOUT)
        return self._sock.sendall(*args)

    def __getattr__(self, name: str) -> Any:  # fileno, setblocking, close, shutdown, ...
        return getattr(self._sock, name)


class SlowClientWorker(ThreadWorker):
    """gunicorn's gthread worker with each request's head and body bounded (``DeadlineSocket``)."""

    def handle(self, conn):
        if not self.cfg.is_ssl:  # (TLS ends at the proxy in front, never here)
            if not isinstance(conn.sock, DeadlineSocket):
                conn.sock = DeadlineSocket(conn.sock)
            conn.sock.start_request()
        return super().handle(conn)


class IncompleteBody(BadRequest):
    """The client stopped sending the body, or ended it before its Content-Length: HTTP 400."""


class GuardedInput:
    """``wsgi.input`` that turns a stalled or short body into IncompleteBody, so that no view ever
    sees (or stores) part of a body as if it were all of it."""

    def __init__(self, stream: Any, length: int | None):
        """``length``: the Content-Length; None for a chunked body (its end is its own)."""
        self._stream = stream
        self._length = length
        self._left = length if length is not None else 1 << 62

    def _check(self, data: bytes, asked: int | None) -> bytes:
        if self._length is None:
            return data
        self._left -= len(data)
        if self._left > 0 and (not data or asked is None or asked < 0):
            raise IncompleteBody(f"the request body ended {self._left:,} bytes short of its Content-Length")
        return data

    def _guarded(self, method, *args: Any) -> bytes:
        try:
            return method(*args)
        except TimeoutError:
            announced = (
                f"before the {self._length:,} bytes its Content-Length announced"
                if self._length is not None
                else "before its last chunk"
            )
            raise IncompleteBody(
                f"the request body stopped arriving for {BODY_TIMEOUT:g} s (PLANNER_BODY_TIMEOUT_SECONDS) "
                + announced
            ) from None
        except OSError as error:  # the client went away (gunicorn's NoMoreData is one)
            raise IncompleteBody(f"the request body could not be read: {error}") from None

    def read(self, size: int | None = -1) -> bytes:
        if self._left <= 0:
            return b""
        return self._check(self._guarded(self._stream.read, size), size)

    def readline(self, size: int | None = -1) -> bytes:
        if self._left <= 0:
            return b""
        data = self._guarded(self._stream.readline, size)
        return self._check(data, 0 if data.endswith(b"\n") else size)

    def __iter__(self):
        while line := self.readline():
            yield line


def guard_body(application):
    """The WSGI application with its request bodies bounded (GuardedInput) and, under
    SlowClientWorker, the socket switched from the head's deadline to the body's idle limit."""

    def guarded(environ, start_response):
        sock = environ.get("gunicorn.socket")
        if isinstance(sock, DeadlineSocket):
            sock.start_body()
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
        except ValueError:
            length = 0
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if (length > 0 or chunked) and "wsgi.input" in environ:
            environ["wsgi.input"] = GuardedInput(environ["wsgi.input"], None if chunked else length)
        return application(environ, start_response)

    return guarded
