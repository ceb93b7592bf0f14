"""Who may read and who may change what, over every page URL (from the URL resolver) and every
API operation (from the OpenAPI schema), for anonymous callers, a revoked token, a signed-in user
without a role, viewer, finance and admin. A route added later fails here until it is classified."""

from __future__ import annotations

import re

import pytest
from django.apps import apps
from django.urls import URLResolver, get_resolver
from drf_spectacular.generators import SchemaGenerator

pytestmark = pytest.mark.django_db

# Who is asking: nobody, another user's revoked token, a signed-in user without a role, each role.
IDENTITIES = ("anonymous", "revoked", "nobody", "viewer", "finance", "admin")
READERS = {"viewer", "finance", "admin"}
FINANCE_READERS = {"finance", "admin"}
ADMINS = {"admin"}

# Page route name -> (who may GET it, who may POST to it; None: POST changes nothing for anyone).
PAGES: dict[str, tuple[set[str] | str, set[str] | None]] = {
    "web:overview": (READERS, None),
    "web:policies": (READERS, None),
    "web:policy": (READERS, ADMINS),
    "web:policy-duplicate": (ADMINS, ADMINS),
    "web:policy-preset": (ADMINS, ADMINS),
    "web:traces": (READERS, None),
    "web:trace-upload": (ADMINS, ADMINS),
    "web:byos": (ADMINS, ADMINS),
    "web:trace": (READERS, None),
    "web:studies": (READERS, None),
    "web:study-new": (ADMINS, ADMINS),
    "web:find-job": (READERS, None),
    "web:semantics": (READERS, None),
    "reports:study": (READERS, None),
    "reports:study-progress": (READERS, None),
    "reports:study-csv": (READERS, None),
    "reports:study-charts": (READERS, None),
    "reports:finance": (FINANCE_READERS, None),
    "reports:finance-csv": (FINANCE_READERS, None),
    "calibration:list": (READERS, ADMINS),
    "calibration:detail": (READERS, None),
    "reports:study-why": (READERS, None),
    "reports:study-jobs": (READERS, None),
    "advisor:list": (READERS, ADMINS),
    "advisor:detail": (READERS, None),
    "advisor:keep": (ADMINS, ADMINS),
    "advisor:delete": (ADMINS, ADMINS),
    "commons:report": (READERS, None),
    "curves:list": (READERS, ADMINS),
    "curves:curve": (READERS, None),
    "curves:curve-csv": (READERS, None),
    "curves:curve-delete": (ADMINS, ADMINS),
    "curves:plan-policy": (ADMINS, ADMINS),
    "curves:search": (READERS, None),
    "curves:search-csv": (READERS, None),
    "curves:search-delete": (ADMINS, ADMINS),
    "forecasts:list": (READERS, READERS),  # every role forecasts "when will my job start"
    "forecasts:demo": (READERS, READERS),
    "forecasts:detail": (READERS, None),
}
# Pages that only take a POST: a GET is 405 for everyone (it shows nothing); the POST test covers them.
POST_ONLY = {
    "web:policy-duplicate", "web:policy-preset", "advisor:keep", "advisor:delete", "curves:curve-delete",
    "curves:search-delete", "curves:plan-policy", "forecasts:demo",
}  # fmt: skip
PUBLIC_PAGES = {"web:login", "rest_framework:login", "web:logout", "rest_framework:logout"}
# Slugs of routes that take one (a real table, so the allowed roles get a 200).
SLUGS = {"reports:study-csv": "policies", "reports:finance-csv": "report"}


def page_routes() -> list[tuple[str, str]]:
    """(route name, route pattern) of every page: everything but /admin/ and /api/."""

    def walk(patterns, prefix: str, namespace: str):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
                yield from walk(pattern.url_patterns, prefix + str(pattern.pattern), inner)
            else:
                yield f"{namespace}{pattern.name}", prefix + str(pattern.pattern)

    return sorted(
        (name, route)
        for name, route in walk(get_resolver().url_patterns, "", "")
        if not route.startswith(("admin/", "api/"))
    )


def api_operations() -> list[tuple[str, str]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return sorted((path, method) for path, ops in schema["paths"].items() for method in ops)


def concrete(route: str, world, name: str) -> str:
    path = "/" + route
    if "<int:pk>" in path or "{id}" in path:
        pk = world.pk_for(path.split("<")[0].split("{")[0])
        path = path.replace("<int:pk>", str(pk)).replace("{id}", str(pk))
    path = path.replace("<int:number>", "1").replace("{number}", "1")
    path = path.replace("<slug:section>", "waits")  # a folded section of the study page's charts
    return path.replace("<slug:table>", SLUGS.get(name, "x"))


# Figures computed on the first read and kept (by whoever may read them): not a change.
READ_CACHES = {"commons.CommonsReport"}


def fingerprint() -> dict[str, object]:
    """Every planner row (and API token), to see that nothing changed."""
    state: dict[str, object] = {}
    configs = [c for c in apps.get_app_configs() if c.name.startswith("planner.") or c.label == "authtoken"]
    for config in configs:
        for model in config.get_models():
            if model._meta.label in READ_CACHES:
                continue
            state[model._meta.label] = sorted(
                tuple(str(v) for v in row) for row in model.objects.values_list()
            )
    return state


def test_every_page_route_is_classified():
    names = {name for name, _ in page_routes()}
    unclassified = names - set(PAGES) - PUBLIC_PAGES
    assert not unclassified, f"classify these pages in PAGES (who may read, who may change): {unclassified}"
    assert set(PAGES) <= names, f"PAGES names routes that no longer exist: {set(PAGES) - names}"


@pytest.mark.parametrize("name, route", [r for r in page_routes() if r[0] in PAGES])
def test_page_access_by_role(world, name, route):
    readers, writers = PAGES[name]
    path = concrete(route, world, name)
    wrong = []
    for identity in IDENTITIES:
        response = world.session(identity).get(path)
        if name in POST_ONLY:
            ok = response.status_code == 405
        elif identity in ("anonymous", "revoked"):
            ok = response.status_code == 302 and response["Location"].startswith("/login/?next=")
        elif identity in readers:
            ok = response.status_code == 200 or (response.status_code == 404 and not world.knows(path))
        else:
            ok = response.status_code == 403
        if not ok:
            wrong.append(f"GET {path} as {identity}: {response.status_code}")
    assert not wrong, wrong


@pytest.mark.parametrize("name, route", [r for r in page_routes() if r[0] in PAGES])
def test_page_posts_change_nothing_without_the_role(world, name, route):
    """A POST with an empty form from anyone who may not change the page: refused (or, for a page
    that changes nothing, harmless); from an admin: an answer, never a server error."""
    _, writers = PAGES[name]
    path = concrete(route, world, name)
    wrong = []
    for identity in IDENTITIES:
        before = fingerprint()
        response = world.session(identity).post(path, {"action": "rename", "name": ""})
        code = response.status_code
        if code >= 500:
            wrong.append(f"POST {path} as {identity}: {code}")
        elif identity in ("anonymous", "revoked"):
            if not (code == 302 and response["Location"].startswith("/login/?next=")):
                wrong.append(f"POST {path} as {identity}: {code}, not sent to the login page")
        elif writers is not None and identity not in writers and code != 403:
            wrong.append(f"POST {path} as {identity}: {code}, not 403")
        if (writers is None or identity not in writers) and fingerprint() != before:
            wrong.append(f"POST {path} as {identity} changed the database")
    assert not wrong, wrong


def api_allowed(path: str, method: str, identity: str) -> bool:
    if identity in ("anonymous", "revoked"):
        return False
    if path == "/api/tokens/" or (path == "/api/me/" and method == "get"):
        return True  # any signed-in user: their own token, who they are
    if path == "/api/forecasts/" and method == "post":
        return identity in READERS  # every role may ask when its jobs start
    if method != "get":
        return identity in ADMINS
    if path.endswith("/finance/"):
        return identity in FINANCE_READERS
    return identity in READERS


@pytest.mark.parametrize("path, method", api_operations())
def test_api_access_by_role(world, path, method):
    url = concrete(path.lstrip("/"), world, "")
    wrong = []
    # Admin last: an admin's DELETE or PUT may change what the others would have read.
    for identity in IDENTITIES:
        response = getattr(world.api(identity), method)(url, {}, format="json")
        code = response.status_code
        if code >= 500:
            wrong.append(f"{method.upper()} {url} as {identity}: {code}")
        elif identity in ("anonymous", "revoked"):
            if code != 401:
                wrong.append(f"{method.upper()} {url} as {identity}: {code}, not 401")
        elif api_allowed(path, method, identity):
            if code in (401, 403):
                wrong.append(f"{method.upper()} {url} as {identity}: {code}, should be allowed")
        elif code != 403:
            wrong.append(f"{method.upper()} {url} as {identity}: {code}, not 403")
    assert not wrong, wrong


@pytest.mark.parametrize("path", ["/api/", "/api/schema/", "/api/docs/"])
def test_api_root_schema_and_docs_need_a_role(world, path):
    assert world.api("anonymous").get(path).status_code == 401
    assert world.api("revoked").get(path).status_code == 401
    assert world.api("nobody").get(path).status_code == 403
    assert world.api("viewer").get(path).status_code == 200


def test_the_django_admin_is_for_the_admin_role_only(world):
    for identity in ("anonymous", "nobody", "viewer", "finance"):
        response = world.session(identity).get("/admin/capacity/policy/")
        assert response.status_code == 302 and "/admin/login/" in response["Location"], identity
    response = world.session("admin").get("/admin/capacity/policy/")
    assert response.status_code in (200, 302)
    if response.status_code == 302:  # the admin role is not staff: it is sent to log in, not let in
        assert "/admin/login/" in response["Location"]


def test_the_schema_lists_what_the_matrix_covers():
    paths = {path for path, _ in api_operations()}
    assert {"/api/policies/{id}/", "/api/shares/{id}/", "/api/runs/{id}/finance/", "/api/tokens/"} <= paths
    assert all(re.fullmatch(r"/api/[a-z\-{}/]+", path) for path in paths)


# -- $ figures: which fields each role reads (planner.accounts.money) --------------------------

# Text that is a $ figure in an answer: an amount, a *_usd field, an hourly price (also as the
# planner:hourly_price tag or planner/hourly-price annotation of the exports).
MONEY_NAMES = re.compile(r"_usd\b|\busd\b|hourly_price|hourly-price")
MONEY_AMOUNT = re.compile(r"\$\s?[0-9]")
# The semantics the pages cite describe the input formats (``hourly_price``, rerun cost in $):
# text everyone may read, holding no figure of the pool.
DOCUMENTATION = {"web:semantics"}


def money_fields(value, where: str = "") -> list[str]:
    """Paths of every $ field in a JSON value (the viewer must get none)."""
    found = []
    if isinstance(value, dict):
        for key, inner in value.items():
            path = f"{where}.{key}" if where else str(key)
            if MONEY_NAMES.search(str(key)):
                found.append(path)
            found += money_fields(inner, path)
    elif isinstance(value, list):
        for i, inner in enumerate(value):
            found += money_fields(inner, f"{where}[{i}]")
    return found


def test_finance_reads_the_dollar_fields_a_viewer_does_not(world):
    # The fields exist: finance reads them, so the viewer checks below can fail.
    run = world.study.runs.get()
    finance = world.api("finance").get(f"/api/runs/{run.pk}/metrics/").json()
    viewer = world.api("viewer").get(f"/api/runs/{run.pk}/metrics/").json()
    assert {"own_usd", "borrowed_usd", "lent_usd", "idle_usd", "stranded_usd", "rerun_cost_usd"} <= set(
        finance["shares"][0]
    )
    assert "usd" in finance["periods"]["shares"]["train"]
    assert money_fields(viewer) == []
    # GPU-hours stay readable for the viewer
    assert viewer["shares"][0]["rerun_gpu_hours"] == finance["shares"][0]["rerun_gpu_hours"]
    assert viewer["periods"]["shares"]["train"]["own"] == finance["periods"]["shares"]["train"]["own"]
    name = world.instance_type.name
    prices = {t["name"]: t for t in world.api("finance").get("/api/instance-types/").json()["results"]}
    assert prices[name]["hourly_price"] == 1.5
    listed = {t["name"]: t for t in world.api("viewer").get("/api/instance-types/").json()["results"]}
    assert "hourly_price" not in listed[name]


@pytest.mark.parametrize("path", [p for p, method in api_operations() if method == "get"])
def test_no_api_answer_gives_a_viewer_a_dollar_figure(world, path):
    url = concrete(path.lstrip("/"), world, "")
    response = world.api("viewer").get(url)
    if response.status_code != 200:
        return  # refused (finance reports), or not found: nothing to leak
    if response["Content-Type"].startswith("application/json"):
        assert money_fields(response.json()) == [], url
    assert not MONEY_NAMES.search(response.content.decode()), url


@pytest.mark.parametrize("name, route", [r for r in page_routes() if r[0] in PAGES])
def test_no_page_or_csv_gives_a_viewer_a_dollar_figure(world, name, route):
    readers, _ = PAGES[name]
    if "viewer" not in readers or name in POST_ONLY or name in DOCUMENTATION:
        return
    path = concrete(route, world, name)
    queries = [""]
    if name == "commons:report":
        queries.append(f"?trace={world.trace.pk}&unit=usd")  # the $ unit is not offered to a viewer
    if name == "reports:study-csv":
        queries = ["", "?sort=policies:13:desc"]
    for query in queries:
        response = world.session("viewer").get(path + query)
        if response.status_code != 200:
            continue
        text = response.content.decode("utf-8-sig")
        assert not MONEY_AMOUNT.search(text), (path + query, MONEY_AMOUNT.search(text).group())
        assert not MONEY_NAMES.search(text), (path + query, MONEY_NAMES.search(text).group())


def test_the_study_page_and_csv_show_finance_its_dollar_figures(world):
    # The same page for finance has them: the viewer test above is not vacuous.
    client = world.session("finance")
    page = client.get(f"/studies/{world.study.pk}/").content.decode()
    assert "Rerun cost ($)" in page and MONEY_AMOUNT.search(page)
    csv = client.get(f"/studies/{world.study.pk}/shares.csv").content.decode("utf-8-sig")
    assert "Rerun cost ($)" in csv.splitlines()[0]
    viewer_csv = (
        world.session("viewer").get(f"/studies/{world.study.pk}/shares.csv").content.decode("utf-8-sig")
    )
    assert "Rerun cost (GPU-hours)" in viewer_csv.splitlines()[0]
    assert "$" not in viewer_csv


def test_the_advisor_page_and_api_give_a_viewer_no_dollar_figure(world):
    from planner.advisor.launch import SweepLaunch, start_sweep
    from tests.fixtures import eager_worker

    with eager_worker():
        sweep = start_sweep(
            SweepLaunch(
                trace=world.trace,
                base_policy=world.policy,
                size=2,
                knobs={"shares": ["train"]},
            ),
        )
    finance_page = world.session("finance").get(f"/advisor/{sweep.pk}/").content.decode()
    assert "Rerun ($)" in finance_page  # the column exists for finance
    page = world.session("viewer").get(f"/advisor/{sweep.pk}/").content.decode()
    assert "Rerun (GPU-hours)" in page
    assert not MONEY_AMOUNT.search(page) and not MONEY_NAMES.search(page)
    finance_api = world.api("finance").get(f"/api/sweeps/{sweep.pk}/").json()
    assert "rerun_cost_usd" in finance_api["points"][0]
    assert money_fields(world.api("viewer").get(f"/api/sweeps/{sweep.pk}/").json()) == []


def test_a_curves_training_plan_gives_a_viewer_gpu_hours_and_no_dollar_figure(world):
    from planner.curves.launch import CurveLaunch, start_curve
    from planner.curves.tasks import replay_curve_point
    from scheduling.capacity_plans import TrainingPlan

    plan = TrainingPlan(world.instance_type.name, 1, "train", 0, 86400)  # a day
    curve = start_curve(
        CurveLaunch(
            trace=world.trace,
            policies=[world.policy],
            sizes=[4],
            plans=[(None, plan)],
        ),
        enqueue=False,
    )
    for pk in curve.points.values_list("pk", flat=True):
        replay_curve_point.apply(args=[pk])
    finance = world.api("finance").get(f"/api/curves/{curve.pk}/").json()
    assert "cost_usd" in finance["plan_rows"][0] and "hours_per_1000_usd" in finance["plan_rows"][0]["effect"]
    viewer = world.api("viewer").get(f"/api/curves/{curve.pk}/").json()
    assert money_fields(viewer) == [] and viewer["plan_rows"][0]["gpu_hours"] > 0
    assert MONEY_AMOUNT.search(world.session("finance").get(f"/curves/{curve.pk}/").content.decode())
    for path in (f"/curves/{curve.pk}/", f"/curves/{curve.pk}/points.csv"):
        text = world.session("viewer").get(path).content.decode("utf-8-sig")
        assert "train" in text and not MONEY_AMOUNT.search(text) and not MONEY_NAMES.search(text), path
