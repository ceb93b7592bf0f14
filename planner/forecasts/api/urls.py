"""Routes of the forecasts API: /api/forecasts/ and /api/forecasts/<id>/jobs/."""

from django.urls import path
from rest_framework.routers import SimpleRouter

from planner.forecasts.api import views

router = SimpleRouter()
router.register("forecasts", views.ForecastViewSet)
urlpatterns = [
    *router.urls,
    path("forecasts/<int:pk>/jobs/", views.ForecastJobList.as_view(), name="forecast-jobs"),
]
