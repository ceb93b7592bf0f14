"""Not found, not allowed and server errors keep the site's layout (top bar, menu), DEBUG off."""

import pytest
from django.test import Client
from django.urls import include, path

from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)


def boom(request):
    raise RuntimeError("a bug")


urlpatterns = [path("boom/", boom), path("", include("planner.urls"))]
handler500 = "planner.web.errors.server_error"


def test_not_found_has_the_top_bar_and_says_what_to_do(client_as, settings):
    settings.DEBUG = False
    response = client_as("viewer").get("/no-such-page/")
    page = response.content.decode()
    assert response.status_code == 404
    assert 'class="topbar"' in page and 'class="menu"' in page and "Find a job" in page
    assert "There is nothing at <code>/no-such-page/</code>." in page
    study = client_as("viewer").get("/studies/999999/").content.decode()
    assert "No Study matches the given query" in study and 'class="topbar"' in study
    anonymous = Client().get("/no-such-page/").content.decode()
    assert 'class="topbar"' in anonymous and "Sign in" in anonymous and 'class="menu"' not in anonymous


def test_a_server_error_has_the_top_bar(client_as, settings):
    settings.DEBUG = False
    settings.ROOT_URLCONF = __name__
    client = client_as("viewer")
    client.raise_request_exception = False
    response = client.get("/boom/")
    page = response.content.decode()
    assert response.status_code == 500
    assert 'class="topbar"' in page and 'class="menu"' in page and "Something went wrong" in page
    assert "a bug" not in page  # never the error itself


def test_forbidden_has_the_menu_of_the_role(client_as, settings):
    settings.DEBUG = False
    response = client_as("viewer").get("/finance/")
    page = response.content.decode()
    assert response.status_code == 403
    assert 'class="menu"' in page and "Finance needs" not in page and "Finance reports need" in page


def test_not_found_in_the_browser(page_as):
    page = page_as("viewer", width=390)
    page.goto("/no-such-page/")
    assert page.get_by_role("heading", name="Not found").is_visible()
    assert page.get_by_role("navigation", name="Main").get_by_role("link", name="Overview").is_visible()
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    look_at(page, "not-found-390")
