"""``{% calibrations_of trace as items %}``: the calibrations of a trace, for the trace page's link;
``wait`` and ``ratio`` filters for the calibration pages."""

from __future__ import annotations

from django import template

from planner.calibration.models import Calibration
from scheduling.calibration import ratio_text, wait_text

register = template.Library()


@register.simple_tag
def calibrations_of(trace) -> list[Calibration]:
    return list(
        Calibration.objects.filter(trace=trace).defer("metrics", "policy_snapshot").order_by("-id")[:10]
    )


@register.filter
def wait(seconds) -> str:
    """A wait with a readable unit (``45 s``, ``4.1 min``, ``3.2 h``); an em dash for None."""
    return "—" if seconds is None or seconds == "" else wait_text(float(seconds))


@register.filter
def ratio(value) -> str:
    """A simulated / recorded ratio (``0.4x``); an em dash for None (recorded 0)."""
    return "—" if value is None or value == "" else ratio_text(float(value))
