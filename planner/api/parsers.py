"""The API's JSON parser: DRF's, after checking how deep the body nests (``scheduling.nesting``), so
that a small body nested thousands deep is a 400 instead of a RecursionError in ``json.loads``."""

from __future__ import annotations

from rest_framework.exceptions import ParseError
from rest_framework.parsers import JSONParser

from scheduling.errors import InputError
from scheduling.nesting import check_json_nesting


class BoundedJSONParser(JSONParser):
    def parse(self, stream, media_type=None, parser_context=None):
        body = stream.read() if stream is not None else b""
        try:
            check_json_nesting(body)
        except InputError as error:
            raise ParseError(f"JSON parse error - {error.reason}") from None
        return super().parse(_Replay(body), media_type, parser_context)


class _Replay:
    """The body already read, given back to DRF's parser as a stream."""

    def __init__(self, body: bytes):
        self.body = body

    def read(self, *args) -> bytes:
        body, self.body = self.body, b""
        return body
