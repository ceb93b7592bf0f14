"""A stored file the planner needs (a trace's jobs, a run's outcomes) gone from ``MEDIA_ROOT``: an
HTTP 410 that names the file and what to do, never a 500.

``stored_file`` opens a FileField's file and raises ``StoredFileMissing`` when it is not there;
``MissingFileMiddleware`` answers it on the pages (``410.html``) and on the API (JSON ``{"detail",
"missing"}``). The row stays: an admin restores the file (a backup of the media folder) or deletes
and replays what needs it.
"""

from __future__ import annotations

import logging
from typing import IO

from django.db.models.fields.files import FieldFile
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.template.response import TemplateResponse

from planner.error_middleware import ErrorResponseMiddleware

log = logging.getLogger("planner.missing_files")


class StoredFileMissing(FileNotFoundError):
    """``what`` (in words: "the jobs of trace itp-2021") is stored as ``name`` under MEDIA_ROOT
    and that file is not there."""

    def __init__(self, what: str, name: str):
        self.what, self.name = what, name
        super().__init__(
            f"{what} ({name}) is missing from the server's storage: restore the media folder from a "
            "backup, or delete what needs it and replay it again"
        )


def stored_file(field: FieldFile, what: str) -> IO[bytes]:
    """``field`` opened for reading; StoredFileMissing when its file is gone."""
    try:
        return field.open("rb")
    except FileNotFoundError as error:
        raise StoredFileMissing(what, field.name) from error


def missing_response(request: HttpRequest, error: StoredFileMissing) -> HttpResponse:
    log.warning("410 on %s: %s", request.path, error)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": str(error), "missing": error.name}, status=410)
    return TemplateResponse(request, "410.html", {"message": str(error)}, status=410).render()


class MissingFileMiddleware(ErrorResponseMiddleware):
    """Turns StoredFileMissing raised by any view (page or API) into a 410 instead of a 500."""

    handles = (StoredFileMissing,)

    def respond(self, request: HttpRequest, exception: Exception) -> HttpResponse:
        return missing_response(request, exception)
