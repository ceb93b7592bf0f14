"""Routes of the calibration app: its API under /api/ (calibrations, quota-tables) and its pages
under /calibration/ (namespace ``calibration``). planner/urls.py includes this module at the root."""

from django.urls import include, path

from planner.calibration import views
from planner.calibration.api.urls import urlpatterns as api_urls

pages = [
    path("", views.calibration_list, name="list"),
    path("<int:pk>/", views.calibration_detail, name="detail"),
]

urlpatterns = [
    path("api/", include(api_urls)),
    path("calibration/", include((pages, "calibration"))),
]
