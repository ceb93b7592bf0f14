"""Routes of the forecasts API: /api/forecasts/ and /api/forecasts/<id>/jobs/."""

from django.urls import re_path
from rest_framework.routers import SimpleRouter

from planner.forecasts.api import views

router = SimpleRouter()
router.register("forecasts", views.ForecastViewSet)
urlpatterns = [
    *router.urls,
    # The router's pattern for ids (any segment): a bad id is the API's JSON 404, not a page's.
    re_path(r"^forecasts/(?P<pk>[^/.]+)/jobs/$", views.ForecastJobList.as_view(), name="forecast-jobs"),
]
