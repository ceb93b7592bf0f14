"""Uploading a trace the way clients do now: POST (HTTP 202, status ``parsing``), then the worker
parses it. Here the worker is Celery in eager mode, run when the request's transaction commits,
and the answer is the trace as the API shows it afterwards (or the refusal: 400, 413)."""

from __future__ import annotations

from contextlib import contextmanager

from tests.fixtures import eager_worker


def upload_trace(client, payload: dict, *, wait: bool = True):
    """POST ``payload`` to /api/traces/; with ``wait``, the trace once the worker has parsed it
    (its ``status`` ready or failed). A refused request is returned as it is."""
    with eager_worker() if wait else _nothing():
        response = client.post("/api/traces/", payload, format="multipart")
    if response.status_code != 202 or not wait:
        return response
    return client.get(response.json()["url"])


@contextmanager
def _nothing():
    yield
