"""One colour per share on every page and every chart: the site's palette.

A colour derived from the name alone (a hash into ten colours) gives two of ten shares the same
colour almost surely, and colouring each chart's own set (``charts.share_colors``) gives one share
different colours on different pages. So the colours are assigned once for the whole site: every
policy's shares and every trace's shares are a group of names that may be drawn together, and
the names are coloured greedily (each takes its name's hash colour unless a share it appears with
already has it, then the next colour none of them has), in the order they first appeared (the
policies by id, then the traces by id), so a new policy or trace does not recolour older shares
unless it puts two of them together.

``share_color(name)`` and ``share_colors(names)`` are what every page, template (the
``share_color`` filter) and Plotly figure ask. A name the site does not know (a figure of data not
stored) gets a colour none of the other names asked with it has.

The assignment is read from the database at most once per request and once per few seconds
outside requests (two small queries: the shares' names and the traces' share lists), and kept
while they do not change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from functools import lru_cache

from django.core.signals import request_started
from django.db.models.signals import post_delete, post_save

from planner.web.colours import PALETTE, name_slot

RECHECK_SECONDS = 5.0  # outside requests (workers, shells), how long an assignment is trusted

_lock = threading.Lock()
_state: dict = {"groups": None, "colors": None, "checked": 0.0}


@lru_cache(maxsize=8)
def assign(groups: tuple[tuple[str, ...], ...]) -> dict[str, str]:
    """Colour the names of ``groups`` (in the order given) so that names of one group differ
    while the palette lasts. Pure: the same groups always give the same colours."""
    neighbours: dict[str, set[str]] = {}
    order: list[str] = []
    for group in groups:
        for name in group:
            if name not in neighbours:
                neighbours[name] = set()
                order.append(name)
            neighbours[name].update(other for other in group if other != name)
    slots: dict[str, int] = {}
    for name in order:
        taken = {slots[other] for other in neighbours[name] if other in slots}
        slots[name] = _free_slot(name, taken)
    return {name: PALETTE[slot] for name, slot in slots.items()}


def _free_slot(name: str, taken: set[int]) -> int:
    slot = name_slot(name)
    if len(taken) >= len(PALETTE):
        return slot  # more neighbours than colours: the name's own colour, shared
    while slot in taken:
        slot = (slot + 1) % len(PALETTE)
    return slot


def _read_groups() -> tuple[tuple[str, ...], ...]:
    from planner.capacity.models import Share
    from planner.traces.models import Trace

    by_policy: dict[int, list[str]] = {}
    for policy_id, name in Share.objects.order_by("policy_id", "name").values_list("policy_id", "name"):
        by_policy.setdefault(policy_id, []).append(name)
    groups = [tuple(names) for _, names in sorted(by_policy.items())]
    for shares in Trace.objects.ready().order_by("id").values_list("summary__shares", flat=True):
        names = sorted({str(row["name"]) for row in shares or [] if isinstance(row, dict) and "name" in row})
        if names:
            groups.append(tuple(names))
    return tuple(groups)


def site_groups() -> tuple[tuple[str, ...], ...]:
    """The groups of names the site knows, re-read when the last read is stale."""
    return _known()[0]


def _known() -> tuple[tuple[tuple[str, ...], ...], dict[str, str]]:
    """The site's groups and their colours, read again when forgotten or stale. The state is read
    once, into locals: another thread's request may forget it meanwhile (``forget`` takes no lock),
    and returning ``_state`` afterwards gave None (a 500 under load)."""
    with _lock:
        known = _state["groups"], _state["colors"]
        if known[0] is None or known[1] is None or time.monotonic() - _state["checked"] > RECHECK_SECONDS:
            groups = _read_groups()
            known = groups, assign(groups)
            _state["groups"], _state["colors"] = known
            _state["checked"] = time.monotonic()
        return known


def forget(*args, **kwargs) -> None:
    """Read the groups again at the next question (a request began, or shares/traces changed)."""
    _state["groups"] = None


def share_colors(names: Iterable[str]) -> dict[str, str]:
    """The site's colour of each name; names it does not know get colours the others lack."""
    wanted = sorted({str(name) for name in names})
    known = _known()[1]  # assigned once per read of the groups, not once per name coloured
    colors = {name: known[name] for name in wanted if name in known}
    unknown = [name for name in wanted if name not in known]
    if unknown:
        taken = {PALETTE.index(color) for color in colors.values() if color in PALETTE}
        for name in unknown:
            slot = _free_slot(name, taken)
            taken.add(slot)
            colors[name] = PALETTE[slot]
    return colors


def share_color(name: str, siblings: Sequence[str] = ()) -> str:
    """The site's colour of one share (``siblings``: the other names drawn beside an unknown one)."""
    return share_colors([name, *siblings])[str(name)]


def connect() -> None:
    """Hooked up by the web app's ready(): forget the assignment when what it is made of changes."""
    from planner.capacity.models import Share
    from planner.traces.models import Trace

    request_started.connect(forget, dispatch_uid="planner-palette-request")
    for model in (Share, Trace):
        post_save.connect(forget, sender=model, dispatch_uid=f"planner-palette-save-{model.__name__}")
        post_delete.connect(forget, sender=model, dispatch_uid=f"planner-palette-delete-{model.__name__}")
