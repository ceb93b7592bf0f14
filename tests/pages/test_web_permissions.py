"""Who may open and change what, through the Django test client: anonymous users go to the login
page, every role reads, only admins edit, and a signed-in user without a role is refused."""

import pytest

from planner.capacity.models import Policy
from planner.traces.models import Trace

pytestmark = pytest.mark.django_db

READ_PAGES = ("/", "/policies/", "/traces/", "/studies/")


def test_anonymous_visitors_are_sent_to_the_login_page(small_policy, small_trace):
    from django.test import Client

    anonymous = Client()
    for url in (*READ_PAGES, f"/policies/{small_policy.pk}/", f"/traces/{small_trace.pk}/",
                "/traces/upload/", "/studies/new/"):  # fmt: skip
        response = anonymous.get(url)
        assert response.status_code == 302, url
        assert response["Location"].startswith("/login/?next="), url


def test_the_login_page_signs_in_and_returns_to_the_page_asked_for(users):
    from django.test import Client

    client = Client()
    assert client.get("/login/").status_code == 200
    response = client.post(
        "/login/", {"username": "viewer", "password": "pages-test-password", "next": "/traces/"}
    )
    assert response.status_code == 302 and response["Location"] == "/traces/"
    wrong = Client().post("/login/", {"username": "viewer", "password": "nope"})
    assert wrong.status_code == 200 and b"errorlist" in wrong.content


def test_a_viewer_reads_every_page_but_sees_no_edit_control(client_as, small_policy, small_trace):
    viewer = client_as("viewer")
    for url in (*READ_PAGES, f"/policies/{small_policy.pk}/", f"/traces/{small_trace.pk}/"):
        assert viewer.get(url).status_code == 200, url
    page = viewer.get(f"/policies/{small_policy.pk}/?edit=share-{small_policy.shares.first().pk}").content
    assert b'name="share-name"' not in page  # no form in place for a viewer
    assert b"Variant: static split" not in page
    assert b"New study" not in viewer.get("/").content


def test_a_viewer_cannot_change_anything(client_as, small_policy, small_trace):
    viewer = client_as("viewer")
    share = small_policy.shares.get(name="train")
    response = viewer.post(f"/policies/{small_policy.pk}/", {"action": "delete-share", "share": share.pk})
    assert response.status_code == 403
    assert small_policy.shares.filter(pk=share.pk).exists()
    assert viewer.post(f"/policies/{small_policy.pk}/preset/", {"preset": "static-split"}).status_code == 403
    assert viewer.post(f"/policies/{small_policy.pk}/duplicate/", {"name": "copy"}).status_code == 403
    assert viewer.get("/traces/upload/").status_code == 403
    assert viewer.get("/studies/new/").status_code == 403
    assert Policy.objects.count() == 1 and Trace.objects.count() == 1


def test_a_user_without_a_role_is_refused_with_a_reason(client_as):
    response = client_as("nobody").get("/")
    assert response.status_code == 403
    assert "ask an admin to give you the viewer role" in response.content.decode()
    assert "Editing needs the admin role." in client_as("viewer").get("/traces/upload/").content.decode()


def test_the_top_bar_names_the_user_and_role(client_as):
    page = client_as("finance").get("/").content.decode()
    assert "finance</span>" in page and 'class="role role-finance"' in page
    assert 'href="/api/docs/"' in page
    for label in ("Overview", "Policies", "Traces", "Studies"):
        assert f">{label}</a>" in page


def test_the_finance_link_shows_for_finance_and_admin_only(client_as):
    from django.urls import NoReverseMatch, reverse

    try:
        finance_url = reverse("reports:finance")
    except NoReverseMatch:
        pytest.skip("the finance report (planner.reports) is not installed")
    link = f'href="{finance_url}"'
    assert link in client_as("finance").get("/").content.decode()
    assert link in client_as("admin").get("/").content.decode()
    assert link not in client_as("viewer").get("/").content.decode()
