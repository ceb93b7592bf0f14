"""The top bar's menu: every feature of the planner in three groups (Plan, Data, Reports) between
Overview and API, each item shown only to the roles that may open it. Built here rather than in
the template so that one table says what is where and who sees it, and so that a feature whose
app is not installed (its URL does not resolve) simply has no item.

The template (``templates/base.html``) draws each group as a ``<details>`` dropdown: no script
needed to open it, keyboard reachable (Tab to the summary, Enter or Space to open), and the
narrow-screen layout wraps instead of scrolling sideways.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest
from django.urls import NoReverseMatch, Resolver404, resolve, reverse

from planner.accounts.permissions import can_edit, can_read, can_read_finance


@dataclass(frozen=True)
class Entry:
    """One line of the menu: the route it opens (a URL name, or a path starting with ``/`` for an
    app this one does not import), who may see it, and which pages it is 'current' for
    (``namespace:url_name`` patterns, a trailing ``*`` for a whole namespace, or path prefixes)."""

    label: str
    route: str
    may: Callable
    current_for: tuple[str, ...]
    hint: str = ""


@dataclass(frozen=True)
class Item:
    label: str
    url: str
    current: bool
    hint: str


@dataclass(frozen=True)
class Group:
    label: str
    items: tuple[Item, ...]

    @property
    def current(self) -> bool:
        return any(item.current for item in self.items)


# label, entries: the order a reader meets them. An item whose route does not resolve (an app
# not installed) is left out.
GROUPS: tuple[tuple[str, tuple[Entry, ...]], ...] = (
    (
        "Plan",
        (
            Entry("Policies", "web:policies", can_read, ("web:policies", "web:policy"), "shares and quotas"),
            Entry(
                "Studies",
                "web:studies",
                can_read,
                ("web:studies", "web:study-new", "reports:study"),
                "a trace replayed under several policies",
            ),  # fmt: skip
            Entry("Advisor", "advisor:list", can_read, ("advisor:*",), "sweeps of policy knobs"),
            Entry(
                "Capacity curves", "curves:list", can_read, ("curves:*",), "how much capacity a goal needs"
            ),  # fmt: skip
            Entry("Forecasts", "forecasts:list", can_read, ("forecasts:*",), "when will my job start"),
        ),
    ),
    (
        "Data",
        (
            Entry(
                "Traces",
                "web:traces",
                can_read,
                ("web:traces", "web:trace", "web:trace-upload"),
                "job histories to replay",
            ),  # fmt: skip
            Entry(
                "Bring your scheduler",
                "web:byos",
                can_edit,
                ("web:byos",),
                "AWS Batch or Kueue exports in, a decision out",
            ),  # fmt: skip
            Entry(
                "Calibration", "calibration:list", can_read, ("calibration:*",), "simulated against recorded"
            ),  # fmt: skip
            Entry("Semantics", "web:semantics", can_read, ("web:semantics",), "what a replay means"),
        ),
    ),
    (
        "Reports",
        (
            Entry(
                "Find a job",
                "web:find-job",
                can_read,
                ("web:find-job", "reports:study-jobs", "reports:study-why"),
                "why did my job wait",
            ),  # fmt: skip
            Entry("Commons", "commons:report", can_read, ("commons:*",), "who lends, who hoards"),
            Entry(
                "Finance",
                "reports:finance",
                can_read_finance,
                ("reports:finance",),
                "cost, idle and stranded $",
            ),  # fmt: skip
        ),
    ),
)


def _url(route: str) -> str | None:
    """The item's URL, or None when nothing answers there (the app is not installed)."""
    if route.startswith("/"):
        try:
            resolve(route)
        except Resolver404:
            return None
        return route
    try:
        return reverse(route)
    except NoReverseMatch:
        return None


def _is_current(patterns: tuple[str, ...], namespace: str, name: str, path: str) -> bool:
    for pattern in patterns:
        if pattern.startswith("/"):
            if path.startswith(pattern):
                return True
            continue
        want_ns, _, want_name = pattern.partition(":")
        if want_ns == namespace and (want_name == "*" or want_name == name):
            return True
    return False


def menu_for(user, namespace: str = "", url_name: str = "", path: str = "") -> tuple[Group, ...]:
    """The groups this user sees (a group with no item it may open is left out)."""
    if not getattr(user, "is_authenticated", False) or not can_read(user):
        return ()
    groups = []
    for label, entries in GROUPS:
        items = []
        for entry in entries:
            if not entry.may(user):
                continue
            url = _url(entry.route)
            if url is None:
                continue
            current = _is_current(entry.current_for, namespace, url_name, path)
            items.append(Item(entry.label, url, current, entry.hint))
        if items:
            groups.append(Group(label, tuple(items)))
    return tuple(groups)


def _in_study(groups: tuple[Group, ...], study_id: int) -> tuple[Group, ...]:
    """On a study's pages, "Find a job" searches that study (not the newest one)."""
    url = reverse("reports:study-jobs", args=[study_id])
    find = reverse("web:find-job")
    return tuple(
        Group(g.label, tuple(Item(i.label, url, i.current, i.hint) if i.url == find else i for i in g.items))
        for g in groups
    )


def menu(request: HttpRequest) -> dict:
    """Context processor: ``menu`` (the groups) for the top bar of every page."""
    match = getattr(request, "resolver_match", None)
    namespace = (match.namespace or "") if match else ""
    url_name = (match.url_name or "") if match else ""
    user = getattr(request, "user", None)
    groups = menu_for(user, namespace, url_name, getattr(request, "path", ""))
    on_study = match is not None and namespace == "reports" and url_name.startswith("study")
    study = match.kwargs.get("pk") if on_study else None
    return {"menu": _in_study(groups, int(study)) if groups and study is not None else groups}
