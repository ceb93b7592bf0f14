"""API tokens belong to their owner: created with a password or a session, used as
``Authorization: Token ...``, revoked by the owner or by the management command."""

import base64

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db


def basic(username: str, password: str) -> APIClient:
    client = APIClient()
    encoded = base64.b64encode(f"{username}:{password}".encode()).decode()
    client.credentials(HTTP_AUTHORIZATION=f"Basic {encoded}")
    return client


def token_client(key: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def test_a_user_creates_a_token_with_a_password_and_uses_it(user_with_role):
    user_with_role("ana", "viewer")
    created = basic("ana", "pw-ana").post("/api/tokens/")
    assert created.status_code == 201
    client = token_client(created.json()["key"])
    assert client.get("/api/me/").json() == {
        "username": "ana", "role": "viewer", "can_edit": False, "can_read_finance": False,
    }  # fmt: skip
    assert client.get("/api/policies/").status_code == 200


def test_a_password_alone_does_not_open_the_rest_of_the_api(user_with_role):
    user_with_role("ana", "viewer")
    assert basic("ana", "pw-ana").get("/api/policies/").status_code in (401, 403)


def test_a_revoked_token_stops_working(user_with_role):
    user_with_role("ana", "viewer")
    key = basic("ana", "pw-ana").post("/api/tokens/").json()["key"]
    assert token_client(key).delete("/api/tokens/").status_code == 204
    assert token_client(key).get("/api/policies/").status_code == 401


def test_a_new_token_replaces_the_old_one(user_with_role):
    user_with_role("ana", "viewer")
    old = basic("ana", "pw-ana").post("/api/tokens/").json()["key"]
    new = token_client(old).post("/api/tokens/").json()["key"]
    assert token_client(old).get("/api/me/").status_code == 401
    assert token_client(new).get("/api/me/").status_code == 200


def test_the_command_creates_and_revokes_a_token(user_with_role, capsys):
    user_with_role("bo", "admin")
    call_command("api_token", "bo")
    key = capsys.readouterr().out.strip()
    assert token_client(key).get("/api/me/").json()["role"] == "admin"
    call_command("api_token", "bo", "--revoke")
    assert token_client(key).get("/api/me/").status_code == 401
