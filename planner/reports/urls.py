"""Routes of the study comparison and the finance report (namespace ``reports``), included
at the site root by planner/urls.py."""

from django.urls import path

from planner.reports import jobs, views, why

app_name = "reports"

urlpatterns = [
    path("studies/<int:pk>/", views.study_detail, name="study"),
    path("studies/<int:pk>/charts/<slug:section>.json", views.study_charts, name="study-charts"),
    path("studies/<int:pk>/progress.json", views.study_progress, name="study-progress"),
    path("studies/<int:pk>/why/", why.job_wait, name="study-why"),
    path("studies/<int:pk>/jobs/", jobs.job_finder_page, name="study-jobs"),
    path("studies/<int:pk>/<slug:table>.csv", views.study_csv, name="study-csv"),
    path("finance/", views.finance, name="finance"),
    path("finance/<slug:table>.csv", views.finance_csv, name="finance-csv"),
]
