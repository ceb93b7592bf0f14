"""OpenAPI postprocessing: every operation documents the errors it can answer with.

400 (bad input: DRF's field errors or ``{"error": {"row", "field", "message"}}``), 401 (no or a bad
token), 403 (the role does not allow it), 404 (no such object), 409 (still in use, on delete), 429
(the user's heavy tasks are at their limit, on creating one: planner/studies/limits.py).
"""

from __future__ import annotations

from typing import Any

ERROR_SCHEMA = {
    "type": "object",
    "description": 'DRF\'s {"detail": "..."} or {"<field>": ["..."]}, '
    'or {"error": {"row", "field", "message"}}',
    "additionalProperties": True,
}
ERRORS = {
    "400": "The input is not valid: each field's problem, or the row and field of a bad trace file.",
    "401": "No token or session, or the token was revoked.",
    "403": "Your role does not allow this.",
    "404": "No such object, or the object has no such part yet.",
    "409": "The object is still in use (e.g. a trace by a study): delete or change those first.",
    "429": "You have PLANNER_MAX_HEAVY_TASKS_PER_USER studies, curves, searches or calibrations queued "
    'or running: {"detail", "limit", "setting"}. Wait for one to finish, or delete one.',
}
# The operations that start a heavy task (planner/studies/limits.py), refused with 429 at the limit.
HEAVY_TASKS = {"/api/studies/", "/api/curves/", "/api/worth-searches/", "/api/sweeps/", "/api/calibrations/"}


def document_errors(result: dict[str, Any], generator, request, public) -> dict[str, Any]:
    """drf-spectacular POSTPROCESSING_HOOKS entry: add the error responses each operation can give."""
    for path, operations in result.get("paths", {}).items():
        for method, operation in operations.items():
            codes = ["400", "401", "403"]
            if "{" in path:
                codes.append("404")
            if method == "delete":
                codes.append("409")
            if method == "post" and path in HEAVY_TASKS:
                codes.append("429")
            responses = operation.setdefault("responses", {})
            # Errors come in JSON, or in the operation's own type when it renders another (YAML).
            media = {"application/json"} | {
                kind
                for code, answer in responses.items()
                if code.startswith("2")
                for kind in answer.get("content", {})
            }
            content = {kind: {"schema": ERROR_SCHEMA} for kind in sorted(media)}
            for code in codes:
                responses.setdefault(code, {"description": ERRORS[code], "content": content})
    return result
