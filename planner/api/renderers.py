"""The API's JSON, encoded by orjson (a run's metrics are hundreds of KB: several times faster
than the json module). What orjson does not encode itself (dates, decimals, lazy strings) goes
through DRF's encoder, so every body reads as before; indented output (a client asking for it)
stays with DRF's renderer."""

from __future__ import annotations

import orjson
from rest_framework.renderers import JSONRenderer
from rest_framework.utils.encoders import JSONEncoder

_FALLBACK = JSONEncoder()
# datetimes and dataclasses as DRF writes them (or refuses them); numpy numbers as numbers
OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_SERIALIZE_NUMPY


class FastJSONRenderer(JSONRenderer):
    def render(self, data, accepted_media_type=None, renderer_context=None) -> bytes:
        if data is None:
            return b""
        if self.get_indent(accepted_media_type, renderer_context or {}):
            return super().render(data, accepted_media_type, renderer_context)
        try:
            return orjson.dumps(data, default=_FALLBACK.default, option=OPTIONS)
        except (TypeError, orjson.JSONEncodeError):  # e.g. an integer past 64 bits: as DRF did
            return super().render(data, accepted_media_type, renderer_context)
