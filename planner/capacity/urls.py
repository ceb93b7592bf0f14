"""Routes of the policy pages. planner/web/urls.py includes them at /policies/ in its namespace
(``web:policies``, ``web:policy``...), so their names stay those the other pages link to."""

from django.urls import path

from planner.capacity import views

urlpatterns = [
    path("", views.policy_list, name="policies"),
    path("<int:pk>/", views.policy_detail, name="policy"),
    path("<int:pk>/duplicate/", views.policy_duplicate, name="policy-duplicate"),
    path("<int:pk>/preset/", views.policy_preset, name="policy-preset"),
]
