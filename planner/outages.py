"""When a service the planner leans on is down (the Celery broker, the Redis that holds the login
throttle's counts): an HTTP 503 that says which and what became of the request, never a 500.

``OUTAGES`` are the exceptions such a failure raises; ``OutageMiddleware`` answers them on the pages
and ``planner.api.errors.exception_handler`` on the API (a JSON ``{"detail": ...}``). Work that was
stored before its task could be sent says so itself (``ServiceUnavailable``): a study whose replays
could not be queued is marked failed with the reason (``planner.studies.launch``), not left queued.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse
from kombu.exceptions import OperationalError as BrokerError
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from planner.error_middleware import ErrorResponseMiddleware

if TYPE_CHECKING:
    from planner.worker_rows import WorkerAttempt

log = logging.getLogger("planner.outages")

RETRY_AFTER_SECONDS = 30


class ServiceUnavailable(Exception):
    """A request that cannot be served while a backing service is down; the message is for the user."""


OUTAGES: tuple[type[BaseException], ...] = (
    ServiceUnavailable,
    BrokerError,
    RedisConnectionError,
    RedisTimeoutError,
)


def outage_message(error: BaseException) -> str:
    """What the user reads: the request's own words, else which service failed."""
    if isinstance(error, ServiceUnavailable):
        return str(error)
    if isinstance(error, BrokerError):
        return "The task queue (Celery's broker) cannot be reached: nothing was queued. Try again shortly."
    return (
        "The shared cache (Redis) that counts sign-in attempts cannot be reached, so passwords are "
        "not checked for now. Try again shortly."
    )


def broker_failure(error: BaseException) -> str:
    """A broker error in a few words, for a run's stored reason."""
    return f"the task queue (Celery's broker) could not be reached ({type(error).__name__}: {error})"[:500]


def publish_or_fail(
    send: Callable[[], object], fail: Callable[[str], object], *, what: str, count: int, then: str
) -> None:
    """``send()`` the tasks of work already stored; when the broker refuses, ``fail(reason)`` marks
    that work failed (so none of it waits for a task never sent) and ServiceUnavailable says so."""
    try:
        send()
    except BrokerError as error:
        reason = broker_failure(error)
        fail(f"not queued: {reason}; {then}")
        raise ServiceUnavailable(
            f"{what} was saved, but its {count} replay{'s' if count != 1 else ''} could not be queued: "
            f"{reason}. They are marked failed: {then} once the task queue is back."
        ) from error


def publish_rows(
    model: type[WorkerAttempt], pks: list[int], send: Callable[[], object], *, what: str, then: str
) -> None:
    """``publish_or_fail`` of the tasks of worker rows just stored: when the broker refuses, the
    rows still queued are failed with the reason (``WorkerAttempt.fail_queued``)."""
    publish_or_fail(send, lambda reason: model.fail_queued(pks, reason), what=what, count=len(pks), then=then)


def unavailable_response(request: HttpRequest, error: BaseException) -> HttpResponse:
    message = outage_message(error)
    log.warning("503 on %s: %s (%s)", request.path, message, error)
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=503)
    else:
        response = TemplateResponse(request, "503.html", {"message": message}, status=503).render()
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class OutageMiddleware(ErrorResponseMiddleware):
    """Turns an outage raised by any view into a 503 (page or JSON) instead of a 500."""

    handles = OUTAGES

    def respond(self, request: HttpRequest, exception: Exception) -> HttpResponse:
        return unavailable_response(request, exception)
