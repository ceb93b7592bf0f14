"""The API's JSON renderer: DRF's, after removing the $ figures the caller's role may not read
(``planner.accounts.money``). Every API response goes through it, lists, details and exports alike."""

from __future__ import annotations

from rest_framework.renderers import JSONRenderer

from planner.accounts.money import for_user


class RoleJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None):
        request = (renderer_context or {}).get("request")
        if request is not None:
            data = for_user(request.user, data)
        return super().render(data, accepted_media_type, renderer_context)
