"""Routes of the study list, the study form and "Find a job". Their names live in the site's ``web``
namespace (``web:studies``, ``web:study-new``, ``web:find-job``), so planner/web/urls.py includes
this module without a namespace of its own; the studies API is under /api/ through
planner/api/urls.py, and a study's own page is ``planner.reports`` (/studies/<id>/)."""

from django.urls import path

from planner.studies import views

urlpatterns = [
    path("studies/", views.study_list, name="studies"),
    path("studies/new/", views.study_new, name="study-new"),
    path("jobs/", views.find_job, name="find-job"),
]
