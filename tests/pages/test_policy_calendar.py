"""The policy page's calendar of dated changes (SEMANTICS.md section 9) and its training-plan
helper: rows added, edited and deleted in place, each checked by the engine's validator with the
whole calendar, the error next to the row that caused it; then the same in Chromium."""

import pytest

from planner.capacity.models import ChangeSpec
from tests.pages.conftest import GPU_TYPE, look_at

pytestmark = pytest.mark.django_db


def change_post(action: str, *, time, target: str = "", count, change=None) -> dict:
    data = {
        "action": action,
        "change-time": time,
        "change-target": target,
        "change-instance_type": GPU_TYPE,
        "change-count": count,
    }
    if change is not None:
        data["change"] = change.pk
    return data


def plan_post(**fields) -> dict:
    data = {"instance_type": GPU_TYPE, "instances": 2, "share": "infer", "start": "3600", "end": "7200"}
    data.update(fields)
    return {"action": "add-training-plan", **{f"plan-{key}": value for key, value in data.items()}}


def rows_of(policy) -> list[tuple]:
    return [(c.time, c.share.name if c.share else None, c.count) for c in policy.changes.all()]


def test_an_admin_adds_a_change_of_the_pool(client_as, small_policy):
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", change_post("add-change", time="2024-05-01T09:00:00Z", count=6)
    )
    assert response.status_code == 302
    assert rows_of(small_policy) == [(1714554000, None, 6)]  # the ISO time as Unix seconds


def test_a_pool_too_small_for_the_quotas_is_refused_on_its_row(client_as, small_policy):
    # quotas 2 + 1 = 3: a pool of 2 from t=600 cannot hold them
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", change_post("add-change", time=600, count=2)
    )
    assert response.status_code == 400
    assert response.context["change_form"].non_field_errors() == [
        f"change at 600 s, the pool, {GPU_TYPE}: "
        f"at 600 s share quotas of {GPU_TYPE} add up to 3, more than the pool's 2"
    ]
    assert rows_of(small_policy) == []  # nothing stored


def test_a_bad_time_or_count_is_named_on_its_field(client_as, small_policy):
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", change_post("add-change", time="next week", count=1.5)
    )
    form = response.context["change_form"]
    assert "neither seconds nor an ISO-8601 timestamp" in form.errors["time"][0]
    assert form.errors["count"] == ["1.5 is not a whole number of instances (0 or more)"]


def test_a_second_row_for_the_same_instant_and_type_is_refused(client_as, small_policy):
    small_policy.replace_changes([ChangeSpec(600, None, GPU_TYPE, 6)])
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", change_post("add-change", time=600, count=5)
    )
    assert response.status_code == 400
    assert (
        "the pool already has ml.g5.xlarge set at this time"
        in response.context["change_form"].non_field_errors()[0]
    )


def test_editing_a_row_that_another_row_depends_on_puts_the_error_on_that_row(client_as, small_policy):
    # pool 6 from t=600, infer's quota 4 from t=1200 (2 + 4 <= 6); lowering the pool to 5 breaks
    # infer's row, not the one edited: the error is shown under infer's row
    small_policy.replace_changes([ChangeSpec(600, None, GPU_TYPE, 6), ChangeSpec(1200, "infer", GPU_TYPE, 4)])
    pool_row, infer_row = small_policy.changes.all()
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", change_post("save-change", time=600, count=5, change=pool_row)
    )
    assert response.status_code == 400
    rows = {row["change"].pk: row for row in response.context["calendar_rows"]}
    assert rows[infer_row.pk]["errors"] == [
        f"change at 1,200 s, share infer, {GPU_TYPE}: at 1200 s share quotas of {GPU_TYPE} add up to 6, "
        "more than the pool's 5"
    ]
    assert response.context["change_form"].non_field_errors() == [
        "another change is no longer valid with this one: see the message under it"
    ]
    assert rows_of(small_policy) == [(600, None, 6), (1200, "infer", 4)]


def test_deleting_a_row_others_need_is_refused(client_as, small_policy):
    small_policy.replace_changes([ChangeSpec(600, None, GPU_TYPE, 6), ChangeSpec(1200, "infer", GPU_TYPE, 4)])
    pool_row, infer_row = small_policy.changes.all()
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", {"action": "delete-change", "change": pool_row.pk}
    )
    assert response.status_code == 400  # infer's 4 + train's 2 do not fit the pool's 4
    assert response.context["calendar_rows"][1]["errors"]
    assert (
        client_as("admin")
        .post(f"/policies/{small_policy.pk}/", {"action": "delete-change", "change": infer_row.pk})
        .status_code
        == 302
    )
    assert rows_of(small_policy) == [(600, None, 6)]


def test_a_training_plan_writes_four_rows(client_as, small_policy):
    response = client_as("admin").post(f"/policies/{small_policy.pk}/", plan_post())
    assert response.status_code == 302
    # pool 4 -> 6 and infer 1 -> 3 from 3600, both back at 7200
    assert rows_of(small_policy) == [(3600, None, 6), (3600, "infer", 3), (7200, None, 4), (7200, "infer", 1)]


def test_a_training_plan_that_ends_before_it_starts_is_refused_on_end(client_as, small_policy):
    response = client_as("admin").post(f"/policies/{small_policy.pk}/", plan_post(end="1800"))
    assert response.status_code == 400
    assert response.context["plan_form"].errors["end"] == ["the plan must end after it starts"]
    assert rows_of(small_policy) == []


def test_a_viewer_sees_the_calendar_without_controls(client_as, small_policy):
    small_policy.replace_changes([ChangeSpec(600, None, GPU_TYPE, 6)])
    html = client_as("viewer").get(f"/policies/{small_policy.pk}/").content.decode()
    assert 'id="calendar-table"' in html and "600 s" in html
    assert "Add a training plan" not in html and "delete-change" not in html
    assert client_as("viewer").post(f"/policies/{small_policy.pk}/", plan_post()).status_code == 403


def test_the_calendar_in_chromium(page_as, small_policy):
    page = page_as("admin")
    page.goto(f"/policies/{small_policy.pk}/")
    # the training plan: 2 more instances for infer from 1 h to 2 h
    plan = page.locator("#training-plan")
    plan.get_by_label("Instance type").select_option(GPU_TYPE)
    plan.get_by_label("Instances reserved").fill("2")
    plan.get_by_label("For share").select_option("infer")
    plan.get_by_label("From (seconds or ISO-8601)").fill("3600")
    plan.get_by_label("To (seconds or ISO-8601)").fill("7200")
    plan.get_by_role("button", name="Add the training plan").click()
    page.wait_for_url("**#calendar")
    table = page.locator("#calendar-table tbody")
    assert table.locator("tr").count() == 4
    assert table.locator("tr").nth(1).inner_text().split("\t")[:4] == [
        "3,600 s",
        "share infer",
        GPU_TYPE,
        "3",
    ]
    look_at(page, "policy-calendar", chart="#calendar-chart")

    # an edit that breaks the policy: the pool at 2 from 3600 (quotas are then 2 + 3), said
    # under the row edited
    page.get_by_role("link", name="Edit change at 3,600 s").first.click()
    row = page.locator("#calendar-table tr.editing")
    row.get_by_label("Instances from then on").fill("2")
    row.get_by_role("button", name="Save").click()
    error = page.locator("#calendar-table .row-errors .errorlist")
    assert "add up to 5, more than the pool's 2" in error.inner_text()
    look_at(page, "policy-calendar-error")

    # a new row: the pool grows to 8 at 2024-05-01 09:00 UTC
    page.goto(f"/policies/{small_policy.pk}/")
    page.get_by_role("link", name="Add a dated change").click()
    row = page.locator("#new-change-row")
    row.get_by_label("From (seconds or ISO-8601)").fill("2024-05-01T09:00:00Z")
    row.get_by_label("Applies to").select_option("")
    row.get_by_label("Instances from then on").fill("8")
    row.get_by_role("button", name="Add").click()
    page.wait_for_url("**#calendar")
    assert "2024-05-01 09:00 UTC" in page.locator("#calendar-table").inner_text()

    # and delete it again
    page.once("dialog", lambda dialog: dialog.accept())
    page.get_by_role("button", name="Delete change at 2024-05-01 09:00 UTC").click()
    page.wait_for_url("**#calendar")
    assert "2024-05-01" not in page.locator("#calendar-table").inner_text()
    assert len(rows_of(small_policy)) == 4
