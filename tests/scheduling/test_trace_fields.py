"""The cell parsers every trace reader shares: each bad cell names its row, field and value."""

from __future__ import annotations

import pytest

from scheduling.errors import InputError
from scheduling.traces.fields import (
    parse_int,
    parse_optional_int,
    parse_optional_seconds,
    parse_optional_text,
    parse_optional_time,
    parse_seconds,
    parse_text,
    parse_time,
)


def error(call, *args, **kwargs) -> InputError:
    with pytest.raises(InputError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_plain_seconds_are_not_epoch_times():
    assert parse_time("12.5", 1, "submit_time") == (12.5, False)
    assert parse_time(30, 1, "submit_time") == (30.0, False)
    assert parse_time(" 0 ", 1, "submit_time") == (0.0, False)


def test_iso_timestamps_become_unix_seconds():
    assert parse_time("2024-05-01T09:30:00Z", 1, "submit_time") == (1714555800.0, True)
    assert parse_time("2024-05-01T11:30:00+02:00", 1, "submit_time") == (1714555800.0, True)
    assert parse_time("2024-05-01T09:30:00.250000Z", 1, "submit_time") == (1714555800.25, True)


def test_naive_timestamps_are_taken_as_utc():
    assert parse_time("2024-05-01 09:30:00", 1, "submit_time") == (1714555800.0, True)
    assert parse_time("2024-05-01", 1, "submit_time") == (1714521600.0, True)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-5", "row 3, submit_time: -5 is before 1970-01-01T00:00:00Z (a negative time)"),
        ("nan", "row 3, submit_time: 'nan' is not a finite number"),
        (float("inf"), "row 3, submit_time: inf is not a finite number"),
        ("yesterday", "row 3, submit_time: 'yesterday' is neither seconds nor an ISO-8601 timestamp"),
        ("2024-13-01T00:00:00", "row 3, submit_time: '2024-13-01T00:00:00' is neither seconds"),
        ("", "row 3, submit_time: is empty"),
        (True, "row 3, submit_time: True is not a number"),
    ],
)
def test_bad_times_name_row_field_and_value(value, message):
    caught = error(parse_time, value, 3, "submit_time")
    assert (caught.row, caught.field) == (3, "submit_time")
    assert str(caught).startswith(message)


RANGE_RULE = (
    "is before 1970-01-01T00:00:00Z (a negative time): times are seconds from 0 or ISO-8601 timestamps "
    "from 1970 on"
)


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (-1, "-1"),
        ("-1", "-1"),
        (-0.5, "-0.5"),
        ("0001-01-01", "'0001-01-01'"),  # stored before as -62,135,596,800 s
        ("1900-01-01T00:00:00Z", "'1900-01-01T00:00:00Z'"),
        ("1970-01-01T00:59:59+01:00", "'1970-01-01T00:59:59+01:00'"),  # 1969-12-31 23:59:59 UTC
        ("1969-12-31T23:59:59.5", "'1969-12-31T23:59:59.5'"),
    ],
)
def test_a_time_before_1970_is_refused_alike_as_a_number_or_a_timestamp(value, shown):
    # One rule at the boundary: a timestamp before Unix time 0 is refused as -1 is, same words.
    assert str(error(parse_time, value, 4, "submit_time")) == f"row 4, submit_time: {shown} {RANGE_RULE}"


@pytest.mark.parametrize(
    ("value", "shown"),
    [(1e10 + 1, "1e+10"), ("10000000001", "10000000001"), ("2287-01-01T00:00:00Z", "'2287-01-01T00:00:00Z'")],
)
def test_a_time_after_2286_is_refused_alike_as_a_number_or_a_timestamp(value, shown):
    assert str(error(parse_time, value, 4, "submit_time")) == (
        f"row 4, submit_time: {shown} is after 2286-11-20T17:46:40Z (1e+10 seconds), the latest time accepted"
    )


def test_the_range_ends_are_accepted():
    assert parse_time("1970-01-01T00:00:00Z", 1, "t") == (0.0, True)
    assert parse_time(0, 1, "t") == (0.0, False)
    assert parse_time("2286-11-20T17:46:40Z", 1, "t") == (1e10, True)
    assert parse_time(1e10, 1, "t") == (1e10, False)


def test_seconds():
    assert parse_seconds("90", 1, "duration") == 90.0
    assert parse_seconds(0, 1, "duration") == 0.0
    assert str(error(parse_seconds, "-5", 12, "duration")) == "row 12, duration: -5 is negative"
    assert str(error(parse_seconds, -2.5, 12, "duration")) == "row 12, duration: -2.5 is negative"
    assert (
        str(error(parse_seconds, "ten", 12, "duration"))
        == "row 12, duration: 'ten' is not a number of seconds"
    )
    assert (
        str(error(parse_seconds, "inf", 12, "duration")) == "row 12, duration: 'inf' is not a finite number"
    )
    caught = error(parse_seconds, "0", 4, "checkpoint_interval", allow_zero=False)
    assert str(caught) == "row 4, checkpoint_interval: 0 must be more than 0"


def test_whole_numbers():
    assert parse_int("3", 1, "instance_count", minimum=1) == 3
    assert parse_int("4.0", 1, "instance_count", minimum=1) == 4
    assert parse_int(7, 1, "priority", minimum=0, maximum=9999) == 7
    assert (
        str(error(parse_int, "3.5", 2, "instance_count", minimum=1))
        == "row 2, instance_count: 3.5 is not a whole number"
    )
    assert (
        str(error(parse_int, "0", 2, "instance_count", minimum=1))
        == "row 2, instance_count: 0 is below the minimum 1"
    )
    assert str(error(parse_int, "10000", 2, "priority", minimum=0, maximum=9999)) == (
        "row 2, priority: 10000 is outside 0..9999"
    )
    assert str(error(parse_int, "many", 2, "priority")) == "row 2, priority: 'many' is not a whole number"


def test_optional_cells_treat_blank_and_null_as_absent():
    for blank in ("", "  ", None):
        assert parse_optional_time(blank, 1, "recorded_start") is None
        assert parse_optional_seconds(blank, 1, "checkpoint_interval") is None
        assert parse_optional_int(blank, 1, "priority") is None
        assert parse_optional_text(blank, 1, "user") is None
    assert parse_optional_int("5", 1, "priority") == 5
    assert str(error(parse_optional_seconds, "-1", 6, "checkpoint_interval")) == (
        "row 6, checkpoint_interval: -1 is negative"
    )


def test_text_is_stripped_and_bounded():
    assert parse_text("  QS1 ", 1, "share") == "QS1"
    assert parse_text(17, 1, "job_id") == "17"
    assert str(error(parse_text, "a\x00b", 5, "job_id")) == "row 5, job_id: contains a NUL byte"
    assert (
        str(error(parse_text, "x" * 257, 5, "name"))
        == "row 5, name: is 257 characters long: the limit is 256"
    )
    assert parse_text("x" * 256, 5, "name") == "x" * 256
    assert str(error(parse_text, "", 5, "share")) == "row 5, share: is empty"
