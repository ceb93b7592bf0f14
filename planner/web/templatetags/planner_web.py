"""Template tags of the pages: ``{% chart figure %}`` draws a Plotly figure dict, ``role_of`` and
``can_edit`` / ``can_read_finance`` answer what the signed-in user may do.

Usage::

    {% load planner_web %}
    {% chart usage_figure %}                       {# id made up, empty-state text default #}
    {% chart wait_figure id="wait-cdf" empty="No job waited." %}
"""

from __future__ import annotations

from typing import Any

from django import template

from planner.accounts import permissions
from planner.web import charts
from planner.web.charts import is_empty

register = template.Library()


@register.inclusion_tag("web/chart.html", takes_context=True)
def chart(context: template.Context, figure: dict[str, Any], id: str = "", empty: str = "") -> dict[str, Any]:
    """A ``<figure>`` holding the figure's JSON (``json_script``) and the element planner.js draws.

    ``empty`` is shown instead of the chart when the figure has nothing to draw."""
    counter = context.render_context.get("planner_chart_count", 0) + 1
    context.render_context["planner_chart_count"] = counter
    chart_id = id or f"chart-{counter}"
    title = figure.get("layout", {}).get("title", {})
    return {
        "figure": figure,
        "chart_id": chart_id,
        "data_id": f"{chart_id}-data",
        "title": title.get("text", "") if isinstance(title, dict) else str(title),
        "empty": empty or "Nothing to draw yet.",
        "is_empty": is_empty(figure),
    }


@register.simple_tag
def role_of(user) -> str:
    return permissions.role_of(user)


@register.filter
def can_edit(user) -> bool:
    return permissions.can_edit(user)


@register.filter
def can_read_finance(user) -> bool:
    return permissions.can_read_finance(user)


@register.filter
def number(value, decimals: int = 0) -> str:
    """``1234567.8|number:1`` -> ``1,234,567.8``; empty for None."""
    if value is None or value == "":
        return ""
    try:
        return f"{float(value):,.{int(decimals)}f}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def percent(value, decimals: int = 1) -> str:
    """A fraction as a percentage: ``0.734`` -> ``73.4 %``; an em dash for None."""
    if value is None or value == "":
        return "—"
    return f"{float(value) * 100:,.{int(decimals)}f} %"


@register.filter
def hours(seconds, decimals: int = 1) -> str:
    """Seconds as hours with the unit: ``5400`` -> ``1.5 h``; an em dash for None."""
    if seconds is None or seconds == "":
        return "—"
    return f"{float(seconds) / 3600:,.{int(decimals)}f} h"


@register.filter
def duration(seconds) -> str:
    """Seconds in the unit that reads best: ``42`` -> ``42 s``, ``5400`` -> ``1.5 h``,
    ``2_664_000`` -> ``30.8 days``; an em dash for None."""
    if seconds is None or seconds == "":
        return "—"
    value = float(seconds)
    if abs(value) < 120:
        return f"{value:,.0f} s"
    if abs(value) < 7200:
        return f"{value / 60:,.0f} min"
    if abs(value) < 3 * 86400:
        return f"{value / 3600:,.1f} h"
    return f"{value / 86400:,.1f} days"


@register.filter
def humanize_key(key: str) -> str:
    """An importer's count key in words: ``pending_at_export`` -> ``pending at export``."""
    return str(key).replace("_", " ")


@register.filter
def share_color(name: str) -> str:
    """The share's colour (the site's palette, as on every chart), for a swatch beside its name."""
    return charts.share_color(str(name))


@register.filter
def cell(value) -> str:
    """A previewed value as a person reads it: a float to at most 3 decimals with thousands
    separators (``397.7819998264313`` -> ``397.782``, ``3600.0`` -> ``3,600``); an em dash for
    None; anything else (ids, names, whole numbers) as it is."""
    if value is None:
        return "—"
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return str(value)
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    return str(value)


@register.filter
def dollars(value) -> str:
    """An amount in $ as a person reads it: whole dollars from $100 up (``12,345``), cents below
    (``8.62``), so a small pool's idle cost is not rounded away; empty for None."""
    if value is None or value == "":
        return ""
    amount = float(value)
    return f"{amount:,.0f}" if abs(amount) >= 100 else f"{amount:,.2f}"


@register.filter
def columns(headings: str) -> list[dict[str, Any]]:
    """A data table's column headings from one string (``web/data_table.html``), separated by
    ``|``; a heading starting with ``#`` is a number column (right-aligned, ``class="num"``):
    ``"Trace|Format|#Jobs"`` -> Trace, Format, Jobs (numbers). The labels are plain text, escaped
    when rendered."""
    made = []
    for heading in str(headings).split("|"):
        number = heading.startswith("#")
        made.append({"label": heading[1:] if number else heading, "num": number})
    return made
