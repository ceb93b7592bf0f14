"""Routes of the forecasts app: its API under /api/ (forecasts) and its pages under /forecasts/
(namespace ``forecasts``). planner/urls.py includes this module at the root."""

from django.urls import include, path

from planner.forecasts import views
from planner.forecasts.api.urls import urlpatterns as api_urls

pages = [
    path("", views.forecast_list, name="list"),
    path("demo/", views.forecast_demo, name="demo"),
    path("<int:pk>/", views.forecast_detail, name="detail"),
]

urlpatterns = [
    path("api/", include(api_urls)),
    path("forecasts/", include((pages, "forecasts"))),
]
