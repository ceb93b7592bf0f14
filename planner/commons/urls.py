"""Routes of the commons app (planner/urls.py includes this module at the root): the page at
/commons/ (namespace ``commons``) and its API at /api/traces/<id>/commons/."""

from django.urls import include, path

from planner.commons import views
from planner.commons.api.urls import urlpatterns as api_urls

pages = [path("", views.commons_page, name="report")]

urlpatterns = [
    path("api/", include(api_urls)),
    path("commons/", include((pages, "commons"))),
]
