"""The site's error pages in its own layout (top bar, menu, breadcrumbs), with DEBUG off.

Django renders 403.html and 404.html with the request's context already; its 500 handler renders
500.html without one (the error may lie in the context itself). This one tries with the request
first, so a signed-in user keeps the menu, and falls back to the bare template, then to text."""

from __future__ import annotations

import logging

from django.http import HttpRequest, HttpResponseServerError
from django.template import loader

log = logging.getLogger(__name__)


def server_error(request: HttpRequest) -> HttpResponseServerError:
    template = loader.get_template("500.html")
    try:
        body = template.render({}, request)
    except Exception:  # noqa: BLE001 - whatever broke the page may break its context too
        log.exception("the 500 page could not be drawn with the request's context")
        try:
            body = template.render({})
        except Exception:  # noqa: BLE001
            body = "<h1>Server error (500)</h1>"
    return HttpResponseServerError(body)
