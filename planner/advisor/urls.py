"""Routes of the advisor: its API under /api/ (sweeps) and its pages under /advisor/ (namespace
``advisor``). planner/urls.py includes this module at the root."""

from django.urls import include, path

from planner.advisor import views
from planner.advisor.api.urls import urlpatterns as api_urls

pages = [
    path("", views.sweep_list, name="list"),
    path("<int:pk>/", views.sweep_detail, name="detail"),
    path("<int:pk>/variants/<int:number>/keep/", views.keep, name="keep"),
    path("<int:pk>/delete/", views.delete, name="delete"),
]

urlpatterns = [
    path("api/", include(api_urls)),
    path("advisor/", include((pages, "advisor"))),
]
