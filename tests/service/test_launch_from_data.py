"""``Launch.from_data``: a form's or serializer's data becomes a launch's argument object."""

from __future__ import annotations

from dataclasses import FrozenInstanceError, dataclass

import pytest

from planner.launches import Launch
from planner.studies.launch import StudyLaunch


@dataclass(frozen=True, kw_only=True)
class Sample(Launch):
    name: str
    size: int = 50
    note: str = ""


def test_fields_come_from_the_data_and_a_missing_or_empty_one_keeps_its_default():
    # "size" left empty (an optional number field not filled in) is the default, not None.
    assert Sample.from_data({"name": "a", "size": None}) == Sample(name="a", size=50)
    assert Sample.from_data({"name": "a", "size": 0, "note": ""}) == Sample(name="a", size=0, note="")


def test_keys_that_are_not_fields_are_left_out_and_given_values_win():
    made = Sample.from_data({"name": "a", "size": 3, "trace_file": "x.csv"}, size=7, note="by hand")
    assert made == Sample(name="a", size=7, note="by hand")


def test_a_required_field_missing_from_the_data_is_an_error_not_a_default():
    with pytest.raises(TypeError, match="name"):
        Sample.from_data({"size": 3})


def test_a_launch_cannot_be_changed_once_made():
    launch = StudyLaunch(name="s", trace=None, policies=())
    with pytest.raises(FrozenInstanceError):
        launch.name = "t"  # type: ignore[misc]
