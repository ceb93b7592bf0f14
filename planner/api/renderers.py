"""The API's JSON renderer: first the $ figures the caller's role may not read are removed
(``planner.accounts.money``), so every API response, lists, details and exports alike, holds only
what the role may see; then the body is encoded by orjson (a run's metrics are hundreds of KB:
several times faster than the json module). What orjson does not encode itself (dates, decimals,
lazy strings) goes through DRF's encoder, so every body reads as before; indented output (a client
asking for it) stays with DRF's renderer."""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

from planner.accounts.money import for_user

_FALLBACK = JSONEncoder()
# datetimes and dataclasses as DRF writes them (or refuses them); numpy numbers as numbers
OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_SERIALIZE_NUMPY


class FastJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        request = (renderer_context or {}).get("request")
        if request is not None:
            data = for_user(request.user, data)
        if self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            return orjson.dumps(data, default=_FALLBACK.default, option=OPTIONS)
        except (TypeError, orjson.JSONEncodeError):  # e.g. an integer past 64 bits: as DRF did
            return super().render(data, accepted_media_type, renderer_context)


# The name the $ filter was introduced under (exports' renderer_classes).
RoleJSONRenderer = FastJSONRenderer
