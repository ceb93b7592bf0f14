"""Fixtures for the page tests: a live server, one Debian chromium per session driven by
Playwright's sync API, a signed-in page per role, a small pool/policy/trace to look at, and
``look_at`` (screenshot to tests/pages/screenshots/ and a check that a chart drew something).

Chromium is Debian's (/usr/bin/chromium), never one Playwright downloads.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import Group, Permission, User
from django.test import Client

from planner.accounts.roles import ADMIN, FINANCE, VIEWER, apply_roles
from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.traces.models import Trace, read_upload
from tests import fixtures

eager_celery = fixtures.eager_celery  # a fixture (tests/fixtures.py)
media_root = fixtures.media_root  # a fixture (tests/fixtures.py)

# Playwright's sync API runs an event loop in this thread; Django's ORM refuses to run in a
# thread with a running loop unless told it is safe (it is: the loop is Playwright's own).
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SCREENSHOTS = Path(__file__).parent / "screenshots"
PASSWORD = "pages-test-password"
GPU_TYPE = "ml.g5.xlarge"

# Two teams on four GPUs: 'train' submits at 0 and 1800, 'infer' at 600 (seconds).
SMALL_TRACE_CSV = b"""job_id,submit_time,share,priority,instance_count,duration
t1,0,train,1,2,3600
t2,1800,train,1,1,7200
i1,600,infer,5,1,900
i2,5400,infer,5,2,1200
"""


@pytest.fixture
def roles(db) -> None:
    """The role groups (a live-server test flushes the ones the migration made)."""
    apply_roles(Group, Permission)


@pytest.fixture
def users(roles) -> dict[str, User]:
    """One user per role (and ``nobody``, signed in without a role)."""
    made = {}
    for role in (ADMIN, FINANCE, VIEWER, None):
        user = User.objects.create_user(username=role or "nobody", password=PASSWORD)
        if role:
            user.groups.add(Group.objects.get(name=role))
        made[role or "nobody"] = user
    return made


@pytest.fixture
def client_as(users):
    """``client_as("viewer")``: a Django test client signed in as that role."""

    def build(role: str) -> Client:
        client = Client()
        client.force_login(users[role])
        return client

    return build


@pytest.fixture
def small_policy(db) -> Policy:
    """Pool of 4 x ml.g5.xlarge; shares train (2, LEND_AND_BORROW, 100 %) and infer (1, LEND)."""
    gpu = InstanceType.objects.create(name=GPU_TYPE, gpus=1, hourly_price=1.5)
    pool = Pool.objects.create(name="lab")
    pool.set_capacity({gpu.name: 4})
    policy = Policy.objects.create(name="lab-policy", pool=pool, description="Two teams.")
    policy.replace_shares(
        [
            ShareSpec("train", "LEND_AND_BORROW", 100, "lower_priority", "any", {GPU_TYPE: 2}),
            ShareSpec("infer", "LEND", None, "never", "any", {GPU_TYPE: 1}),
        ]
    )
    return policy


@pytest.fixture
def small_trace(db) -> Trace:
    columns = read_upload(io.BytesIO(SMALL_TRACE_CSV), format="planner-csv")
    return Trace.store(columns, name="lab-week", format="planner-csv", description="Four jobs of two teams.")


# -- the browser -------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (never playwright install)")
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page_as(browser, live_server, users):
    """``page_as("admin")``: a Playwright page at 1280 px signed in as that role (session cookie
    made by Django, so only the login test goes through the form). Fails the test on any
    JavaScript error."""
    contexts = []
    errors: list[str] = []

    def build(role: str | None, *, width: int = 1280, height: int = 900):
        context = browser.new_context(viewport={"width": width, "height": height}, base_url=live_server.url)
        contexts.append(context)
        if role is not None:
            client = Client()
            client.force_login(users[role])
            cookie = client.cookies[settings.SESSION_COOKIE_NAME]
            context.add_cookies(
                [{"name": settings.SESSION_COOKIE_NAME, "value": cookie.value, "url": live_server.url}]
            )
        page = context.new_page()
        # Generous: CI runs the page shards beside CPU-bound steps on two cores, and a first visit
        # may put a study on its common window or write the job finder's indexes. A waiting test
        # still ends as soon as what it waits for is there.
        page.set_default_timeout(30_000)
        page.set_default_navigation_timeout(60_000)
        page.on("pageerror", lambda error: errors.append(str(error)))
        return page

    yield build
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors: {errors}"


def look_at(page, name: str, chart: str | None = None, *, full_page: bool = True) -> None:
    """Screenshot ``page`` to screenshots/<name>.png; with ``chart`` (a CSS selector of a
    ``[data-plotly]`` element), first check that Plotly drew it with something in it: at least
    one series with data, and at least one drawn mark (bar, line or area) in its SVG."""
    SCREENSHOTS.mkdir(exist_ok=True)
    if chart is not None:
        element = page.locator(chart)
        element.locator(".main-svg").first.wait_for(state="attached")
        page.wait_for_function(
            "selector => document.querySelector(selector).dataset.drawn === 'yes'", arg=chart
        )
        points = element.evaluate(
            """el => el._fullData.reduce((n, t) => n + ((t.orientation === 'h' ? t.x : t.y) || [])
                 .filter(v => v !== null && v !== 0).length, 0)"""
        )
        assert points > 0, f"{chart}: no series has a value"
        marks = element.evaluate(
            """el => Array.from(el.querySelectorAll('.main-svg .trace path'))
                 .filter(p => (p.getAttribute('d') || '').length > 8).length"""
        )
        assert marks > 0, f"{chart}: Plotly drew no bar, line or area"
    page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=full_page)
