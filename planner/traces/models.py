"""A workload trace: metadata and summary in the database, the jobs in one ``.npz`` file.

Jobs are never stored one row per job: ``scheduling.trace.Trace.save`` writes the columns
once, and ``Trace.load_jobs`` reads them back for a replay in well under a second.
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
from planner.strict_json import strict_json
from planner.validators import validate_long_name
from scheduling.errors import InputError
from scheduling.trace import Trace as TraceColumns
from scheduling.traces import FORMATS, read_trace
from scheduling.traces.summary import summarize


def trace_summary(trace: TraceColumns) -> dict[str, Any]:
    """``scheduling.traces.summary.summarize`` with GPUs per instance type from the database."""
    gpus = dict(InstanceType.objects.filter(name__in=trace.type_names).values_list("name", "gpus"))
    return strict_json(summarize(trace, gpus_per_type=gpus or None))


def read_upload(
    source: IO[bytes] | str | Path, *, format: str = "auto", mapping: dict | None = None
) -> TraceColumns:
    """Parse a trace through ``scheduling.traces`` with the configured row limit; raises InputError."""
    options: dict[str, Any] = {"max_rows": settings.PLANNER_MAX_TRACE_ROWS}
    if mapping:
        reader = FORMATS.get(format)
        if reader is None or "mapping" not in inspect.signature(reader).parameters:
            raise InputError(f"the format {format!r} takes no column mapping", field="mapping")
        options["mapping"] = mapping
    return read_trace(source, format=format, **options)


class Trace(models.Model):
    """An uploaded or generated workload trace."""

    name = models.CharField(max_length=200, unique=True, validators=[validate_long_name])
    description = models.TextField(blank=True)
    format = models.CharField(max_length=40, default="auto", help_text="the reader it was read with")
    source_name = models.CharField(max_length=255, blank=True, help_text="the uploaded file's name")
    mapping = models.JSONField(null=True, blank=True, help_text="column mapping used by the reader")
    summary = models.JSONField(default=dict, blank=True)
    job_count = models.PositiveIntegerField(default=0)
    jobs_file = models.FileField(upload_to="traces/", max_length=255, help_text="the jobs as columns (.npz)")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="traces"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    @classmethod
    def store(cls, columns: TraceColumns, *, name: str, **fields: Any) -> Trace:
        """Save the columns as one ``.npz`` file (written atomically) and create the row."""
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
        relative = final.relative_to(Path(settings.MEDIA_ROOT)).as_posix()
        try:
            return cls.objects.create(
                name=name,
                summary=trace_summary(columns),
                job_count=len(columns),
                jobs_file=relative,
                **fields,
            )
        except BaseException:
            final.unlink(missing_ok=True)
            raise

    def share_names(self) -> list[str]:
        """The shares its jobs name (from the summary: no job file read)."""
        return [share["name"] for share in self.summary.get("shares", [])]

    def type_names(self) -> list[str]:
        """The instance types its jobs name, ``""`` for jobs naming none (from the summary)."""
        return list(self.summary.get("instance_types", {}))

    def load_jobs(self) -> TraceColumns:
        """The jobs as columns, ready for ``scheduling.engine.replay``."""
        with self.jobs_file.open("rb") as stream:
            return TraceColumns.load(stream)


@receiver(post_delete, sender=Trace)
def delete_jobs_file(sender, instance: Trace, **kwargs) -> None:
    """The jobs file goes with its row (also when deleted in bulk, e.g. from the admin)."""
    if instance.jobs_file.name:
        instance.jobs_file.storage.delete(instance.jobs_file.name)
