"""Routes of the site shell (namespace ``web``): the overview, sign-in, bring your scheduler and the
docs reader. The policy, trace and study pages are routed by their apps' urls.py and included
here, so their names stay ``web:policy``, ``web:traces``, ``web:studies``, ... The study comparison page
and the finance report live in ``planner.reports`` (namespace ``reports``), which planner/urls.py
includes at the same root (an include here would nest it as ``web:reports``)."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from planner.accounts.forms import ThrottledAuthenticationForm
from planner.web.views import byos, docs, overview

app_name = "web"

urlpatterns = [
    path("", overview.overview, name="overview"),
    path(
        "login/",
        auth_views.LoginView.as_view(
            redirect_authenticated_user=True, authentication_form=ThrottledAuthenticationForm
        ),
        name="login",
    ),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("policies/", include("planner.capacity.urls")),
    path("byos/", byos.byos, name="byos"),
    path("", include("planner.traces.urls")),
    path("", include("planner.studies.urls")),
    path("docs/semantics/", docs.semantics, name="semantics"),
]
