"""Routes of the curves app: its API under /api/ (curves, worth-searches) and its pages under
/curves/ (namespace ``curves``). planner/urls.py includes this module at the root."""

from django.urls import include, path

from planner.curves import views
from planner.curves.api.urls import urlpatterns as api_urls

pages = [
    path("", views.curve_list, name="list"),
    path("<int:pk>/", views.curve_detail, name="curve"),
    path("<int:pk>/points.csv", views.curve_csv, name="curve-csv"),
    path("<int:pk>/delete/", views.curve_delete, name="curve-delete"),
    path("<int:pk>/plans/<int:number>/policy/", views.plan_policy, name="plan-policy"),
    path("worth/<int:pk>/", views.search_detail, name="search"),
    path("worth/<int:pk>/tries.csv", views.search_csv, name="search-csv"),
    path("worth/<int:pk>/delete/", views.search_delete, name="search-delete"),
]

urlpatterns = [
    path("api/", include(api_urls)),
    path("curves/", include((pages, "curves"))),
]
