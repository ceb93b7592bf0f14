"""The site's colours and where a name starts looking for one: below ``planner.web.palette`` (which
assigns them to shares) and ``planner.web.charts`` (which draws with them)."""

from __future__ import annotations

import hashlib

# Paul Tol's "bright" scheme (grey left out: it is for idle and unassigned capacity), with
# indigo, teal and olive from "muted" and orange from "vibrant": told apart with the common
# forms of colour blindness, and readable on white.
PALETTE = (
    "#4477AA",  # blue
    "#EE6677",  # red
    "#228833",  # green
    "#CCBB44",  # yellow
    "#66CCEE",  # cyan
    "#AA3377",  # purple
    "#332288",  # indigo
    "#44AA99",  # teal
    "#999933",  # olive
    "#EE7733",  # orange
)


def name_slot(name: str) -> int:
    """The palette slot a name prefers (a stable hash): where ``palette`` starts looking."""
    digest = hashlib.blake2s(name.encode("utf-8"), digest_size=4).digest()
    return int.from_bytes(digest, "big") % len(PALETTE)
