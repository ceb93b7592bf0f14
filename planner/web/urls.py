"""Routes of the browser pages (namespace ``web``). The study comparison page and the finance
report live in ``planner.reports`` (namespace ``reports``), which planner/urls.py includes at
the same root (an include here would nest it as ``web:reports``)."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from planner.accounts.forms import ThrottledAuthenticationForm
from planner.web import views

app_name = "web"

urlpatterns = [
    path("", views.overview, name="overview"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            redirect_authenticated_user=True, authentication_form=ThrottledAuthenticationForm
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("policies/", include("planner.capacity.urls")),  # the policy pages, in their app
    path("byos/", views.byos, name="byos"),
    path("traces/", views.trace_list, name="traces"),
    path("traces/upload/", views.trace_upload, name="trace-upload"),
    path("traces/<int:pk>/", views.trace_detail, name="trace"),
    path("studies/", views.study_list, name="studies"),
    path("studies/new/", views.study_new, name="study-new"),
    path("jobs/", views.find_job, name="find-job"),
    path("docs/semantics/", views.semantics, name="semantics"),
]
