"""Routes of the trace pages. Their names live in the site's ``web`` namespace (``web:traces``,
``web:trace``, ``web:trace-upload``), so planner/web/urls.py includes this module without a
namespace of its own; the traces API is under /api/ through planner/api/urls.py."""

from django.urls import path

from planner.traces import views

urlpatterns = [
    path("traces/", views.trace_list, name="traces"),
    path("traces/upload/", views.trace_upload, name="trace-upload"),
    path("traces/<int:pk>/", views.trace_detail, name="trace"),
]
