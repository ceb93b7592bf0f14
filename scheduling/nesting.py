"""How deep a JSON or YAML document nests, found without building it: the parsers build nested
documents recursively, so a small file nested thousands deep would exhaust Python's stack. Documents
the planner reads (policies, AWS Batch bundles, Kueue objects) nest about ten levels."""

from __future__ import annotations

import re

import yaml

from scheduling.errors import InputError

MAX_NESTING = 64
_JSON_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(rb"[\[\]{}]")


def check_json_nesting(text: str | bytes, limit: int = MAX_NESTING, field: str | None = None) -> None:
    """Raise InputError when arrays and objects nest deeper than ``limit`` (strings are skipped;
    malformed JSON is left for the parser to report)."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    depth = 0
    for match in _JSON_BRACKET.finditer(_JSON_STRING.sub(b'""', data)):
        depth += 1 if match.group() in (b"[", b"{") else -1
        if depth > limit:
            raise InputError(f"JSON nested deeper than {limit} levels: not a planner document", field=field)


def check_yaml_nesting(text: str | bytes, limit: int = MAX_NESTING, field: str | None = None) -> None:
    """Raise InputError when collections nest deeper than ``limit``. Reads the YAML parser's events,
    which it makes without recursion; a YAML error is left for the loader to report."""
    depth = 0
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > limit:
                    raise InputError(
                        f"YAML nested deeper than {limit} levels: not a planner document", field=field
                    )
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return
