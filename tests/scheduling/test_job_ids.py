"""Job ids held as one Arrow column (scheduling.job_ids): read like the list they replace, stored
and loaded as two arrays (and from the fixed-width arrays of earlier files), and the first repeated
id found exactly, read off the ids sorted as 8-byte words; that order is code-point order."""

from __future__ import annotations

import io

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scheduling.job_ids import JobIds
from scheduling.trace import Trace

IDS = ["j1", "é-ü", "", "job 4", "j5"]


def test_it_reads_like_the_list_of_strings():
    ids = JobIds(IDS)
    assert len(ids) == 5 and list(ids) == IDS and ids == IDS and ids == tuple(IDS)
    assert ids[1] == "é-ü" and ids[-1] == "j5" and ids[np.int64(3)] == "job 4"
    assert ids[1:3] == ["é-ü", ""] and ids[::2] == ["j1", "", "j5"] and ids[4:2] == []
    assert ids.index("job 4") == 3 and "j5" in ids and "j6" not in ids and 5 not in ids
    assert ids.take([4, 0]) == ["j5", "j1"] and ids.to_list() == IDS
    with pytest.raises(ValueError):
        ids.index("nope")
    with pytest.raises(IndexError):
        ids[5]
    assert ids != ["j1"] and JobIds(IDS) == ids and JobIds([]) == []


def test_a_trace_given_a_list_holds_job_ids():
    trace = Trace(
        job_id=["a", "b"], submit_time=np.zeros(2), share=np.zeros(2, np.int32), share_names=["s"],
        priority=np.zeros(2, np.int32), instance_type=np.full(2, -1, np.int32), type_names=[],
        instance_count=np.ones(2, np.int32), duration=np.ones(2), checkpoint_interval=np.full(2, np.nan),
        preemption_retries=np.zeros(2, np.int32),
    )  # fmt: skip
    assert isinstance(trace.job_id, JobIds) and trace.job_id == ["a", "b"]
    stored = io.BytesIO()
    trace.save(stored)
    loaded = Trace.load(stored.getvalue())
    assert isinstance(loaded.job_id, JobIds) and loaded.job_id == ["a", "b"]


@pytest.mark.parametrize("layout", [pa.string(), pa.large_string()])
def test_storage_round_trips_also_from_a_slice(layout):
    whole = pa.array(["zero", "one", "twö", "", "four"], type=layout)
    part = JobIds(whole.slice(1, 3))  # an offset into shared buffers
    data, offsets = part.to_arrays()
    assert offsets.tolist() == [0, 3, 7, 7] and bytes(data) == "onetwö".encode()
    assert JobIds.from_arrays(data, offsets) == ["one", "twö", ""]


def test_bytes_that_are_not_utf8_are_refused_on_load():
    with pytest.raises(pa.ArrowInvalid):
        JobIds.from_arrays(np.frombuffer(b"\xff\xfe", dtype=np.uint8), np.array([0, 2]))


def test_a_file_written_with_fixed_width_ids_still_loads():
    # earlier files held the ids as one numpy bytes array under "job_id"
    stored = io.BytesIO()
    np.savez_compressed(
        stored, job_id=np.array([b"a", "bé".encode()], dtype=np.bytes_), submit_time=np.zeros(2),
        share=np.zeros(2, np.int32), share_names=np.array([b"s"]), priority=np.zeros(2, np.int32),
        instance_type=np.full(2, -1, np.int32), type_names=np.zeros(0, "S1"),
        instance_count=np.ones(2, np.int32),
        duration=np.ones(2), checkpoint_interval=np.full(2, np.nan), preemption_retries=np.zeros(2, np.int32),
        update_time=np.zeros(0), update_job_id=np.zeros(0, "S1"), update_priority=np.zeros(0, np.int32),
        meta=np.frombuffer(b'{"epoch_times": false}', dtype=np.uint8),
    )  # fmt: skip
    assert Trace.load(stored.getvalue()).job_id == ["a", "bé"]


def test_the_first_repeat_is_the_earliest_position_that_repeats():
    assert JobIds(["a", "b", "c"]).first_repeat() is None
    assert JobIds([]).first_repeat() is None and JobIds(["a"]).first_repeat() is None
    # b repeats at 3, a at 4: the first repeat is position 3, of position 1
    assert JobIds(["a", "b", "c", "b", "a"]).first_repeat() == (3, 1)
    assert JobIds(["", "x", ""]).first_repeat() == (2, 0)


def test_ids_that_differ_only_deep_inside_are_told_apart():
    # the same first and last 16 bytes: only the words in the middle differ
    middle = [f"{'p' * 16}{k:04d}{'s' * 16}" for k in range(300)]
    assert JobIds(middle).first_repeat() is None
    assert JobIds([*middle, middle[42]]).first_repeat() == (300, 42)


def test_a_short_id_is_read_alone_not_with_its_neighbours():
    # "ab" follows different ids: its words must not take in their bytes
    assert JobIds(["xxxxxxxxxxxxxxxxxxxx", "ab", "yyyyyyyyyyyyyyyyyyyy", "ab"]).first_repeat() == (3, 1)


def test_a_run_of_equal_ids_reports_its_first_member():
    assert JobIds(["c", "x", "b", "x", "x", "b"]).first_repeat() == (3, 1)
    assert JobIds(["z", "b", "a", "a", "b"]).first_repeat() == (3, 2)


def test_ids_longer_than_the_words_go_to_arrows_sort():
    long = [f"{'q' * 70}{k:03d}" for k in (5, 1, 3)]
    assert list(JobIds(long).order()) == [1, 2, 0]
    assert JobIds([*long, long[1]]).first_repeat() == (3, 1)


def test_the_order_is_by_code_point_shorter_first_and_stable():
    ids = ["b", "a\x00", "a", "ab", "", "\u00e9", "z" * 9, "z" * 8, "a", "\U0001f600", "\uffff"]
    assert list(JobIds(ids).order()) == sorted(range(len(ids)), key=lambda i: (ids[i], i))


def test_a_repeat_far_into_a_large_column_is_found():
    ids = [f"job-{k:07d}" for k in range(200_000)]
    assert JobIds(ids).first_repeat() is None
    ids[150_000] = ids[70_000]
    assert JobIds(ids).first_repeat() == (150_000, 70_000)


def naive_first_repeat(ids: list[str]) -> tuple[int, int] | None:
    first: dict[str, int] = {}
    for position, job in enumerate(ids):
        if job in first:
            return position, first[job]
        first[job] = position
    return None


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.text(alphabet="ab\u00e9 -", max_size=40), max_size=60))
def test_the_first_repeat_agrees_with_a_plain_set(ids):
    assert JobIds(ids).first_repeat() == naive_first_repeat(ids)


@settings(max_examples=300, derandomize=True, deadline=None)
@given(st.lists(st.text(alphabet="ab\x00\u00e9\U0001f600", max_size=20), max_size=60))
def test_the_order_agrees_with_sorting_the_strings(ids):
    assert list(JobIds(ids).order()) == sorted(range(len(ids)), key=lambda i: (ids[i], i))
