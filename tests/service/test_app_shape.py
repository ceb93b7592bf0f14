"""Every domain app has the same shape (NetBox's), so a reader who knows one app knows all.

A *domain app* owns data: it has ``models.py``. It then has ``api/`` (``serializers.py``,
``views.py``, ``urls.py``), its pages in ``views.py`` (or a ``views/`` package), their routes in
``urls.py``, and, when a page takes input (reads ``request.POST``), its forms in ``forms.py``. A
``launch.py`` (an app that starts background work) hands each ``start_*``/``launch_*`` one frozen
dataclass (``planner.launches.Launch``), never a list of copied keywords.

*Shell apps* own no data, so they have no models and differ on purpose:

- ``web``: the site shell (overview, first screens, study headlines, menu, docs reader, error
  pages, palette) and the helpers every app's pages share (access, listing, query, charts);
- ``reports``: pages that read other apps' results (study comparison, why, job finder, finance);
- ``api``: the API root, schema, Swagger UI, error shapes and pagination all apps' APIs use;
- ``accounts``: roles and tokens on Django's own users (its API, no pages but sign-in);
- ``exports``: policy export and import, an API over ``capacity`` with no rows of its own;
- ``demo``: the ``load_demo`` command.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
from importlib import import_module
from pathlib import Path

import pytest

from planner.launches import Launch

PLANNER = Path(__file__).resolve().parents[2] / "planner"
SHELL_APPS = {"web", "reports", "api", "accounts", "exports", "demo"}
API_MODULES = ("__init__.py", "serializers.py", "views.py", "urls.py")
# What the site shell keeps in planner/web/views: it routes no app's own pages.
SHELL_PAGES = {"__init__", "overview", "first_screens", "headline", "docs", "byos"}


def apps() -> list[str]:
    return sorted(path.parent.name for path in PLANNER.glob("*/apps.py"))


def domain_apps() -> list[str]:
    return [name for name in apps() if (PLANNER / name / "models.py").exists()]


def has_pages(app: Path) -> bool:
    return (app / "views.py").exists() or (app / "views" / "__init__.py").exists()


def page_sources(app: Path) -> str:
    files = [app / "views.py"] if (app / "views.py").exists() else sorted((app / "views").glob("*.py"))
    return "\n".join(path.read_text() for path in files)


def test_every_app_is_a_domain_app_or_a_named_shell_app():
    # A new app either has models (and then the whole shape) or is added to SHELL_APPS with why.
    assert set(apps()) - set(domain_apps()) == SHELL_APPS
    assert not SHELL_APPS & set(domain_apps())


@pytest.mark.parametrize("name", domain_apps())
def test_a_domain_app_has_its_api_package(name):
    api = PLANNER / name / "api"
    assert not (PLANNER / name / "api.py").exists(), f"{name}: api.py, not an api/ package"
    missing = [module for module in API_MODULES if not (api / module).exists()]
    assert not missing, f"planner/{name}/api/ lacks {', '.join(missing)}"


@pytest.mark.parametrize("name", domain_apps())
def test_a_domain_app_holds_its_pages_and_their_routes(name):
    app = PLANNER / name
    assert has_pages(app), f"planner/{name} has no views.py: its pages belong in the app"
    assert (app / "urls.py").exists(), f"planner/{name} has no urls.py"
    if "request.POST" in page_sources(app):
        assert (app / "forms.py").exists(), f"planner/{name}'s pages take input but it has no forms.py"


def test_the_site_shell_routes_no_app_pages():
    kept = {path.stem for path in (PLANNER / "web" / "views").glob("*.py")}
    strays = kept - SHELL_PAGES
    assert not strays, f"planner/web/views holds app pages: {sorted(strays)}; move them into their apps"


def launch_modules() -> list[str]:
    return [f"planner.{name}.launch" for name in domain_apps() if (PLANNER / name / "launch.py").exists()]


def starters(module) -> list:
    """The module's own public functions that start work: ``start_*`` and ``launch_*``."""
    tree = ast.parse(Path(module.__file__).read_text())
    names = [node.name for node in tree.body if isinstance(node, ast.FunctionDef)]
    return [getattr(module, name) for name in names if name.startswith(("start_", "launch_"))]


@pytest.mark.parametrize("path", launch_modules())
def test_each_launch_takes_one_frozen_argument_object(path):
    module = import_module(path)
    functions = starters(module)
    assert functions, f"{path} starts nothing"
    for function in functions:
        parameters = list(inspect.signature(function).parameters.values())
        first, rest = parameters[0], parameters[1:]
        assert first.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD, f"{function.__name__}: {first}"
        launch = getattr(module, str(first.annotation), None)
        assert isinstance(launch, type) and issubclass(launch, Launch), (
            f"{path}.{function.__name__} takes {first.name}: {first.annotation}, not a Launch of its module"
        )
        assert dataclasses.is_dataclass(launch) and launch.__dataclass_params__.frozen, launch.__name__
        # Only how to run it may come apart from the object (enqueue: the caller replays itself).
        assert [(p.name, p.kind) for p in rest] in ([], [("enqueue", inspect.Parameter.KEYWORD_ONLY)]), (
            f"{function.__name__} takes {[p.name for p in rest]} besides its {launch.__name__}"
        )
