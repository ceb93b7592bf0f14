"""Routes of the accounts API."""

from django.urls import path

from planner.accounts.api import views

urlpatterns = [
    path("me/", views.MeView.as_view(), name="api-me"),
    path("tokens/", views.TokenView.as_view(), name="api-tokens"),
]
