"""The API's search and ordering filters: DRF's, with a bad ``?search=`` (a null character)
reported under its parameter's name, as every other 400 names its field, and no ordering by a $
field for a role that may not read $ figures."""

from __future__ import annotations

from rest_framework import filters, serializers

from planner.accounts.money import is_money_key, shows_money


class SearchFilter(filters.SearchFilter):
    def get_search_terms(self, request):
        try:
            return super().get_search_terms(request)
        except serializers.ValidationError as error:
            # DRF raises the bare field's list (["Null characters are not allowed."]): the API's
            # 400s are objects that name what was wrong.
            raise serializers.ValidationError({self.search_param: error.detail}) from error


class OrderingFilter(filters.OrderingFilter):
    """DRF's ``?ordering=``, without the $ fields for a role that may not read them: ranking
    instance types by ``hourly_price`` would tell a viewer the prices the responses hide. Such an
    ordering is ignored, as any field not offered is (the list keeps its default order)."""

    def get_valid_fields(self, queryset, view, context=None):
        fields = super().get_valid_fields(queryset, view, context or {})
        request = (context or {}).get("request") or getattr(view, "request", None)
        user = getattr(request, "user", None)
        if user is not None and shows_money(user):
            return fields
        return [(name, label) for name, label in fields if not is_money_key(name.split("__")[-1])]
