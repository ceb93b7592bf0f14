"""The policy page's tree of cohorts in Chromium: an admin builds a two-level tree in the editor
(two cohorts, a share moved into each), the rows are indented by level; a viewer sees the same tree
with nothing to edit."""

import pytest

from tests.pages.conftest import GPU_TYPE, look_at

pytestmark = pytest.mark.django_db


def add_cohort(page, name: str, parent: str, quota: str) -> None:
    page.get_by_role("link", name="Add a cohort").click()
    row = page.locator("#new-cohort-row")
    row.get_by_label("Name of the new cohort").fill(name)
    row.get_by_label("Parent").select_option(label=parent)
    row.get_by_label(f"Own quota, {GPU_TYPE}").fill(quota)
    row.get_by_role("button", name="Add").click()
    page.wait_for_url("**#shares")


def move_share(page, share: str, cohort: str) -> None:
    page.get_by_role("link", name=f"Edit share {share}").click()
    row = page.locator("#shares-table tr.editing")
    row.get_by_label("Cohort", exact=True).select_option(label=f"cohort {cohort}")
    row.get_by_role("button", name="Save").click()
    page.wait_for_url("**#shares")


def tree_of(page) -> list[tuple[str, float]]:
    """Each row's name cell (without the text only screen readers get) and its left padding."""
    return page.locator("#shares-table tbody tr[data-level] > th").evaluate_all(
        """cells => cells.map(c => [
            Array.from(c.childNodes).filter(n => !(n.classList && (n.classList.contains('visually-hidden')
                                                            || n.classList.contains('flavors'))))
              .map(n => n.textContent).join('').trim(),
            parseFloat(getComputedStyle(c).paddingLeft)])"""
    )


def test_an_admin_builds_a_two_level_tree_and_a_viewer_reads_it(page_as, small_policy):
    page = page_as("admin")
    page.goto(f"/policies/{small_policy.pk}/")
    add_cohort(page, "research", "the root", "1")
    add_cohort(page, "vision", "cohort research", "0")
    move_share(page, "train", "vision")
    move_share(page, "infer", "research")

    rows = tree_of(page)
    assert [name for name, _ in rows] == ["Cohort research", "infer", "Cohort vision", "train"]
    indents = [left for _, left in rows]
    assert indents[0] < indents[1] == indents[2] < indents[3]  # levels 0, 1, 1, 2
    vision = page.locator(f"#cohort-{small_policy.cohorts.get(name='vision').pk}")
    assert vision.locator("td").first.inner_text() == "0"  # its own quota
    assert vision.locator("td").nth(2).inner_text() == "unlimited"  # what its subtree may borrow
    look_at(page, "policy-tree-admin")

    # A cycle is refused under the field that makes it, in the validator's words.
    page.get_by_role("link", name="Edit cohort research").click()
    row = page.locator("#shares-table tr.editing")
    row.get_by_label("Parent").select_option(label="cohort vision")
    row.get_by_role("button", name="Save").click()
    error = page.locator("#shares-table tr.editing .errorlist")
    assert error.inner_text() == "a cycle (research -> vision -> research)"
    look_at(page, "policy-tree-error")

    viewer = page_as("viewer")
    viewer.goto(f"/policies/{small_policy.pk}/")
    assert [name for name, _ in tree_of(viewer)] == ["Cohort research", "infer", "Cohort vision", "train"]
    assert viewer.get_by_role("link", name="Add a cohort").count() == 0
    assert viewer.locator("#shares-table input, #shares-table select, #shares-table button").count() == 0
    look_at(viewer, "policy-tree-viewer")


def test_an_admin_edits_a_shares_flavor_order_and_fallback(page_as, db):
    from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec

    for name in ("a100", "h100"):
        InstanceType.objects.get_or_create(name=name, defaults={"gpus": 8, "hourly_price": 0})
    pool = Pool.objects.create(name="two-types")
    pool.set_capacity({"a100": 2, "h100": 2})
    policy = Policy.objects.create(name="two-types", pool=pool)
    policy.replace_shares([ShareSpec("prod", capacity={"a100": 1, "h100": 1}), ShareSpec("dev")])

    page = page_as("admin")
    page.goto(f"/policies/{policy.pk}/")
    page.get_by_role("link", name="Edit share prod").click()
    row = page.locator("#shares-table tr.editing")
    row.get_by_label("Types in order").fill("h100, a100")
    row.get_by_label("When it could borrow").select_option("TryNextFlavor")
    row.get_by_label("When it could preempt").select_option("MayStopSearch")
    row.get_by_label("Else prefer").select_option("PreemptionOverBorrowing")
    row.get_by_role("button", name="Save").click()
    # PreemptionOverBorrowing needs both TryNextFlavor: said under the preference, nothing stored
    error = page.locator("#shares-table tr.editing .errorlist")
    assert error.inner_text() == (
        "PreemptionOverBorrowing needs when_can_borrow and when_can_preempt both TryNextFlavor"
    )
    look_at(page, "policy-flavors-error")
    row = page.locator("#shares-table tr.editing")
    row.get_by_label("Else prefer").select_option("BorrowingOverPreemption")
    row.get_by_role("button", name="Save").click()
    page.wait_for_url("**#shares")
    shown = page.locator(f"#share-{policy.shares.get(name='prod').pk} .flavors").inner_text()
    assert shown == "h100 → a100; could borrow: TryNextFlavor, could preempt: MayStopSearch"
    assert policy.engine_policy().types_in_order("prod") == ["h100", "a100"]
