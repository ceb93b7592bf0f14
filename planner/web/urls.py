"""Routes of the site shell (namespace ``web``): the overview, sign-in, the policy pages, bring your
scheduler and the docs reader. The trace and study pages are routed by their apps' urls.py and
included here, so their names stay ``web:traces``, ``web:studies``, ... The study comparison page
and the finance report live in ``planner.reports`` (namespace ``reports``), which planner/urls.py
includes at the same root (an include here would nest it as ``web:reports``)."""

from django.contrib.auth import views as auth_views
from django.urls import include, path

from planner.accounts.forms import ThrottledAuthenticationForm
from planner.web.views import byos, docs, overview, policies

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
    path("policies/", policies.policy_list, name="policies"),
    path("policies/<int:pk>/", policies.policy_detail, name="policy"),
    path("policies/<int:pk>/duplicate/", policies.policy_duplicate, name="policy-duplicate"),
    path("policies/<int:pk>/preset/", policies.policy_preset, name="policy-preset"),
    path("byos/", byos.byos, name="byos"),
    path("", include("planner.traces.urls")),
    path("", include("planner.studies.urls")),
    path("docs/semantics/", docs.semantics, name="semantics"),
]
