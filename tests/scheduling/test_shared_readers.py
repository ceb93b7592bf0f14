"""The pieces the importers, exporters and snapshot readers now share: each rule written once, with the
message every caller gave before (json_fields, first_keys, unique_name, snapshot_time)."""

import io
import json
import math

import pytest

from scheduling.errors import InputError
from scheduling.export.escape import unique_name
from scheduling.forecast.snapshot import snapshot_time
from scheduling.traces.fields import TraceSource
from scheduling.traces.json_fields import JsonFields
from scheduling.traces.json_records import first_keys


class Fields(JsonFields):
    def fail(self, message: str, field: str) -> InputError:
        return InputError(f"job 7: {message}", field=field)


def message(call) -> str:
    with pytest.raises(InputError) as caught:
        call()
    return f"{caught.value.reason} @ {caught.value.field}"


def test_an_absent_object_reads_empty_and_anything_else_must_be_one():
    assert Fields().mapping(None, "spec") == {}
    assert message(lambda: Fields().mapping([1], "spec")) == "job 7: must be an object @ spec"


def test_whole_numbers_name_their_minimum():
    assert Fields().whole(3.0, "count") == 3
    assert message(lambda: Fields().whole(True, "count")) == "job 7: True is not a whole number @ count"
    assert message(lambda: Fields().whole(0, "count", minimum=1)) == "job 7: 0 is below 1 @ count"


def test_an_rfc_3339_time_needs_its_zone():
    assert Fields().rfc3339("2024-05-01T09:00:00Z", "t").timestamp() == 1714554000.0
    assert message(lambda: Fields().rfc3339("", "t")) == "job 7: '' is not an RFC 3339 time @ t"
    assert message(lambda: Fields().rfc3339("2024-05-01T09:00:00", "t")) == (
        "job 7: '2024-05-01T09:00:00' has no time zone @ t"
    )


def test_epoch_milliseconds_become_seconds_within_1970_to_2286():
    assert Fields().millis(1500, "createdAt") == 1.5
    assert Fields().millis(None, "startedAt") is None
    missing = message(lambda: Fields().millis(None, "createdAt", required=True))
    assert missing == "job 7: is missing @ createdAt"
    assert message(lambda: Fields().millis(-1, "createdAt")) == (
        "job 7: -1 is not a time in epoch milliseconds (1970 to 2286) @ createdAt"
    )


def test_first_keys_lists_nested_keys_in_the_order_first_seen():
    items = [{"tags": {"b": 1}}, {"tags": {"a": 1, "b": 2}}]
    source = TraceSource(io.BytesIO(json.dumps({"items": items}).encode()), name="jobs.json")
    found = first_keys(source, ("items",), "tags", lambda record: record.value.get("tags") or {})
    assert found == ["tags.b", "tags.a"]


def test_unique_names_are_numbered_within_the_length_limit():
    used = {"team", "team-2"}
    assert unique_name("team", used, 128) == "team-3"
    assert "team-3" in used
    # the name is cut so that name and number stay within the limit
    assert unique_name("x" * 10, {"x" * 10}, 10) == "x" * 8 + "-2"


def test_the_snapshot_time_is_the_files_else_the_latest_recorded():
    assert snapshot_time({"time": 60}, 10.0, "no time") == 60.0
    assert snapshot_time({}, 10.0, "no time") == 10.0
    assert message(lambda: snapshot_time({}, -math.inf, "no time: no job")) == "no time: no job @ time"
