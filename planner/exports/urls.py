"""Routes of the exports app, all under /api/ (planner/urls.py includes this module at the root):
/api/policies/<id>/export/aws-batch/, /api/policies/<id>/export/kueue/ and /api/policy-imports/."""

from django.urls import include, path

from planner.exports.api.urls import urlpatterns as api_urls

urlpatterns = [path("api/", include(api_urls))]
