"""Routes of the commons app (planner/urls.py includes this module at the root): the page at
/commons/ (namespace ``commons``) and its API at /api/traces/<id>/commons/."""

from django.urls import include, path

from planner.commons import api, views

pages = [path("", views.commons_page, name="report")]

urlpatterns = [
    path("api/traces/<int:pk>/commons/", api.CommonsReportView.as_view(), name="trace-commons"),
    path("commons/", include((pages, "commons"))),
]
