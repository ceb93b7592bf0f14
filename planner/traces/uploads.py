"""The upload size limit enforced while the request body streams in, not after it is stored.

``LimitedUploadHandler`` comes first in ``FILE_UPLOAD_HANDLERS``: it counts each file's bytes as
they arrive and stops the upload past ``PLANNER_MAX_UPLOAD_BYTES`` (chunked bodies declare no size).
``RawTraceParser`` takes a trace sent as the whole request body, through the same handlers.
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import (
    FileUploadHandler,
    MemoryFileUploadHandler,
    TemporaryFileUploadHandler,
)
from rest_framework.parsers import FileUploadParser

from scheduling.write_behind import WriteBehind

# The body is read in pieces of the smallest chunk size among the handlers (Django's: 64 KiB), each
# piece passed through every handler in Python; the server's reader then also copies what it read
# ahead once per piece. 1 MiB pieces take a 263 MB trace in 263 turns instead of 4,000.
CHUNK_SIZE = 1024 * 1024


class LimitedUploadHandler(FileUploadHandler):
    """Refuses the request (RequestDataTooBig: HTTP 413) once a file passes the limit."""

    chunk_size = CHUNK_SIZE

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.received = 0

    def receive_data_chunk(self, raw_data: bytes, start: int) -> bytes:
        self.received += len(raw_data)
        limit = settings.PLANNER_MAX_UPLOAD_BYTES
        if self.received > limit:
            raise RequestDataTooBig(f"{self.file_name!r} is larger than the limit of {limit:,} bytes")
        return raw_data

    def file_complete(self, file_size: int) -> None:
        return None  # the next handler stores the file


class MemoryUploadHandler(MemoryFileUploadHandler):
    """Django's: small files kept in memory, read in large pieces."""

    chunk_size = CHUNK_SIZE


class DiskUploadHandler(TemporaryFileUploadHandler):
    """Django's: larger files streamed to a temporary file, read in large pieces, and written
    behind (``scheduling.write_behind``): a 263 MB upload held in the page cache made the request
    wait 0.15 to 0.8 s more for memory the kernel had to find and zero, on a machine where that is
    dear. The worker reads the file from disk instead."""

    chunk_size = CHUNK_SIZE

    def new_file(self, *args, **kwargs) -> None:
        super().new_file(*args, **kwargs)
        self.behind = WriteBehind(self.file)

    def receive_data_chunk(self, raw_data: bytes, start: int) -> None:
        self.behind.write(raw_data)


class RawTraceParser(FileUploadParser):
    """A trace sent as the request body itself (``curl --data-binary @trace.csv``), whatever its
    Content-Type (CSV, JSON, gzip), read through the same upload handlers (and the same streaming
    size limit) as a form's file. The file's name comes from Content-Disposition or ``?filename=``;
    it only names the source, so it may be absent."""

    def get_filename(self, stream, media_type, parser_context) -> str:
        named = super().get_filename(stream, media_type, parser_context)
        if named:
            return named
        request = parser_context["request"]
        return request.GET.get("filename", "") or "upload"
