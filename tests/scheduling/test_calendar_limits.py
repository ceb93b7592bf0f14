"""A policy's calendar: its step lines (one sweep, the same steps as asking every instant), the
bound on its length, and one value per target, type and instant."""

from __future__ import annotations

import pytest

from scheduling.capacity_plans import capacity_steps, changes_in_words
from scheduling.errors import InputError
from scheduling.export.kueue import kueue_notes
from scheduling.model import MAX_CHANGES, parse_policy


def policy(changes: list[dict]) -> dict:
    return {
        "name": "calendar",
        "instance_types": {"p": {"gpus": 8}},
        "capacity": {"p": 4},
        "shares": [{"name": "a", "capacity": {"p": 2}}, {"name": "b", "capacity": {"p": 1}}],
        "changes": changes,
    }


CHANGES = [
    {"time": 50, "capacity": {"p": 4}},  # after the window: not a step
    {"time": 10, "capacity": {"p": 6}},
    {"time": 20, "share": "a", "capacity": {"p": 3}},
    {"time": 20, "capacity": {"p": 5}},
]


@pytest.mark.parametrize(
    ("start", "end", "t", "pool", "share_a"),
    [
        # 4 x 8 GPUs until 10, 6 x 8 from 10, 5 x 8 from 20; share a 2 x 8 until 20, then 3 x 8.
        pytest.param(
            0, 40, [0.0, 10.0, 20.0, 40.0], [32.0, 48.0, 40.0, 40.0], [16.0, 16.0, 24.0, 24.0],
            id="the_steps_hold_what_is_in_force_from_each_instant",
        ),
        # a window starting after a change starts with it in force (and the change at 50 is a step)
        pytest.param(
            15, 60, [15.0, 20.0, 50.0, 60.0], [48.0, 40.0, 32.0, 32.0], [16.0, 24.0, 24.0, 24.0],
            id="a_window_starting_after_a_change_starts_with_it_in_force",
        ),
    ],
)  # fmt: skip
def test_capacity_steps_over_a_window(start, end, t, pool, share_a):
    steps = capacity_steps(parse_policy(policy(CHANGES)), start, end)
    assert steps == {"t": t, "pool": pool, "shares": {"a": share_a, "b": [8.0] * 4}}


def test_the_steps_agree_with_the_policy_at_every_instant():
    # Many changes at distinct and shared instants: the sweep says what capacity_at/quota_at say.
    changes = [
        {
            "time": (i * 7) % 50,
            **({"share": "a"} if i % 3 else {}),
            "capacity": {"p": (2 if i % 3 else 8) + i % 3},
        }
        for i in range(40)
    ]
    seen = set()
    unique = []
    for change in changes:
        key = (change["time"], change.get("share"))
        if key not in seen:
            seen.add(key)
            unique.append(change)
    engine = parse_policy({**policy(unique), "capacity": {"p": 8}})
    steps = capacity_steps(engine, 0, 100)
    for i, t in enumerate(steps["t"][:-1]):
        assert steps["pool"][i] == 8 * engine.capacity_at(t)["p"]
        assert steps["shares"]["a"][i] == 8 * engine.quota_at("a", t)["p"]


def test_a_calendar_longer_than_the_limit_is_refused_naming_it():
    changes = [{"time": i, "capacity": {"p": 4}} for i in range(MAX_CHANGES + 1)]
    with pytest.raises(InputError) as caught:
        parse_policy(policy(changes))
    assert caught.value.field == "changes"
    assert caught.value.reason == "10,001 changes: a policy's calendar holds at most 10,000"


def test_a_calendar_at_the_limit_is_accepted():
    changes = [{"time": i, "capacity": {"p": 4 + i % 2}} for i in range(MAX_CHANGES)]
    assert len(parse_policy(policy(changes)).changes) == MAX_CHANGES


def test_two_changes_setting_one_target_and_type_at_one_instant_are_refused():
    changes = [
        {"time": 10, "share": "a", "capacity": {"p": 3}},
        {"time": 20, "capacity": {"p": 5}},
        {"time": 10.0, "share": "a", "capacity": {"p": 1}},
    ]
    with pytest.raises(InputError) as caught:
        parse_policy(policy(changes))
    assert str(caught.value) == (
        "changes[2].capacity.p: changes[0] already sets p of share a at 10 s: "
        "two changes cannot set one target and type at one instant"
    )


def test_the_pool_and_a_share_may_change_at_one_instant():
    both = [{"time": 10, "capacity": {"p": 5}}, {"time": 10, "share": "a", "capacity": {"p": 3}}]
    engine = parse_policy(policy(both))
    assert len(engine.changes) == 2


def test_an_export_note_lists_ten_changes_and_counts_the_rest():
    changes = [{"time": 60 * i, "capacity": {"p": 4 + i % 2}} for i in range(25)]
    engine = parse_policy(policy(changes))
    words = changes_in_words(engine.changes, lambda share: "the pool" if share is None else share)
    assert words.startswith("at 0 s the pool: 4 x p; at 60 s the pool: 5 x p;")
    assert words.endswith("at 540 s the pool: 5 x p; and 15 more")
    note = next(n for n in kueue_notes(engine) if "calendar" in n)
    assert "the calendar's 25 changes" in note and "and 15 more" in note and "at 600 s" not in note
