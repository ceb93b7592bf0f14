"""The Celery task that parses an uploaded trace off the web request, with progress.

A worker claims the trace like a run (``planner.studies.attempts``: redelivery, retries, dead
workers), reads the upload through ``scheduling.traces`` while a thread writes the heartbeat and
the bytes read so far, then stores the jobs file and the summary and marks the trace ready. Bad
input fails the trace with the reader's row-and-field message and keeps nothing else (no jobs file,
no summary, no upload).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
from collections.abc import Callable
from pathlib import Path

from celery import shared_task
from django.conf import settings
from django.db import DatabaseError, transaction
from django.utils import timezone

from planner.studies.attempts import Heartbeat, Superseded, owned, reap_stale, run_attempt
from planner.traces.models import ParseStatus, Trace, read_upload, save_columns, trace_summary
from planner.worker_results import record_success
from scheduling.errors import InputError
from scheduling.traces import detect_format, open_source

logger = logging.getLogger(__name__)


class ReadProgress(Heartbeat):
    """The heartbeat of a parse: the position of the upload's file descriptor is the bytes read
    (of the compressed file, for gzip), whichever reader reads it and however it buffers."""

    def __init__(self, trace: Trace, attempt: int):
        super().__init__(Trace, trace.pk, attempt, settings.PLANNER_HEARTBEAT_SECONDS)
        self.descriptor: int | None = None  # the upload's, while it is read
        self.total = max(1, trace.upload_bytes)
        self.done = 0

    def beat(self) -> None:
        descriptor = self.descriptor
        if descriptor is not None:
            with contextlib.suppress(OSError):  # closed as the reading ended
                self.done = os.lseek(descriptor, 0, os.SEEK_CUR)
        # (after the reading, while the columns are stored: the last position, and the beat)
        fraction = round(min(self.done / self.total, 0.99), 4)
        update = {"heartbeat": timezone.now(), "progress": fraction, "bytes_read": min(self.done, self.total)}
        if not owned(Trace, self.pk, self.attempt).update(**update):
            self.superseded = True


class CheckedFile(io.FileIO):
    """The upload's file, calling ``check`` before each read: the readers (and gzip) read through
    it, so the parse beats from its own thread and stops (Superseded) once the trace is deleted,
    whatever the reader is doing between reads."""

    check: Callable[[], None] = staticmethod(lambda: None)

    def readinto(self, buffer) -> int | None:
        self.check()
        return super().readinto(buffer)

    def readall(self) -> bytes:
        self.check()
        return super().readall()


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
    # Every phase beats: the reading, then storing the columns and summing them up (seconds, for
    # millions of jobs); a trace deleted meanwhile stops at the next read or check.
    fmt = trace.format
    with ReadProgress(trace, attempt) as progress:
        try:
            if fmt == "auto":  # the trace keeps the format it was read as, not "auto"
                fmt = detected_format(path, trace.source_name)
            with CheckedFile(path, "rb") as raw:
                progress.descriptor = raw.fileno()
                raw.check = progress.check
                stream = io.BufferedReader(raw, 1024 * 1024)
                try:
                    columns = read_upload(stream, format=fmt, mapping=trace.mapping)
                finally:
                    progress.descriptor = None
        except InputError as error:
            fail_parse(trace, attempt, error)
            return True
        except (Superseded, OSError, MemoryError, DatabaseError):
            raise  # stopped, or the machine's trouble: retried (Superseded: nothing more to do)
        except Exception as error:
            # Anything else the reader raises, it would raise again on the same file: final at
            # once, not three attempts and half a minute later.
            logger.exception("trace %s: the reader failed", trace_id)
            fail_parse(
                trace, attempt, InputError(f"the file could not be read: {type(error).__name__}: {error}")
            )
            return True
        progress.check()
        name = save_columns(columns)
        try:
            summary = trace_summary(columns)
            progress.check()
        except BaseException:
            (Path(settings.MEDIA_ROOT) / name).unlink(missing_ok=True)
            raise
    with transaction.atomic():
        recorded = record_success(
            Trace, trace_id, attempt, format=fmt, summary=summary, job_count=len(columns), jobs_file=name,
            bytes_read=trace.upload_bytes,
        )  # fmt: skip
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
    rows = traces if traces is not None else Trace.objects.all()
    outcome = reap_stale(rows, enqueue_parses, now)
    discard_failed_uploads(rows)
    return outcome
