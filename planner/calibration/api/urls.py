"""Routes of the calibration API: /api/calibrations/ and /api/quota-tables/."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from planner.calibration.api import views

router = SimpleRouter()
router.register("calibrations", views.CalibrationViewSet)
urlpatterns = [
    *router.urls,
    path("quota-tables/", views.QuotaTableView.as_view(), name="quota-tables"),
]
