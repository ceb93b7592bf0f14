"""Every app's API under /api/, the OpenAPI 3 schema (/api/schema/) and Swagger UI (/api/docs/)."""

from django.urls import include, path
from drf_spectacular.utils import extend_schema
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.decorators import api_view
from rest_framework.response import Response
from rest_framework.reverse import reverse

from planner.accounts.api.urls import urlpatterns as account_urls
from planner.capacity.api.urls import urlpatterns as capacity_urls
from planner.studies.api.urls import urlpatterns as study_urls
from planner.traces.api.urls import urlpatterns as trace_urls

# Resource name -> route name of its list.
RESOURCES = {
    "instance-types": "instancetype-list",
    "pools": "pool-list",
    "policies": "policy-list",
    "shares": "share-list",
    "traces": "trace-list",
    "studies": "study-list",
    "runs": "run-list",
    "calibrations": "calibration-list",
    "quota-tables": "quota-tables",
    "policy-imports": "policy-imports",
    "sweeps": "sweep-list",
    "forecasts": "forecast-list",
    "me": "api-me",
    "tokens": "api-tokens",
    "schema": "api-schema",
    "docs": "api-docs",
}


@extend_schema(exclude=True)
@api_view(["GET"])
def api_root(request, format=None):
    """The API's resources; the schema is at /api/schema/ and Swagger UI at /api/docs/."""
    return Response({name: reverse(route, request=request) for name, route in RESOURCES.items()})


urlpatterns = [
    path("", api_root, name="api-root"),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("", include(capacity_urls)),
    path("", include(trace_urls)),
    path("", include(study_urls)),
    path("", include(account_urls)),
]
