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
            Array.from(c.childNodes).filter(n => !(n.classList && n.classList.contains('visually-hidden')))
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
