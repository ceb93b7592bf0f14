"""A workload trace: metadata and summary in the database, the jobs in one ``.npz`` file.

Jobs are never stored one row per job: ``scheduling.trace.Trace.save`` writes the columns
once, and ``Trace.load_jobs`` reads them back for a replay in well under a second.

An upload is stored as it came (``upload_file``) and parsed by a worker (``planner.traces.tasks``):
the trace is *parsing* (status queued or running, with the bytes read so far) until it is *ready*
(status succeeded: summary and jobs file) or *failed* (the reader's message; nothing else kept).
"""

from __future__ import annotations

import inspect
import os
import tempfile
import uuid
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db import models
from django.db.models.signals import post_delete
from django.dispatch import receiver

from planner.capacity.models import InstanceType
from planner.missing_files import stored_file
from planner.strict_json import strict_json
from planner.validators import validate_long_name
from planner.worker_rows import Launched, WorkerAttempt
from scheduling.errors import InputError
from scheduling.trace import Trace as TraceColumns
from scheduling.trace import accepted_types
from scheduling.traces import FORMATS, read_trace
from scheduling.traces.fields import open_source
from scheduling.traces.summary import summarize


def trace_summary(trace: TraceColumns) -> dict[str, Any]:
    """``scheduling.traces.summary.summarize`` with GPUs per instance type from the database."""
    names = {part for name in trace.type_names for part in accepted_types(name)}  # (section 12 lists)
    gpus = dict(InstanceType.objects.filter(name__in=sorted(names)).values_list("name", "gpus"))
    return strict_json(summarize(trace, gpus_per_type=gpus or None))


def check_options(format: str, mapping: dict | None) -> None:
    """Refuse, before any file is read, a format that does not exist or takes no mapping."""
    if format != "auto" and format not in FORMATS:
        allowed = ", ".join(["auto", *FORMATS])
        raise InputError(f"unknown trace format {format!r}: the formats are {allowed}", field="format")
    if mapping:
        reader = FORMATS.get(format)
        if reader is None or "mapping" not in inspect.signature(reader).parameters:
            raise InputError(f"the format {format!r} takes no column mapping", field="mapping")


def read_upload(
    source: IO[bytes] | str | Path, *, format: str = "auto", mapping: dict | None = None
) -> TraceColumns:
    """Parse a trace through ``scheduling.traces`` with the configured row and decompressed-size
    limits; raises InputError."""
    options: dict[str, Any] = {"max_rows": settings.PLANNER_MAX_TRACE_ROWS}
    check_options(format, mapping)
    if mapping:
        options["mapping"] = mapping
    with open_source(source, max_decompressed=settings.PLANNER_MAX_DECOMPRESSED_BYTES) as opened:
        return read_trace(opened, format=format, **options)


class ParseStatus(models.TextChoices):
    """The parse of an upload, in the values ``planner.studies.attempts`` works with (RunStatus's)."""

    QUEUED = "queued", "waiting for a worker"
    RUNNING = "running", "being parsed"
    SUCCEEDED = "succeeded", "ready"
    FAILED = "failed", "failed"


PARSE_FINISHED = (ParseStatus.SUCCEEDED, ParseStatus.FAILED)


class TraceQuerySet(models.QuerySet):
    def ready(self) -> TraceQuerySet:
        """Traces that can be replayed (the lists and choices everyone sees)."""
        return self.filter(status=ParseStatus.SUCCEEDED)


class Trace(WorkerAttempt, Launched):
    """An uploaded or generated workload trace."""

    objects = TraceQuerySet.as_manager()

    class Meta(Launched.Meta):  # (newest first: of two abstract parents, only the first's is inherited)
        pass

    name = models.CharField(max_length=200, unique=True, validators=[validate_long_name])
    description = models.TextField(blank=True)
    format = models.CharField(max_length=40, default="auto", help_text="the reader it was read with")
    source_name = models.CharField(max_length=255, blank=True, help_text="the uploaded file's name")
    mapping = models.JSONField(null=True, blank=True, help_text="column mapping used by the reader")
    summary = models.JSONField(default=dict, blank=True)
    job_count = models.PositiveIntegerField(default=0)
    jobs_file = models.FileField(
        upload_to="traces/", max_length=255, blank=True, help_text="the jobs as columns (.npz)"
    )
    status = models.CharField(
        max_length=16, choices=ParseStatus.choices, default=ParseStatus.SUCCEEDED, db_index=True
    )
    upload_file = models.FileField(
        upload_to="uploads/", max_length=255, blank=True, help_text="the file as uploaded, until it is parsed"
    )
    upload_bytes = models.BigIntegerField(default=0, help_text="the uploaded file's size")
    bytes_read = models.BigIntegerField(default=0, help_text="how much of the upload the parser has read")
    error_row = models.PositiveIntegerField(null=True, blank=True)
    error_field = models.CharField(max_length=200, blank=True)

    def __str__(self) -> str:
        return self.name

    # -- the parse of an upload (fields as a Run's, for planner.studies.attempts) ---------------

    @property
    def finished(self) -> bool:
        return self.status in PARSE_FINISHED

    @property
    def ready(self) -> bool:
        return self.status == ParseStatus.SUCCEEDED

    @property
    def state(self) -> str:
        """``parsing``, ``ready`` or ``failed``: what the API and the pages say."""
        if self.status == ParseStatus.SUCCEEDED:
            return "ready"
        return "failed" if self.status == ParseStatus.FAILED else "parsing"

    def error_dict(self) -> dict | None:
        """The parse's error in the API's shape ``{"row", "field", "message"}``."""
        if self.status != ParseStatus.FAILED:
            return None
        return {"row": self.error_row, "field": self.error_field or None, "message": self.error}

    @classmethod
    def receive(cls, upload: IO[bytes], *, name: str, size: int, **fields: Any) -> Trace:
        """Keep an upload on disk as it came (moved when Django already streamed it to a file) and
        create its row, waiting for a worker (``planner.traces.tasks.parse_trace``)."""
        folder = Path(settings.MEDIA_ROOT) / "uploads"
        folder.mkdir(parents=True, exist_ok=True)
        final = folder / f"upload-{uuid.uuid4().hex}"
        descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".incoming-")
        try:
            with os.fdopen(descriptor, "wb") as out:
                moved = False
                if hasattr(upload, "temporary_file_path"):
                    try:
                        os.replace(upload.temporary_file_path(), temporary)
                        moved = True
                    except OSError:  # another file system: copied below
                        pass
                    else:  # (closed now: Django's file would try to delete it when collected)
                        upload.close()
                if not moved:
                    for chunk in upload.chunks():
                        out.write(chunk)
            os.replace(temporary, final)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
        relative = final.relative_to(Path(settings.MEDIA_ROOT)).as_posix()
        try:
            return cls.objects.create(
                name=name, status=ParseStatus.QUEUED, upload_file=relative, upload_bytes=size, **fields
            )
        except BaseException:
            final.unlink(missing_ok=True)
            raise

    def discard_upload(self) -> None:
        """The uploaded file is not needed once the trace is ready or failed."""
        if self.upload_file.name:
            self.upload_file.storage.delete(self.upload_file.name)
            Trace.objects.filter(pk=self.pk).update(upload_file="")
            self.upload_file.name = ""

    @classmethod
    def store(cls, columns: TraceColumns, *, name: str, **fields: Any) -> Trace:
        """Save the columns as one ``.npz`` file (written atomically) and create the row."""
        relative = save_columns(columns)
        try:
            return cls.objects.create(
                name=name,
                summary=trace_summary(columns),
                job_count=len(columns),
                jobs_file=relative,
                progress=1.0,
                **fields,
            )
        except BaseException:
            (Path(settings.MEDIA_ROOT) / relative).unlink(missing_ok=True)
            raise

    def share_names(self) -> list[str]:
        """The shares its jobs name (from the summary: no job file read)."""
        return [share["name"] for share in self.summary.get("shares", [])]

    def type_names(self) -> list[str]:
        """The instance types its jobs name, ``""`` for jobs naming none (from the summary)."""
        return list(self.summary.get("instance_types", {}))

    def load_jobs(self) -> TraceColumns:
        """The jobs as columns, ready for ``scheduling.replay.engine.replay``."""
        with stored_file(self.jobs_file, f"the jobs of trace {self.name}") as stream:
            return TraceColumns.load(stream)


def save_columns(columns: TraceColumns) -> str:
    """Write the columns as one ``.npz`` file under MEDIA_ROOT (atomically); its media name."""
    folder = Path(settings.MEDIA_ROOT) / "traces"
    folder.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=folder, prefix=".upload-", suffix=".npz")
    try:
        with os.fdopen(descriptor, "wb") as out:
            columns.save(out)
        final = folder / f"trace-{uuid.uuid4().hex}.npz"
        os.replace(temporary, final)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return final.relative_to(Path(settings.MEDIA_ROOT)).as_posix()


@receiver(post_delete, sender=Trace)
def delete_jobs_file(sender, instance: Trace, **kwargs) -> None:
    """The jobs file goes with its row (also when deleted in bulk, e.g. from the admin)."""
    if instance.jobs_file.name:
        instance.jobs_file.storage.delete(instance.jobs_file.name)
    if instance.upload_file.name:
        instance.upload_file.storage.delete(instance.upload_file.name)
