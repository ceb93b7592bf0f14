"""Top-level routes: the Django admin, the REST API under /api/, and the browser pages
(``planner.web``, included at the site root when that app is present)."""

from importlib.util import find_spec

from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include("planner.api.urls")),
    path("api-auth/", include("rest_framework.urls")),
]
if find_spec("planner.reports") is not None and find_spec("planner.reports.urls") is not None:
    urlpatterns.append(path("", include("planner.reports.urls")))  # /studies/<id>/, /finance/
if find_spec("planner.web") is not None and find_spec("planner.web.urls") is not None:
    urlpatterns.append(path("", include("planner.web.urls")))
urlpatterns.append(path("", include("planner.calibration.urls")))  # /api/calibrations/, /calibration/
urlpatterns.append(path("", include("planner.exports.urls")))  # policies to AWS Batch / Kueue and back
urlpatterns.append(path("", include("planner.commons.urls")))  # /commons/, /api/traces/<id>/commons/
urlpatterns.append(path("", include("planner.advisor.urls")))  # /api/sweeps/, /advisor/
urlpatterns.append(path("", include("planner.curves.urls")))  # /api/curves/, /api/worth-searches/, /curves/
urlpatterns.append(path("", include("planner.forecasts.urls")))  # /api/forecasts/, /forecasts/

handler500 = "planner.web.errors.server_error"  # the site's layout, with the menu when it can
