"""Fixtures for the upload fuzzing: media in a temporary folder and an admin (token API client and
signed-in page client), plus ``stored()``: the Trace rows and the files under MEDIA_ROOT."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planner.traces.models import Trace
from tests import fixtures

media_root = fixtures.media_root  # a fixture (tests/fixtures.py)


@pytest.fixture
def admin_user(db) -> User:
    user = User.objects.create_user(username="fuzz-admin")
    user.groups.add(Group.objects.get(name="admin"))
    return user


@pytest.fixture
def admin_api(admin_user) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=admin_user).key}")
    return client


@pytest.fixture
def admin_page(admin_user) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


@pytest.fixture
def stored(media_root):
    """``stored()``: (Trace rows, files under MEDIA_ROOT), to show nothing was half-stored."""

    def count() -> tuple[int, int]:
        root = Path(media_root)
        files = sum(1 for path in root.rglob("*") if path.is_file()) if root.exists() else 0
        return Trace.objects.count(), files

    return count
