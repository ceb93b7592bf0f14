"""The API fuzzed against its own OpenAPI schema with schemathesis, through the WSGI app, signed in
as an admin (token): no 5xx, and every response matches the schema (status codes documented or
among the auth/not-found answers, content types, bodies). Path ids are drawn from the objects that
exist, so detail responses are checked too. SCHEMA_EXAMPLES sets the examples per operation."""

from __future__ import annotations

import os

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from drf_spectacular.generators import SchemaGenerator
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)

EXAMPLES = int(os.environ.get("SCHEMA_EXAMPLES", "8"))
RESOURCES = {
    "/api/instance-types/": "instance_type",
    "/api/pools/": "pool",
    "/api/policies/": "policy",
    "/api/shares/": "share",
    "/api/traces/": "trace",
    "/api/studies/": "study",
    "/api/runs/": "run",
    "/api/calibrations/": "calibration",
}


@pytest.fixture
def api_schema(world, settings):
    """The schema as served, with each ``{id}`` limited to the pk of the object of that resource
    (and one that does not exist), bound to the WSGI app."""
    settings.ALLOWED_HOSTS = ["*"]
    raw = SchemaGenerator().get_schema(request=None, public=True)
    pks = {
        "instance_type": world.instance_type.pk,
        "pool": world.pool.pk,
        "policy": world.policy.pk,
        "share": world.policy.shares.order_by("id").first().pk,
        "trace": world.trace.pk,
        "study": world.study.pk,
        "run": world.study.runs.get().pk,
        "calibration": world.calibration.pk,
    }
    for path, operations in raw["paths"].items():
        resource = next((name for prefix, name in RESOURCES.items() if path.startswith(prefix)), None)
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                if parameter["in"] == "path" and parameter["name"] == "id" and resource:
                    parameter["schema"] = {"type": "integer", "enum": [pks[resource], 999_999]}
    loaded = schemathesis.openapi.from_dict(raw)
    loaded.app = get_wsgi_application()
    # Like Django's test client: the test's connection (and its transaction) stays open across calls.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield loaded
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


def operations() -> list[tuple[str, str]]:
    raw = SchemaGenerator().get_schema(request=None, public=True)
    return sorted((path, method.upper()) for path, ops in raw["paths"].items() for method in ops)


FUZZ = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
)


@pytest.mark.django_db
@pytest.mark.parametrize("path, method", operations())
def test_the_api_conforms_to_its_schema(api_schema, world, path, method):
    operation = api_schema[path][method]
    headers = {"Authorization": f"Token {world.tokens['admin']}"}
    checks = [not_a_server_error, status_code_conformance, content_type_conformance]
    raw = operation.definition.raw
    media = {kind for code, answer in raw["responses"].items() if code.startswith("2")
             for kind in answer.get("content", {})}  # fmt: skip
    if media <= {"application/json"}:
        checks.append(response_schema_conformance)  # bodies of other types (YAML files) are not parsed

    @FUZZ
    @given(case=operation.as_strategy())
    def call(case):
        case.call_and_validate(headers=headers, checks=checks)

    call()
