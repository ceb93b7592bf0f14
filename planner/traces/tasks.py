"""The Celery task that parses an uploaded trace off the web request, with progress.

A worker claims the trace like a run (``planner.studies.attempts``: redelivery, retries, dead
workers), reads the upload through ``scheduling.traces`` while a thread writes the heartbeat and
the bytes read so far, then stores the jobs file and the summary and marks the trace ready. Bad
input fails the trace with the reader's row-and-field message and keeps nothing else (no jobs file,
no summary, no upload).
"""

from __future__ import annotations

import os
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from planner.studies.attempts import Heartbeat, owned, run_attempt
from planner.traces.models import ParseStatus, Trace, read_upload, save_columns, trace_summary
from scheduling.errors import InputError
from scheduling.traces import detect_format, open_source


class ReadProgress(Heartbeat):
    """The heartbeat of a parse: the position of the upload's file descriptor is the bytes read
    (of the compressed file, for gzip), whichever reader reads it and however it buffers."""

    def __init__(self, trace: Trace, attempt: int, descriptor: int):
        super().__init__(Trace, trace.pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS)
        self.descriptor = descriptor
        self.total = max(1, trace.upload_bytes)

    def beat(self) -> None:
        try:
            done = os.lseek(self.descriptor, 0, os.SEEK_CUR)
        except OSError:  # closed as the parse ended
            return
        fraction = round(min(done / self.total, 0.99), 4)
        update = {"heartbeat": timezone.now(), "progress": fraction, "bytes_read": min(done, self.total)}
        if not owned(Trace, self.pk, self.attempt).update(**update):
            self.superseded = True


def fail_parse(trace: Trace, attempt: int, error: InputError) -> None:
    """The trace failed with the reader's message; the upload goes, nothing else was kept."""
    now = timezone.now()
    owned(Trace, trace.pk, attempt).update(
        status=ParseStatus.FAILED,
        error=error.describe()[:4000],
        error_row=error.row,
        error_field=(error.field or "")[:200],
        finished_at=now,
        heartbeat=now,
    )
    trace.discard_upload()


def detected_format(path: Path, source_name: str) -> str:
    """What ``format="auto"`` reads a file as: by the uploaded name's extension, else by its
    first character (``scheduling.traces.detect_format``; the stored file has no extension)."""
    name = source_name.lower().removesuffix(".gz")
    if name.endswith(".json"):
        return "planner-json"
    if name.endswith(".csv"):
        return "planner-csv"
    with open_source(path) as opened:
        return detect_format(opened)


def execute(trace_id: int, attempt: int) -> bool:
    """Parse the upload and store it; True when this attempt recorded the outcome."""
    trace = Trace.objects.get(pk=trace_id)
    path = Path(settings.MEDIA_ROOT) / trace.upload_file.name
    fmt = trace.format
    try:
        if fmt == "auto":  # the trace keeps the format it was read as, not "auto"
            fmt = detected_format(path, trace.source_name)
        with path.open("rb") as stream, ReadProgress(trace, attempt, stream.fileno()):
            columns = read_upload(stream, format=fmt, mapping=trace.mapping)
    except InputError as error:
        fail_parse(trace, attempt, error)
        return True
    name = save_columns(columns)
    with transaction.atomic():
        recorded = owned(Trace, trace_id, attempt).update(
            status=ParseStatus.SUCCEEDED,
            format=fmt,
            summary=trace_summary(columns),
            job_count=len(columns),
            jobs_file=name,
            progress=1.0,
            bytes_read=trace.upload_bytes,
            error="",
            heartbeat=timezone.now(),
            finished_at=timezone.now(),
        )
    if not recorded:
        (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
        return False
    trace.discard_upload()
    return True


@shared_task(bind=True, acks_late=True, reject_on_worker_lost=True, max_retries=None)
def parse_trace(self, trace_id: int) -> str:
    """Parse one uploaded trace. Idempotent: a ready or failed trace is left alone."""
    outcome = run_attempt(self, Trace, trace_id, execute)
    discard_failed_uploads(Trace.objects.filter(pk=trace_id))
    return outcome


def enqueue_parses(trace_ids) -> None:
    """Send one ``parse_trace`` task per trace once the current transaction commits."""
    ids = list(trace_ids)
    for trace_id in ids:
        transaction.on_commit(lambda trace_id=trace_id: parse_trace.delay(trace_id))


def discard_failed_uploads(traces=None) -> None:
    """A trace that failed (bad input, or its last attempt gave up) keeps no upload."""
    rows = (traces if traces is not None else Trace.objects.all()).filter(status=ParseStatus.FAILED)
    for trace in rows.exclude(upload_file=""):
        trace.discard_upload()


def reap_stale_parses(traces=None, now=None) -> dict[str, list[int]]:
    """Parses whose worker stopped beating: sent again, or failed with the reason after the last
    attempt (then their upload goes)."""
    from planner.studies.attempts import reap_stale

    rows = traces if traces is not None else Trace.objects.all()
    outcome = reap_stale(rows, enqueue_parses, now)
    discard_failed_uploads(rows)
    return outcome
