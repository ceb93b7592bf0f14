"""``{% curves_overview %}``: the overview's block on capacity curves and worth searches (the latest
answers in a sentence each, $ only for finance and admin), so the overview view needs no change."""

from __future__ import annotations

from django import template

from planner.accounts.permissions import can_read_finance
from planner.curves.figures import search_view
from planner.curves.models import CapacityCurve, WorthSearch

register = template.Library()
LATEST = 3


@register.inclusion_tag("curves/overview_block.html", takes_context=True)
def curves_overview(context: template.Context) -> dict:
    user = context.get("user")
    money = can_read_finance(user)
    searches = list(WorthSearch.objects.defer("policy_a_snapshot", "policy_b_snapshot")[:LATEST])
    answers = [(search, search_view(search, money=money).sentence) for search in searches]
    curves = list(CapacityCurve.objects.select_related("trace").defer("trace__summary")[:LATEST])
    return {"answers": answers, "curves": curves, "user": user}
