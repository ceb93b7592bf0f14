"""The upload size limit enforced while the request body streams in, not after it is stored.

``LimitedUploadHandler`` comes first in ``FILE_UPLOAD_HANDLERS``: it counts each file's bytes as
they arrive and stops the upload past ``PLANNER_MAX_UPLOAD_BYTES`` (chunked bodies declare no size).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadhandler import FileUploadHandler


class LimitedUploadHandler(FileUploadHandler):
    """Refuses the request (RequestDataTooBig: HTTP 413) once a file passes the limit."""

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
