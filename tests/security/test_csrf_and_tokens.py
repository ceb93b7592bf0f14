"""CSRF on every form (a POST with the session but without the token is refused, also by the
API), API tokens created, rotated and revoked by their owner only, and the production settings
passing ``manage.py check --deploy`` with no warning."""

from __future__ import annotations

import base64
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest
from rest_framework.test import APIClient

from tests.security.test_roles_matrix import concrete, page_routes

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name, route", page_routes())
def test_every_page_refuses_a_post_without_the_csrf_token(world, name, route):
    path = concrete(route, world, name)
    for identity in ("admin", "anonymous"):
        response = world.session(identity, enforce_csrf=True).post(path, {"name": "x"})
        assert response.status_code == 403, (identity, path, response.status_code)
        assert b"CSRF" in response.content


def test_the_login_form_works_with_its_csrf_token(world):
    world.users["viewer"].set_password("a-long-enough-password")
    world.users["viewer"].save()
    client = world.session("anonymous", enforce_csrf=True)
    client.get("/login/")
    token = client.cookies["csrftoken"].value
    response = client.post(
        "/login/",
        {"username": "viewer-user", "password": "a-long-enough-password", "csrfmiddlewaretoken": token},
    )
    assert response.status_code == 302 and response["Location"] == "/"


def test_the_api_with_a_session_needs_the_csrf_token(world):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(world.users["admin"])
    before = world.policy.name
    response = client.patch(f"/api/policies/{world.policy.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 403 and "CSRF" in response.json()["detail"]
    world.policy.refresh_from_db()
    assert world.policy.name == before
    assert client.get(f"/api/policies/{world.policy.pk}/").status_code == 200  # reading needs none


def test_the_api_with_a_token_needs_no_csrf_token(world):
    client = world.api("admin")
    response = client.patch(f"/api/policies/{world.policy.pk}/", {"name": "renamed"}, format="json")
    assert response.status_code == 200, response.json()


def test_a_user_revokes_only_their_own_token(world):
    viewer, finance = world.api("viewer"), world.api("finance")
    assert viewer.delete("/api/tokens/").status_code == 204
    assert viewer.get("/api/me/").status_code == 401
    assert finance.get("/api/me/").json()["role"] == "finance"  # someone else's token still works


def test_rotating_a_token_revokes_the_old_one_and_shows_the_new_one_once(world):
    old = world.api("viewer")
    created = old.post("/api/tokens/")
    assert created.status_code == 201
    key = created.json()["key"]
    assert old.get("/api/me/").status_code == 401
    new = APIClient()
    new.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert new.get("/api/me/").json()["username"] == "viewer-user"
    shown = new.get("/api/tokens/").json()["key"]
    assert shown != key and key.startswith(shown.rstrip("."))


def test_no_one_makes_a_token_for_someone_else(world):
    admin = world.api("admin")
    before = {user: world.users[user].auth_token.key for user in ("viewer", "finance")}
    for payload in ({"user": world.users["viewer"].pk}, {"username": "viewer-user"}):
        response = admin.post("/api/tokens/", payload, format="json")
        assert response.status_code == 201
        key = response.json()["key"]
        assert key not in before.values()
        assert world.users["admin"].__class__.objects.get(auth_token__key=key) == world.users["admin"]
        admin.credentials(HTTP_AUTHORIZATION=f"Token {key}")  # the admin's own token, rotated
    for user, key in before.items():
        world.users[user].refresh_from_db()
        assert world.users[user].auth_token.key == key


def test_a_token_can_be_made_with_a_password_but_not_without(world):
    world.users["finance"].set_password("a-long-enough-password")
    world.users["finance"].save()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"finance-user:wrong").decode())
    assert client.post("/api/tokens/").status_code == 401
    client.credentials(
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(b"finance-user:a-long-enough-password").decode()
    )
    assert client.post("/api/tokens/").status_code == 201


def production_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "PLANNER_", "DEBUG"))}
    return {
        **env,
        "SECRET_KEY": secrets.token_urlsafe(60),
        "DEBUG": "0",
        "ALLOWED_HOSTS": "planner.example.com",
        "PLANNER_SSL_REDIRECT": "1",
        "DATABASE_URL": "",
        "REDIS_URL": "",
        **extra,
    }


def manage(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_the_production_environment(tmp_path):
    done = manage(
        "check", "--deploy", "--fail-level", "WARNING", env=production_env(PLANNER_VAR_DIR=str(tmp_path))
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout


def test_check_deploy_catches_insecure_cookies(tmp_path):
    env = production_env(PLANNER_SECURE_COOKIES="0", PLANNER_VAR_DIR=str(tmp_path))
    done = manage("check", "--deploy", "--fail-level", "WARNING", env=env)
    assert done.returncode != 0
    for check in ("security.W012", "security.W016"):
        assert check in done.stderr, done.stderr


@pytest.mark.parametrize("key", ["x", "short", "a" * 80, secrets.token_urlsafe(30)])
def test_production_settings_refuse_a_weak_secret_key_with_a_message(tmp_path, key):
    # check --deploy only warned (W009), and SECRET_KEY=x passed with --fail-level ERROR
    done = manage("check", "--deploy", env=production_env(SECRET_KEY=key, PLANNER_VAR_DIR=str(tmp_path)))
    assert done.returncode != 0
    assert "SECRET_KEY is too weak for production" in done.stderr
    assert "give at least 50 characters, 5 or more of them different" in done.stderr


def test_traces_filter_by_their_format(world):
    """``?format=`` is the traces' filter, not DRF's renderer override (which answered 404)."""
    response = world.api("viewer").get("/api/traces/", {"format": "planner-csv"})
    assert response.status_code == 200, response.content[:200]
    assert response.json()["count"] == 0  # lab-week was read with format "auto"
    assert world.api("viewer").get("/api/traces/", {"format": "auto"}).json()["count"] == 1
