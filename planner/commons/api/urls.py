"""Routes of the commons API: /api/traces/<id>/commons/."""

from django.urls import path

from planner.commons.api import views

urlpatterns = [
    path("traces/<int:pk>/commons/", views.CommonsReportView.as_view(), name="trace-commons"),
]
