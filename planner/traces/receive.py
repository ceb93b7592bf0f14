"""Receiving an upload: the trace row is kept and a worker is sent to parse it.

Apart from ``planner.traces.models`` because it sends the parse task, whose module reads and
writes those models.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.db import transaction

from planner.traces.models import ParseStatus, Trace
from planner.traces.tasks import enqueue_parses


def receive_upload(upload, *, name: str, **fields: Any) -> Trace:
    """Keep an upload and send it to a worker to parse, once the transaction commits; a failed
    trace of the same name is replaced."""
    with transaction.atomic():
        for failed in Trace.objects.filter(name=name, status=ParseStatus.FAILED):
            failed.delete()
        trace = Trace.receive(
            upload, name=name, size=upload.size or 0, source_name=upload.name or "", **fields
        )
        enqueue_parses([trace.pk])
    trace.refresh_from_db()
    return trace


def receive_upload_form(data: Mapping[str, Any], user) -> Trace:
    """``receive_upload`` of what an upload form validated (the page's form and the API's share
    its fields: file, name, description, format, mapping)."""
    return receive_upload(
        data["file"],
        name=data["name"],
        description=data["description"],
        format=data["format"],
        mapping=data["mapping"],
        created_by=user,
    )
