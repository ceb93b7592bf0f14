"""The base of the middlewares that answer an exception a view raised with a page or JSON of its
own (an outage's 503, a missing file's 410) instead of Django's 500."""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse


class ErrorResponseMiddleware:
    """Answers the exceptions of ``handles``, raised by any view (page or API), with ``respond``."""

    handles: tuple[type[BaseException], ...] = ()

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, self.handles):
            return self.respond(request, exception)
        return None

    def respond(self, request: HttpRequest, exception: Exception) -> HttpResponse:
        """Each subclass's answer to an exception of its ``handles`` (a 503 for an outage, a 410 for a
        missing file); this base is never installed as a middleware itself."""
        raise NotImplementedError
