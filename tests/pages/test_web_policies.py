"""The shares editor through the Django test client: edits are checked by the engine's validator
and its message lands next to the field; presets and duplicates make variants."""

import pytest

from planner.capacity.models import Policy
from tests.pages.conftest import GPU_TYPE

pytestmark = pytest.mark.django_db


def share_post(policy, share, **changes) -> dict:
    """The form of the shares table for ``share`` as stored, with ``changes`` (form field names)."""
    spec = share.spec()
    data = {
        "action": "save-share",
        "share": share.pk,
        "share-name": spec.name,
        "share-strategy": spec.strategy,
        "share-borrow_limit_percent": "" if spec.borrow_limit_percent is None else spec.borrow_limit_percent,
        "share-in_share_preemption": spec.in_share_preemption,
        "share-reclaim": spec.reclaim,
        "share-quota_0": spec.capacity.get(GPU_TYPE, 0),
        "share-borrowing_0": "",
        "share-lending_0": "",
    }
    data.update({f"share-{key}": value for key, value in changes.items()})
    return data


def test_quotas_beyond_the_pool_are_refused_next_to_the_quota(client_as, small_policy):
    train = small_policy.shares.get(name="train")
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", share_post(small_policy, train, quota_0=4)
    )
    assert response.status_code == 400
    form = response.context["share_form"]
    # 4 + 1 on a pool of 4: the engine's message, on the quota field of that type
    assert form.errors["quota_0"] == [f"share quotas of {GPU_TYPE} add up to 5, more than the pool's 4"]
    assert train.spec().capacity == {GPU_TYPE: 2}  # nothing stored


def test_a_negative_quota_is_named_by_the_engine(client_as, small_policy):
    infer = small_policy.shares.get(name="infer")
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", share_post(small_policy, infer, quota_0=-1)
    )
    assert response.status_code == 400
    assert response.context["share_form"].errors["quota_0"] == ["-1 is below the minimum 0"]


def test_a_borrow_limit_on_a_share_that_does_not_borrow_is_refused(client_as, small_policy):
    infer = small_policy.shares.get(name="infer")
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", share_post(small_policy, infer, borrow_limit_percent=50)
    )
    assert response.context["share_form"].errors["borrow_limit_percent"] == [
        "a borrow limit only applies to LEND_AND_BORROW, not LEND"
    ]


def test_a_valid_edit_is_stored_with_absolute_limits(client_as, small_policy):
    train = small_policy.shares.get(name="train")
    data = share_post(small_policy, train, quota_0=3, borrow_limit_percent="", borrowing_0=1, lending_0=2)
    response = client_as("admin").post(f"/policies/{small_policy.pk}/", data)
    assert response.status_code == 302
    spec = small_policy.shares.get(name="train").spec()
    assert spec.capacity == {GPU_TYPE: 3}
    assert spec.borrowing_limit == {GPU_TYPE: 1} and spec.lending_limit == {GPU_TYPE: 2}
    assert spec.borrow_limit_percent is None


def test_adding_a_share_with_a_taken_name_is_refused_on_the_name(client_as, small_policy):
    data = share_post(small_policy, small_policy.shares.get(name="infer"), quota_0=0)
    data["action"] = "add-share"
    response = client_as("admin").post(f"/policies/{small_policy.pk}/", data)
    assert response.context["share_form"].errors["name"] == ["duplicate share name 'infer'"]
    data["share-name"] = "eval"
    assert client_as("admin").post(f"/policies/{small_policy.pk}/", data).status_code == 302
    assert list(small_policy.shares.values_list("name", flat=True)) == ["train", "infer", "eval"]


def test_pool_capacity_below_the_quotas_is_refused_on_its_cell(client_as, small_policy):
    response = client_as("admin").post(
        f"/policies/{small_policy.pk}/", {"action": "save-capacity", "capacity-count_0": 2}
    )
    assert response.status_code == 400
    message = response.context["capacity_form"].errors["count_0"][0]
    assert "add up to 3, more than the pool's 2" in message
    assert small_policy.pool.capacity_dict() == {GPU_TYPE: 4}


def test_presets_make_variants_in_one_click(client_as, small_policy):
    admin = client_as("admin")
    expected = {
        "static-split": {"train": ("RESERVE", None), "infer": ("RESERVE", None)},
        "full-pooling": {"train": ("LEND_AND_BORROW", None), "infer": ("LEND_AND_BORROW", None)},
        "as-configured": {"train": ("LEND_AND_BORROW", 100), "infer": ("LEND", None)},
    }
    for key, shares in expected.items():
        response = admin.post(f"/policies/{small_policy.pk}/preset/", {"preset": key})
        assert response.status_code == 302, key
        variant = Policy.objects.get(pk=int(response["Location"].split("/")[2]))
        assert variant.parent_id == small_policy.pk
        got = {s.name: (s.strategy, s.borrow_limit_percent) for s in variant.shares.all()}
        assert got == shares, key
    off = admin.post(f"/policies/{small_policy.pk}/preset/", {"preset": "preemption-off"})
    variant = Policy.objects.get(pk=int(off["Location"].split("/")[2]))
    assert {(s.in_share_preemption, s.reclaim) for s in variant.shares.all()} == {("never", "never")}
    assert variant.name == "lab-policy (preemption off)"
    again = admin.post(f"/policies/{small_policy.pk}/preset/", {"preset": "preemption-off"})
    assert Policy.objects.get(pk=int(again["Location"].split("/")[2])).name == "lab-policy (preemption off) 2"


def test_duplicate_as_variant_needs_a_free_name(client_as, small_policy):
    admin = client_as("admin")
    taken = admin.post(f"/policies/{small_policy.pk}/duplicate/", {"name": "lab-policy"})
    assert taken.status_code == 400
    assert taken.context["duplicate_form"].errors["name"] == ["a policy named 'lab-policy' already exists"]
    made = admin.post(f"/policies/{small_policy.pk}/duplicate/", {"name": "lab-b"})
    assert made.status_code == 302
    assert Policy.objects.get(name="lab-b").share_specs() == small_policy.share_specs()


def test_the_policy_page_lists_its_studies_and_the_quota_chart(client_as, small_policy, small_trace):
    from planner.studies.launch import StudyLaunch, launch_study

    launch_study(StudyLaunch(name="lab study", trace=small_trace, policies=[small_policy]), enqueue=False)
    response = client_as("viewer").get(f"/policies/{small_policy.pk}/")
    assert b"lab study" in response.content
    chart = response.context["quota_chart"]
    assert [trace["name"] for trace in chart["data"]] == ["train", "infer", "unassigned (lent to anyone)"]
    assert [trace["x"] for trace in chart["data"]] == [[2], [1], [1]]


def test_deleting_a_share_keeps_the_policy_valid(client_as, small_policy):
    admin = client_as("admin")
    infer = small_policy.shares.get(name="infer")
    response = admin.post(f"/policies/{small_policy.pk}/", {"action": "delete-share", "share": infer.pk})
    assert response.status_code == 302
    train = small_policy.shares.get()
    response = admin.post(
        f"/policies/{small_policy.pk}/", {"action": "delete-share", "share": train.pk}, follow=True
    )
    assert "Share train was not deleted: shares: a policy needs a non-empty list of shares" in (
        response.content.decode()
    )
    assert small_policy.shares.filter(pk=train.pk).exists()


def test_renaming_a_policy_checks_the_name_is_free(client_as, small_policy):
    small_policy.duplicate("taken")
    admin = client_as("admin")
    data = {
        "action": "save-settings",
        "settings-name": "taken",
        "settings-description": "",
        "settings-queueing": "strict_fifo",
        "settings-startup_seconds": "30",
    }
    response = admin.post(f"/policies/{small_policy.pk}/", data)
    assert response.status_code == 400
    assert response.context["settings_form"].errors["name"] == ["Policy with this Name already exists."]
    data["settings-name"] = "lab-policy-2"
    assert admin.post(f"/policies/{small_policy.pk}/", data).status_code == 302
    small_policy.refresh_from_db()
    assert (small_policy.name, small_policy.queueing, small_policy.startup_seconds) == (
        "lab-policy-2",
        "strict_fifo",
        30,
    )
