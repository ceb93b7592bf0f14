"""TraceBuilder: the checks every reader gets, and the columns it builds."""

from __future__ import annotations

import math

import numpy as np
import pytest

from scheduling.errors import InputError
from scheduling.trace import NO_TYPE, UNLIMITED_RETRIES
from scheduling.traces.builder import TraceBuilder


def job(**overrides) -> dict:
    values = {"job_id": "a", "submit_time": 0.0, "share": "QS1", "duration": 60.0}
    values.update(overrides)
    return values


def rejected(builder: TraceBuilder, row: int = 7, **overrides) -> InputError:
    with pytest.raises(InputError) as caught:
        builder.add_job(row, **job(**overrides))
    return caught.value


def test_builds_columns_with_codes_and_defaults():
    builder = TraceBuilder()
    builder.add_job(1, **job(job_id="a", share="QS1", instance_type="ml.g5.xlarge", user="ana"))
    builder.add_job(
        2,
        **job(
            job_id="b",
            share="QS2",
            submit_time=5.0,
            priority=3,
            instance_count=2,
            checkpoint_interval=600.0,
            preemption_retries=0,
            recorded_start=9.0,
        ),
    )
    builder.add_job(3, **job(job_id="c", share="QS1", instance_type="ml.g5.xlarge"))
    trace = builder.build()
    assert trace.job_id == ["a", "b", "c"]
    assert trace.share_names == ["QS1", "QS2"]
    assert trace.share.tolist() == [0, 1, 0]
    assert trace.type_names == ["ml.g5.xlarge"]
    assert trace.instance_type.tolist() == [0, NO_TYPE, 0]
    assert trace.priority.tolist() == [0, 3, 0]
    assert trace.instance_count.tolist() == [1, 2, 1]
    assert trace.preemption_retries.tolist() == [UNLIMITED_RETRIES, 0, UNLIMITED_RETRIES]
    assert np.isnan(trace.checkpoint_interval[[0, 2]]).all() and trace.checkpoint_interval[1] == 600.0
    assert trace.user == ["ana", "", ""]
    assert trace.name is None  # no job had a name
    assert trace.recorded_start[1] == 9.0 and math.isnan(trace.recorded_start[0])
    assert trace.submit_time.dtype == np.float64 and trace.share.dtype == np.int32
    assert trace.epoch_times is False


def test_duplicate_job_id_names_both_rows():
    builder = TraceBuilder()
    builder.add_job(3, **job(job_id="a"))
    caught = rejected(builder, row=7, job_id="a")
    assert str(caught) == "row 7, job_id: 'a' is a duplicate of row 3"
    assert (caught.row, caught.field) == (7, "job_id")


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"priority": 10000}, "row 7, priority: 10000 is outside 0..9999"),
        ({"priority": -1}, "row 7, priority: -1 is outside 0..9999"),
        ({"priority": 2.5}, "row 7, priority: 2.5 is not a whole number"),
        ({"instance_count": 0}, "row 7, instance_count: 0 is below the minimum 1"),
        ({"duration": -5.0}, "row 7, duration: -5 is negative"),
        ({"duration": math.nan}, "row 7, duration: nan is not a finite number"),
        ({"submit_time": math.inf}, "row 7, submit_time: inf is not a finite number"),
        ({"checkpoint_interval": 0.0}, "row 7, checkpoint_interval: 0 must be more than 0"),
        ({"preemption_retries": -2}, "row 7, preemption_retries: -2 is negative"),
        ({"share": ""}, "row 7, share: is empty"),
        ({"share": "  "}, "row 7, share: is empty"),
        ({"job_id": ""}, "row 7, job_id: is empty"),
        ({"user": "a\x00b"}, "row 7, user: contains a NUL byte"),
        ({"name": "n" * 300}, "row 7, name: is 300 characters long: the limit is 256"),
        ({"instance_type": "t" * 257}, "row 7, instance_type: is 257 characters long: the limit is 256"),
    ],
)
def test_each_check_names_row_and_field(overrides, message):
    caught = rejected(TraceBuilder(), **overrides)
    assert str(caught) == message
    assert caught.row == 7


def test_zero_duration_and_zero_retries_are_valid():
    builder = TraceBuilder()
    builder.add_job(1, **job(duration=0.0, preemption_retries=0))
    assert builder.build().duration.tolist() == [0.0]


def test_max_rows_rejects_the_first_row_over_the_limit():
    builder = TraceBuilder(max_rows=2)
    builder.add_job(1, **job(job_id="a"))
    builder.add_job(2, **job(job_id="b"))
    caught = rejected(builder, row=3, job_id="c")
    assert str(caught) == "row 3: more than 2 jobs: the limit is 2"
    assert caught.row == 3


def test_empty_trace_is_an_error():
    with pytest.raises(InputError, match="the trace has no jobs"):
        TraceBuilder().build()


def test_mixing_epoch_and_plain_times_is_an_error():
    builder = TraceBuilder()
    builder.mark_epoch_times(True, row=1, field="submit_time")
    builder.mark_epoch_times(True, row=2, field="submit_time")
    with pytest.raises(InputError) as caught:
        builder.mark_epoch_times(False, row=3, field="submit_time")
    assert (caught.value.row, caught.value.field) == (3, "submit_time")
    assert "plain seconds, but earlier times (row 1) are ISO-8601 timestamps" in str(caught.value)


def test_epoch_flag_reaches_the_trace():
    builder = TraceBuilder()
    builder.mark_epoch_times(True)
    builder.add_job(1, **job())
    assert builder.build().epoch_times is True


def test_priority_updates_are_validated_and_kept_for_unknown_jobs():
    builder = TraceBuilder()
    builder.add_job(1, **job(job_id="a"))
    builder.add_priority_update(1, time=30.0, job_id="a", priority=5)
    builder.add_priority_update(2, time=40.0, job_id="not-submitted", priority=1)  # the replay ignores it
    with pytest.raises(InputError) as caught:
        builder.add_priority_update(
            None, time=50.0, job_id="a", priority=10000, field_prefix="priority_updates[2]."
        )
    assert caught.value.field == "priority_updates[2].priority"
    assert caught.value.row is None
    updates = builder.build().updates
    assert updates.job_id == ["a", "not-submitted"]
    assert updates.time.tolist() == [30.0, 40.0] and updates.priority.tolist() == [5, 1]


def test_field_names_map_messages_to_the_source_columns():
    builder = TraceBuilder(field_names={"duration": "Elapsed"})
    caught = rejected(builder, duration=-1.0)
    assert caught.field == "Elapsed"
