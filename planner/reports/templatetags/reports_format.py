"""Number filters of the report pages: thousands separators, units, signed differences.

{% load reports_format %}
{{ value|gpu_hours }}  -> "1,234"      {{ value|usd }}  -> "$1,234"
{{ delta|signed_hours }} -> "+12.50"   {{ delta|signed_usd }} -> "−$31"
"""

from __future__ import annotations

from django import template

register = template.Library()


def _number(value: float) -> str:
    """Whole numbers from 100 up, two decimals below; nothing at all reads "0", not "0.00"."""
    if abs(value) < 0.005:
        return "0"
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.2f}"


@register.filter
def gpu_hours(value) -> str:
    if value is None or value == "":
        return "–"
    return _number(float(value))


@register.filter
def usd(value) -> str:
    if value is None or value == "":
        return "–"
    value = float(value)
    return ("−" if value < 0 else "") + "$" + _number(abs(value))


def _sign(value: float) -> str:
    return "+" if value > 1e-9 else ("−" if value < -1e-9 else "±")


@register.filter
def signed_hours(value) -> str:
    value = float(value or 0.0)
    return _sign(value) + _number(abs(value))


@register.filter
def signed_usd(value) -> str:
    value = float(value or 0.0)
    return _sign(value) + "$" + _number(abs(value))


@register.filter
def percent(value) -> str:
    """A fraction in [0, 1] as a whole percentage: 0.425 -> "43%"."""
    return f"{100 * float(value or 0.0):.0f}%"
