"""Ids in query strings: "²" (a digit to ``str.isdigit()``, not to ``int()``), "٣" (an Arabic
digit ``int()`` reads), a 20-digit id (past SQLite's and PostgreSQL's integers) and a negative one
are ignored on every page that reads an id from its URL, for every role: a 200, never a 500."""

from __future__ import annotations

import pytest

from planner.web.query import parse_id, parse_ids

HOSTILE = ["²", "٣", "99999999999999999999", "-1", "0", "1e3", " ", "1\x00"]
PAGES = [
    "/policies/?pool={}",
    "/curves/?trace={}",
    "/curves/?policies={}",
    "/curves/?policy_a={}&policy_b={}",
    "/studies/new/?trace={}",
    "/studies/new/?policy={}",
    "/byos/?policy={}",
    "/byos/?policy={}&trace={}",
    "/finance/?study={}",
]


@pytest.mark.parametrize("role", ["viewer", "admin"])
@pytest.mark.parametrize("value", HOSTILE)
def test_a_hostile_id_in_the_query_string_is_ignored(world, role, value):
    client = world.session(role)
    for page in PAGES:
        url = page.format(value, value)
        response = client.get(url)
        if role == "viewer" and page.startswith(("/studies/new/", "/finance/", "/byos/")):
            assert response.status_code in (200, 403), (url, response.status_code)
        else:
            assert response.status_code == 200, (url, response.status_code)


def test_the_policy_list_filters_by_a_real_pool_id(world):
    page = world.session("viewer").get(f"/policies/?pool={world.pool.pk}").content.decode()
    assert world.policy.name in page
    page = world.session("viewer").get(f"/policies/?pool={world.pool.pk + 1}").content.decode()
    assert world.policy.name not in page


@pytest.mark.parametrize(
    ("value", "expected"),
    [("12", 12), (" 7 ", 7), (7, 7), ("²", None), ("٣", None), ("-1", None), ("0", None), (0, None),
     (True, None), ("9223372036854775807", 2**63 - 1), ("9223372036854775808", None), (None, None),
     ("", None), ("0x1", None), ("1_000", None)],
)  # fmt: skip
def test_an_id_is_ascii_digits_within_the_id_range(value, expected):
    assert parse_id(value) == expected


def test_ids_keep_the_good_ones_in_order():
    assert parse_ids(["3", "²", "1", "99999999999999999999"]) == [3, 1]
