"""What the apps' forms share: number boxes that take any number, times typed as the trace's, and
``place_errors`` and ``place_launch_error``, which put a model's or a launch's ValidationError (the
engine's validator decides) back next to the field that caused it. Each app's forms are in that
app (``planner.capacity.forms``...)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from django import forms
from django.contrib import messages as user_messages
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect

from scheduling.errors import InputError
from scheduling.traces.fields import parse_time


def whole(value: float | None) -> float | int | None:
    """2.0 -> 2 (the engine decides whether a number of instances is valid, not the form)."""
    if value is None:
        return None
    return int(value) if float(value).is_integer() else value


class NumberInput(forms.NumberInput):
    """A number box that takes any number: the engine's validator says what is wrong with it."""

    def __init__(self, attrs: dict | None = None):
        super().__init__({"step": "any", **(attrs or {})})


def place_errors(form: forms.Form, error: ValidationError, per_type: dict[str, Sequence[str]]) -> None:
    """Attach a model ValidationError to the form's fields.

    ``per_type`` maps a model field holding per-instance-type numbers (``capacity``) to the
    form's fields for each type, in the order of ``form.instance_types``; the message goes to
    the field of the type it names (``gpu: 5 is below...``, ``quotas of gpu add up to...``)."""
    if not hasattr(error, "error_dict"):
        for message in error.messages:
            form.add_error(None, message)
        return
    for key, messages in error.message_dict.items():
        for message in messages:
            if key in per_type:
                names = per_type[key]
                target, text = names[0] if names else None, message
                for type_name, field_name in zip(getattr(form, "instance_types", []), names, strict=True):
                    if message.startswith(f"{type_name}: "):
                        target, text = field_name, message[len(type_name) + 2 :]
                        break
                    if f" {type_name} " in f" {message} ":
                        target = field_name
                form.add_error(target, text)
            elif key in form.fields:
                form.add_error(key, message)
            else:
                form.add_error(None, message)


def place_launch_error(form: forms.Form, error: ValidationError, renames: dict | None = None) -> None:
    """Put a refused launch's ValidationError (a sweep's, a calibration's, a forecast's) next to the
    field it names; ``renames`` maps the launch's name of a field to the form's (None: the whole form)."""
    for field, problems in error.message_dict.items():
        target = (renames or {}).get(field, field)
        form.add_error(target if target in form.fields else None, problems)


def parse_time_field(value: str, label: str) -> float:
    """Seconds or an ISO-8601 timestamp, read as a trace's times are (``traces.fields.parse_time``)."""
    try:
        seconds, _ = parse_time(value, None, label)
    except InputError as error:
        raise ValidationError(error.reason) from None
    return seconds


def time_input_value(seconds: float) -> str:
    """A stored time as it is typed back: ISO-8601 for Unix times (see ``describe_time``)."""
    from datetime import UTC, datetime

    if seconds >= 1e9:
        return datetime.fromtimestamp(seconds, UTC).isoformat().replace("+00:00", "Z")
    return f"{whole(seconds)}"


Started = TypeVar("Started", bound=models.Model)


def start_from_form(
    request: HttpRequest,
    start: Callable[[], Started],
    place: Callable[[ValidationError], None],
    said: Callable[[Started], str],
    page: str,
) -> HttpResponse | None:
    """Launch what a valid list-page form asks for (a sweep, a calibration, a curve, a search, a
    forecast): on success, ``said(row)`` as a message and the redirect to the row's ``page``; a
    refusal (ValidationError) is put on the form by ``place``, and None says to show it again."""
    try:
        row = start()
    except ValidationError as error:
        place(error)
        return None
    user_messages.success(request, said(row))
    return redirect(page, pk=row.pk)
