"""The API's search filter: DRF's, with a bad ``?search=`` (a null character) reported under its
parameter's name, as every other 400 names its field."""

from __future__ import annotations

from rest_framework import filters, serializers


class SearchFilter(filters.SearchFilter):
    def get_search_terms(self, request):
        try:
            return super().get_search_terms(request)
        except serializers.ValidationError as error:
            # DRF raises the bare field's list (["Null characters are not allowed."]): the API's
            # 400s are objects that name what was wrong.
            raise serializers.ValidationError({self.search_param: error.detail}) from error
