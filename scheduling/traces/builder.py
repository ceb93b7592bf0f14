"""TraceBuilder: the one place that decides what a valid job is, shared by every trace reader.

Readers parse their own format and call ``add_job`` once per row; the builder checks each
job, keeps the values in typed columns (``array``, not one object per job) and builds a Trace.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Mapping

import numpy as np

from scheduling.errors import InputError
from scheduling.model import MAX_INSTANCES, MAX_PRIORITY
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES, PriorityUpdates, Trace
from scheduling.traces.fields import check_text

_NAN = float("nan")


class TraceBuilder:
    """Accumulates jobs (and priority updates) as columns, validating each one.

    ``max_rows`` caps the number of jobs (an upload limit); ``source`` names the format or
    file in whole-trace messages. ``field_names`` maps the planner's field names to the
    column names of the file being read (``{"duration": "Elapsed"}``) so that messages name
    the column the person sees.
    """

    def __init__(
        self, *, max_rows: int | None = None, source: str = "", field_names: Mapping[str, str] | None = None
    ):
        self.max_rows = max_rows
        self.source = source
        self._field_names = dict(field_names or {})
        self._job_id: list[str] = []
        self._row_of: dict[str, int] = {}
        self._submit = array("d")
        self._share = array("i")
        self._share_codes: dict[str, int] = {}
        self._priority = array("i")
        self._type = array("i")
        self._type_codes: dict[str, int] = {}
        self._count = array("i")
        self._duration = array("d")
        self._checkpoint = array("d")
        self._retries = array("i")
        self._user: list[str] = []
        self._name: list[str] = []
        self._any_user = False
        self._any_name = False
        self._recorded = array("d")
        self._any_recorded = False
        self._preempted = array("i")
        self._any_preempted = False
        self._update_time = array("d")
        self._update_job: list[str] = []
        self._update_priority = array("i")
        self._epoch: bool | None = None
        self._epoch_row: int | None = None
        self._jobs_before = 0

    def __len__(self) -> int:
        return self._jobs_before + len(self._job_id)

    def resume_after(
        self, jobs: int, *, earlier_row_of: Mapping[str, int] = {}, epoch: tuple[bool, int] | None = None
    ) -> TraceBuilder:
        """Stand as if ``jobs`` valid jobs had been added, so that one more row gets exactly the
        message a row-by-row read would give it: ``earlier_row_of`` holds the earlier rows of the
        job ids it may repeat, ``epoch`` the kind of time seen first and its row. The columnar
        reader (``scheduling.traces.columnar``) re-checks its first bad row this way."""
        self._jobs_before = jobs
        self._row_of.update(earlier_row_of)
        if epoch is not None:
            self._epoch, self._epoch_row = epoch
        return self

    def _field(self, name: str) -> str:
        return self._field_names.get(name, name)

    def _fail(self, message: str, row: int | None, name: str | None) -> InputError:
        return InputError(message, row=row, field=self._field(name) if name else None)

    def _text(self, value: str | None, row: int, name: str, *, required: bool) -> str | None:
        if value is None or (isinstance(value, str) and not value.strip()):
            if required:
                raise self._fail("is empty", row, name)
            return None
        if not isinstance(value, str):
            raise self._fail(f"{value!r} is not text", row, name)
        text = value.strip()
        check_text(text, row, self._field(name))
        return text

    def _finite(self, value: float, row: int | None, name: str) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            raise self._fail(f"{value!r} is not a number", row, name) from None
        if isinstance(value, bool) or not math.isfinite(number):
            raise self._fail(f"{value!r} is not a finite number", row, name)
        return number

    def _whole(self, value: int, row: int | None, name: str) -> int:
        if isinstance(value, bool) or not isinstance(value, (int, np.integer, float, np.floating)):
            raise self._fail(f"{value!r} is not a whole number", row, name)
        if isinstance(value, (float, np.floating)) and not (
            math.isfinite(value) and float(value).is_integer()
        ):
            raise self._fail(f"{value!r} is not a whole number", row, name)
        return int(value)

    def _priority_value(self, value: int, row: int | None, name: str) -> int:
        priority = self._whole(value, row, name)
        if not 0 <= priority <= MAX_PRIORITY:
            raise self._fail(f"{priority} is outside 0..{MAX_PRIORITY}", row, name)
        return priority

    def add_job(
        self,
        row: int,
        *,
        job_id: str,
        submit_time: float,
        share: str,
        duration: float,
        priority: int = 0,
        instance_type: str | None = None,
        instance_count: int = 1,
        checkpoint_interval: float | None = None,
        preemption_retries: int | None = None,
        user: str | None = None,
        name: str | None = None,
        recorded_start: float | None = None,
        recorded_preemptions: int | None = None,
    ) -> None:
        """Check one job and append it; ``row`` is its 1-based data row for messages."""
        if self.max_rows is not None and len(self) >= self.max_rows:
            raise InputError(f"more than {self.max_rows} jobs: the limit is {self.max_rows}", row=row)
        # Checked in the order of the fields, so that a row with several faults names the first.
        # The optional fields' helpers are called only when the value is given: this runs once per
        # row of a million-row import, and most rows leave them out.
        job = self._valid_job_id(job_id, row)
        submit = self._finite(submit_time, row, "submit_time")
        share_name = self._text(share, row, "share", required=True)
        work = self._valid_duration(duration, row)
        prio = self._priority_value(priority, row, "priority")
        type_name = self._text(instance_type, row, "instance_type", required=False)
        count = self._valid_instance_count(instance_count, row)
        checkpoint = _NAN if checkpoint_interval is None else self._valid_checkpoint(checkpoint_interval, row)
        retries = UNLIMITED_RETRIES
        if preemption_retries is not None:
            retries = self._valid_retries(preemption_retries, row)
        user_name = self._text(user, row, "user", required=False)
        job_name = self._text(name, row, "name", required=False)
        recorded = _NAN if recorded_start is None else self._finite(recorded_start, row, "recorded_start")
        preempted = -1 if recorded_preemptions is None else self._valid_preemptions(recorded_preemptions, row)

        self._row_of[job] = row
        self._job_id.append(job)
        self._submit.append(submit)
        # share and type names as codes, numbered in the order they first appear
        shares, types = self._share_codes, self._type_codes
        self._share.append(shares.setdefault(share_name, len(shares)))
        self._priority.append(prio)
        self._type.append(NO_TYPE if type_name is None else types.setdefault(type_name, len(types)))
        self._count.append(count)
        self._duration.append(work)
        self._checkpoint.append(checkpoint)
        self._retries.append(retries)
        self._user.append(user_name or "")
        self._any_user = self._any_user or user_name is not None
        self._name.append(job_name or "")
        self._any_name = self._any_name or job_name is not None
        self._recorded.append(recorded)
        self._any_recorded = self._any_recorded or recorded_start is not None
        self._preempted.append(preempted)
        self._any_preempted = self._any_preempted or recorded_preemptions is not None

    # -- one field of a job each: its rule and its message

    def _valid_job_id(self, job_id: str, row: int) -> str:
        """A job id: text (a whole number is taken as its digits), not seen in an earlier row."""
        if isinstance(job_id, int) and not isinstance(job_id, bool):
            job_id = str(job_id)
        job = self._text(job_id, row, "job_id", required=True)
        first = self._row_of.get(job)
        if first is not None:
            raise self._fail(f"{job!r} is a duplicate of row {first}", row, "job_id")
        return job

    def _valid_duration(self, value: float, row: int) -> float:
        work = self._finite(value, row, "duration")
        if work < 0:
            raise self._fail(f"{work:g} is negative", row, "duration")
        return work

    def _valid_instance_count(self, value: int, row: int) -> int:
        count = self._whole(value, row, "instance_count")
        if count < 1:
            raise self._fail(f"{count} is below the minimum 1", row, "instance_count")
        if count > MAX_INSTANCES:
            # No pool holds more of one type (MAX_INSTANCES), so no job can run on more.
            raise self._fail(
                f"{count:,} instances: a job runs on at most {MAX_INSTANCES:,}", row, "instance_count"
            )
        return count

    def _valid_checkpoint(self, value: float, row: int) -> float:
        checkpoint = self._finite(value, row, "checkpoint_interval")
        if checkpoint <= 0:
            raise self._fail(f"{checkpoint:g} must be more than 0", row, "checkpoint_interval")
        return checkpoint

    def _valid_retries(self, value: int, row: int) -> int:
        """Retries after a preemption; more than an int32 holds means as good as unlimited."""
        retries = self._whole(value, row, "preemption_retries")
        if retries < 0:
            raise self._fail(f"{retries} is negative", row, "preemption_retries")
        return min(retries, 2**31 - 1)

    def _valid_preemptions(self, value: int, row: int) -> int:
        preempted = self._whole(value, row, "recorded_preemptions")
        if not 0 <= preempted <= 2**31 - 1:
            raise self._fail(f"{preempted} is not a count of preemptions", row, "recorded_preemptions")
        return preempted

    def add_priority_update(
        self, row: int | None, *, time: float, job_id: str, priority: int, field_prefix: str = ""
    ) -> None:
        """An UpdateServiceJob call. Updates for unknown jobs are kept: the replay ignores and
        counts them (SEMANTICS.md section 4). ``field_prefix`` (``priority_updates[3].``) is
        put before field names in messages."""
        saved = self._field_names
        self._field_names = {key: field_prefix + self._field(key) for key in ("time", "job_id", "priority")}
        try:
            if isinstance(job_id, int) and not isinstance(job_id, bool):
                job_id = str(job_id)
            job = self._text(job_id, row, "job_id", required=True)
            when = self._finite(time, row, "time")
            prio = self._priority_value(priority, row, "priority")
        finally:
            self._field_names = saved
        self._update_time.append(when)
        self._update_job.append(job)
        self._update_priority.append(prio)

    def mark_epoch_times(self, is_epoch: bool, *, row: int | None = None, field: str | None = None) -> None:
        """Record whether a time was an ISO-8601 timestamp; mixing both kinds is an error."""
        if self._epoch is None:
            self._epoch = bool(is_epoch)
            self._epoch_row = row
            return
        if self._epoch != bool(is_epoch):
            earlier = "ISO-8601 timestamps" if self._epoch else "plain seconds"
            now = "an ISO-8601 timestamp" if is_epoch else "plain seconds"
            since = f" (row {self._epoch_row})" if self._epoch_row is not None else ""
            raise InputError(
                f"{now}, but earlier times{since} are {earlier}: use one kind of time in a trace",
                row=row,
                field=field,
            )

    def build(self) -> Trace:
        """The Trace of everything added; an empty trace is an InputError."""
        if not self._job_id:
            suffix = f" ({self.source})" if self.source else ""
            raise InputError(f"the trace has no jobs{suffix}")
        return Trace(
            job_id=list(self._job_id),
            submit_time=_column(self._submit, np.float64),
            share=_column(self._share, np.int32),
            share_names=list(self._share_codes),
            priority=_column(self._priority, np.int32),
            instance_type=_column(self._type, np.int32),
            type_names=list(self._type_codes),
            instance_count=_column(self._count, np.int32),
            duration=_column(self._duration, np.float64),
            checkpoint_interval=_column(self._checkpoint, np.float64),
            preemption_retries=_column(self._retries, np.int32),
            user=list(self._user) if self._any_user else None,
            name=list(self._name) if self._any_name else None,
            recorded_start=_column(self._recorded, np.float64) if self._any_recorded else None,
            recorded_preemptions=_column(self._preempted, np.int32) if self._any_preempted else None,
            updates=PriorityUpdates(
                _column(self._update_time, np.float64),
                list(self._update_job),
                _column(self._update_priority, np.int32),
            ),
            epoch_times=bool(self._epoch),
        )


def _column(values: array, dtype: type) -> np.ndarray:
    return np.frombuffer(values, dtype=values.typecode).astype(dtype, copy=True)
