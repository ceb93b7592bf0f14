"""A policy's calendar is bounded (MAX_CHANGES, refused naming the limit through the API, the Kueue
annotation import and the policy page's form) and the policy page shows its first rows and a count,
never every row."""

from __future__ import annotations

import html
import json

import pytest
from django.test import Client

from planner.capacity.models import CalendarChange, ChangeSpec, Policy
from planner.capacity.views.context import CALENDAR_ROWS_SHOWN
from scheduling.export.kueue import ANNOTATION_CHANGES
from scheduling.model import MAX_CHANGES
from tests.service.conftest import AWS_TYPE, make_user

pytestmark = pytest.mark.django_db

LIMIT_MESSAGE = f"{MAX_CHANGES + 1:,} changes: a policy's calendar holds at most {MAX_CHANGES:,}"


def pool_changes(n: int) -> list[dict]:
    # The pool goes 3, 4, 3, 4 ... instances, one change a minute: valid at every instant.
    return [{"time": 60 * i, "capacity": {AWS_TYPE: 3 + i % 2}} for i in range(n)]


def store_calendar(policy: Policy, n: int) -> None:
    policy.replace_changes([ChangeSpec(60.0 * i, None, AWS_TYPE, 3 + i % 2) for i in range(n)])


def test_the_api_refuses_a_calendar_past_the_limit_naming_it(admin_api, aws_policy):
    response = admin_api.patch(
        f"/api/policies/{aws_policy.pk}/", {"changes": pool_changes(MAX_CHANGES + 1)}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == {"changes": [LIMIT_MESSAGE]}
    assert not CalendarChange.objects.filter(policy=aws_policy).exists()


def test_the_api_takes_a_calendar_at_the_limit_and_gives_it_back(admin_api, aws_policy):
    response = admin_api.patch(
        f"/api/policies/{aws_policy.pk}/", {"changes": pool_changes(MAX_CHANGES)}, format="json"
    )
    assert response.status_code == 200, response.content[:300]
    assert CalendarChange.objects.filter(policy=aws_policy).count() == MAX_CHANGES
    back = admin_api.get(f"/api/policies/{aws_policy.pk}/").json()["changes"]
    assert len(back) == MAX_CHANGES and back[1] == {"time": 60.0, "capacity": {AWS_TYPE: 4}}


def test_two_api_changes_setting_one_target_and_type_at_one_instant_are_refused(admin_api, aws_policy):
    changes = [
        {"time": 100, "share": "QS1", "capacity": {AWS_TYPE: 2}},
        {"time": 100, "share": "QS1", "capacity": {AWS_TYPE: 1}},
    ]
    response = admin_api.patch(f"/api/policies/{aws_policy.pk}/", {"changes": changes}, format="json")
    assert response.status_code == 400
    assert "changes[0] already sets ml.g5.xlarge of share QS1 at 100 s" in json.dumps(response.json())


def test_a_kueue_import_with_a_calendar_past_the_limit_is_a_400(admin_api, aws_policy):
    text = admin_api.get(f"/api/policies/{aws_policy.pk}/export/kueue/").content.decode()
    changes = json.dumps(pool_changes(MAX_CHANGES + 1), separators=(",", ":"))
    # The Cohort's annotations are the first mapping after its metadata name.
    text = text.replace("  annotations:\n", f"  annotations:\n    {ANNOTATION_CHANGES}: '{changes}'\n", 1)
    response = admin_api.post(
        "/api/policy-imports/", {"format": "kueue", "pool": "big", "name": "big", "yaml": text}, format="json"
    )
    assert response.status_code == 400
    assert LIMIT_MESSAGE in json.dumps(response.json())
    assert not Policy.objects.filter(name="big").exists()


def page_client(role: str) -> Client:
    client = Client()
    client.force_login(make_user(f"page-{role}", role))
    return client


@pytest.mark.parametrize("role", ["viewer", "admin"])
def test_the_policy_page_shows_the_first_rows_and_counts_the_rest(role, aws_policy):
    store_calendar(aws_policy, 3 * CALENDAR_ROWS_SHOWN)
    page = page_client(role).get(f"/policies/{aws_policy.pk}/")
    assert page.status_code == 200
    text = page.content.decode()
    assert text.count('<tr id="change-') == CALENDAR_ROWS_SHOWN
    assert "300 dated changes" in text
    assert f"The first {CALENDAR_ROWS_SHOWN} of 300 rows are shown; the other 200" in text


def test_a_row_past_the_shown_ones_opens_for_editing(aws_policy):
    store_calendar(aws_policy, CALENDAR_ROWS_SHOWN + 5)
    last = CalendarChange.objects.filter(policy=aws_policy).order_by("-time").first()
    page = page_client("admin").get(f"/policies/{aws_policy.pk}/?edit=change-{last.pk}")
    assert page.status_code == 200
    assert f'<tr class="editing" id="change-{last.pk}">' in page.content.decode()


def test_the_page_form_refuses_a_change_past_the_limit(aws_policy):
    store_calendar(aws_policy, MAX_CHANGES)
    page = page_client("admin").post(
        f"/policies/{aws_policy.pk}/",
        {
            "action": "add-change",
            "change-time": str(60 * MAX_CHANGES),
            "change-target": "",
            "change-instance_type": AWS_TYPE,
            "change-count": "3",
        },
    )
    assert page.status_code == 400
    assert LIMIT_MESSAGE in html.unescape(page.content.decode())
    assert CalendarChange.objects.filter(policy=aws_policy).count() == MAX_CHANGES


def test_the_django_admin_links_a_long_calendar_to_the_policy_page(aws_policy):
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.com", "pw"))
    store_calendar(aws_policy, 3)
    short = client.get(f"/admin/capacity/policy/{aws_policy.pk}/change/").content.decode()
    assert 'name="changes-2-time"' in short  # a short calendar is edited in place
    store_calendar(aws_policy, 300)
    response = client.get(f"/admin/capacity/policy/{aws_policy.pk}/change/")
    assert response.status_code == 200
    text = response.content.decode()
    assert 'name="changes-0-time"' not in text
    assert "300 dated changes: more than 200 are edited on" in text
    assert f'href="/policies/{aws_policy.pk}/#calendar"' in text
