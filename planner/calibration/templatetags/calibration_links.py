"""``{% calibrations_of trace as items %}``: the calibrations of a trace, for the trace page's link."""

from __future__ import annotations

from django import template

from planner.calibration.models import Calibration

register = template.Library()


@register.simple_tag
def calibrations_of(trace) -> list[Calibration]:
    return list(
        Calibration.objects.filter(trace=trace).defer("metrics", "policy_snapshot").order_by("-id")[:10]
    )
