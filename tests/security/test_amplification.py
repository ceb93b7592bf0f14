"""Resource amplification an outside test found: a 10,000-share policy (37 s to create, and every
policy list 11.6 s and 1.97 MB afterwards) and unthrottled password guessing on the login page and
the token endpoint. Shares per policy are capped, lists do not embed shares, and repeated wrong
passwords lock the username for a while."""

from __future__ import annotations

import base64

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from planner.capacity.models import Policy, Pool, ShareSpec
from scheduling.model import MAX_SHARES
from tests.security.conftest import GPU_TYPE


@pytest.fixture(autouse=True)
def throttle_cache(settings):
    """A cache of this test's own, so that locks neither leak into other tests nor survive a run."""
    settings.CACHES = {
        **settings.CACHES,
        "login-throttle": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "t"},
    }
    settings.PLANNER_LOGIN_FAILURES = 5
    settings.PLANNER_LOGIN_FAILURES_PER_ADDRESS = 20
    settings.PLANNER_LOGIN_LOCK_SECONDS = 900
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast to check


def shares_payload(count: int) -> list[dict]:
    return [{"name": f"team-{i:05d}", "capacity": {GPU_TYPE: 0}} for i in range(count)]


def test_a_policy_of_more_than_500_shares_is_refused_naming_the_cap(world):
    response = world.api("admin").post(
        "/api/policies/",
        {"name": "too-many", "pool": world.pool.pk, "shares": shares_payload(MAX_SHARES + 1)},
        format="json",
    )
    assert response.status_code == 400
    assert "501 shares: a policy has at most 500" in str(response.json())
    assert not Policy.objects.filter(name="too-many").exists()


def test_the_policy_list_gives_share_counts_not_shares(world, django_assert_max_num_queries):
    # 20 policies of 500 shares: the list of 50 stays small and takes a fixed number of queries
    pool = Pool.objects.get(pk=world.pool.pk)
    for n in range(20):
        policy = Policy.objects.create(name=f"wide-{n}", pool=pool)
        policy.replace_shares(
            [ShareSpec(f"t{i}", capacity={GPU_TYPE: 0}) for i in range(MAX_SHARES if n == 0 else 25)]
        )
    api = world.api("viewer")
    with django_assert_max_num_queries(8):
        response = api.get("/api/policies/", {"limit": 50})
    assert response.status_code == 200
    body = response.json()
    assert body["count"] == 21
    wide = next(p for p in body["results"] if p["name"] == "wide-0")
    assert wide["share_count"] == 500 and "shares" not in wide
    assert wide["shares_url"] == f"/api/shares/?policy={wide['id']}"
    assert len(response.content) < 20_000  # 21 policies without their 975 shares
    # the detail still embeds them
    assert len(api.get(f"/api/policies/{wide['id']}/").json()["shares"]) == 500


def login(client: Client, username: str, password: str):
    return client.post("/login/", {"username": username, "password": password})


def test_five_wrong_passwords_lock_the_login_page_for_the_account(world):
    user = User.objects.create_user("guessed", password="the-right-one")
    client = Client()
    for attempt in range(5):
        response = login(client, "guessed", f"guess-{attempt}")
        assert response.status_code == 200 and not response.wsgi_request.user.is_authenticated
    # the fifth wrong password locked it: the right one is refused too, and the page says why
    response = login(client, "guessed", "the-right-one")
    assert response.status_code == 200
    assert "Too many wrong passwords for this account or from this address: try again in 15 minutes" in (
        response.content.decode()
    )
    assert "_auth_user_id" not in client.session
    # another account from elsewhere is not affected
    User.objects.create_user("other", password="pw-other")
    assert login(Client(REMOTE_ADDR="10.0.0.9"), "other", "pw-other").status_code == 302
    user.refresh_from_db()
    assert user.last_login is None


def test_a_right_password_before_the_limit_resets_the_count(world):
    User.objects.create_user("forgetful", password="right")
    client = Client()
    for _ in range(4):
        login(client, "forgetful", "wrong")
    assert login(client, "forgetful", "right").status_code == 302  # signed in, the count starts again
    client = Client()
    for _ in range(4):
        login(client, "forgetful", "wrong")
    assert login(client, "forgetful", "right").status_code == 302


def basic(username: str, password: str) -> APIClient:
    client = APIClient()
    client.credentials(
        HTTP_AUTHORIZATION="Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
    )
    return client


def test_wrong_passwords_on_the_token_endpoint_answer_429_with_retry_after(world):
    User.objects.create_user("scripted", password="right")
    for attempt in range(4):
        assert basic("scripted", f"wrong-{attempt}").post("/api/tokens/").status_code == 401
    locked = basic("scripted", "wrong-5").post("/api/tokens/")
    assert locked.status_code == 429
    assert 890 <= int(locked["Retry-After"]) <= 900
    assert "Too many wrong passwords: try again in 15 minutes" in locked.json()["detail"]
    assert basic("scripted", "right").post("/api/tokens/").status_code == 429  # locked, right or wrong


def test_one_address_guessing_many_accounts_is_locked_too(world):
    client = Client(REMOTE_ADDR="203.0.113.7")
    for n in range(20):
        login(client, f"someone-{n}", "password1")  # a spray: one guess per account
    User.objects.create_user("victim", password="password1")
    response = login(client, "victim", "password1")
    assert "Too many wrong passwords" in response.content.decode()
    assert login(Client(REMOTE_ADDR="198.51.100.1"), "victim", "password1").status_code == 302
