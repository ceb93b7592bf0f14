"""The OpenAPI schema is valid and Swagger UI is served from local files, not a CDN."""

import pytest
from django.core.management import call_command

pytestmark = pytest.mark.django_db


def test_the_schema_validates_without_warnings(tmp_path):
    target = tmp_path / "schema.yml"
    call_command("spectacular", "--validate", "--fail-on-warn", "--file", str(target))
    text = target.read_text()
    for path in ("/api/policies/{id}/duplicate/", "/api/traces/", "/api/runs/{id}/cdf/", "/api/tokens/",
                 "/api/forecasts/", "/api/forecasts/{id}/jobs/", "/api/forecasts/{id}/result/"):  # fmt: skip
        assert path in text


def test_swagger_ui_loads_its_assets_locally(viewer_api):
    page = viewer_api.get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "swagger-ui" in html
    assert "cdn" not in html.lower() and "unpkg" not in html.lower()
    assert viewer_api.get("/api/schema/").status_code == 200


def test_the_api_root_lists_the_resources(viewer_api):
    body = viewer_api.get("/api/").json()
    expected = {"pools", "policies", "shares", "traces", "studies", "runs", "forecasts", "schema", "docs"}
    assert expected <= set(body)
