"""The policy page's editor of the tree of cohorts and of each share's flavor settings (Django's
test client; the browser test is tests/pages/test_policy_tree.py): an admin adds, edits, renames and
removes cohorts and moves shares into them; a refused edit stores nothing and its error, in the
validator's words, is under the field it names; a viewer reads the tree and cannot edit it."""

import re

import pytest
from django.test import Client

from planner.capacity.models import Cohort, InstanceType, Policy, Pool, ShareSpec
from tests.service.conftest import make_user

pytestmark = pytest.mark.django_db

TYPES = ["a100", "h100"]  # the page lists the pool's types by name


@pytest.fixture
def policy(db) -> Policy:
    for name in TYPES:
        InstanceType.objects.get_or_create(name=name, defaults={"gpus": 8, "hourly_price": 0})
    pool = Pool.objects.create(name="lab")
    pool.set_capacity({"a100": 8, "h100": 4})
    policy = Policy.objects.create(name="lab-policy", pool=pool)
    policy.replace_shares(
        [
            ShareSpec("a", capacity={"a100": 2}),
            ShareSpec("b", capacity={"a100": 2, "h100": 2}),
            ShareSpec("c", capacity={"a100": 1}),
        ]
    )
    return policy


def client_as(role: str) -> Client:
    client = Client()
    client.force_login(make_user(f"user-{role}", role))
    return client


@pytest.fixture
def admin() -> Client:
    return client_as("admin")


def url(policy: Policy) -> str:
    return f"/policies/{policy.pk}/"


def cohort_post(action: str, name: str, parent: str = "", quota: int = 0, **extra) -> dict:
    data = {"action": action, "cohort-name": name, "cohort-parent": parent, "cohort-fair_weight": "1",
            "cohort-quota_0": str(quota), "cohort-quota_1": "0"}  # fmt: skip
    data.update({f"cohort-{key}": value for key, value in extra.items()})
    return data


def share_post(policy: Policy, name: str, **fields) -> dict:
    share = policy.shares.get(name=name)
    spec = share.spec()
    data = {
        "action": "save-share", "share": str(share.pk), "share-name": name, "share-strategy": spec.strategy,
        "share-in_share_preemption": spec.in_share_preemption, "share-reclaim": spec.reclaim,
        "share-fair_weight": "1", "share-cohort": spec.cohort or "",
        "share-when_can_borrow": "MayStopSearch", "share-when_can_preempt": "TryNextFlavor",
        "share-preference": "BorrowingOverPreemption",
    }  # fmt: skip
    for i, type_name in enumerate(TYPES):
        data[f"share-quota_{i}"] = str(spec.capacity.get(type_name, 0))
    data.update({f"share-{key}": value for key, value in fields.items()})
    return data


def tree_on_page(html: str) -> list[tuple[str, str, int]]:
    """(kind, name, level) of each row of the shares table, in order."""
    row = r'<tr id="(share|cohort)-\d+" class="\w+-row" data-level="(\d+)">\s*<th[^>]*>(.*?)</th>'
    rows = re.findall(row, html)
    hidden = r'<span class="(visually-hidden|flavors muted)">.*?</span>'
    names = [re.sub(r"<[^>]+>", "", re.sub(hidden, "", cell)) for *_, cell in rows]
    return [(kind, name.removeprefix("Cohort ").strip(), int(level))
            for (kind, level, _), name in zip(rows, names, strict=True)]  # fmt: skip


def build_two_levels(admin: Client, policy: Policy) -> None:
    """research (own quota 1 a100) at the root, vision in it; a in vision, b in research."""
    assert admin.post(url(policy), cohort_post("add-cohort", "research", quota=1)).status_code == 302
    assert admin.post(url(policy), cohort_post("add-cohort", "vision", parent="research")).status_code == 302
    assert admin.post(url(policy), share_post(policy, "a", cohort="vision")).status_code == 302
    assert admin.post(url(policy), share_post(policy, "b", cohort="research")).status_code == 302


def test_an_admin_builds_a_two_level_tree_and_the_page_shows_it_indented(admin, policy):
    build_two_levels(admin, policy)
    page = admin.get(url(policy)).content.decode()
    # The root's share first, then each cohort with its shares and cohorts beneath it.
    assert tree_on_page(page) == [
        ("share", "c", 0),
        ("cohort", "research", 0),
        ("share", "b", 1),
        ("cohort", "vision", 1),
        ("share", "a", 2),
    ]
    engine = policy.engine_policy()
    assert [(c.name, c.parent, dict(c.capacity)) for c in engine.cohorts] == [
        ("research", None, {"a100": 1}), ("vision", "research", {})]  # fmt: skip
    assert engine.share("a").cohort == "vision" and engine.share("c").cohort is None


def test_a_cycle_is_refused_under_the_parent_field_and_nothing_is_stored(admin, policy):
    build_two_levels(admin, policy)
    research = Cohort.objects.get(policy=policy, name="research")
    response = admin.post(url(policy), {**cohort_post("save-cohort", "research", parent="vision", quota=1),
                                        "cohort": str(research.pk)})  # fmt: skip
    assert response.status_code == 400
    error = re.search(r'id="id_cohort-parent_error"><li>(.*?)</li>', response.content.decode())
    assert error and error.group(1) == "a cycle (research -&gt; vision -&gt; research)"
    assert Cohort.objects.get(pk=research.pk).parent is None


def test_a_cohort_quota_above_the_pool_is_refused_under_its_quota(admin, policy):
    # Shares hold 5 of 8 a100: a cohort of 4 would claim 9.
    response = admin.post(url(policy), cohort_post("add-cohort", "big", quota=4))
    assert response.status_code == 400
    error = re.search(r'id="id_cohort-quota_0_error"><li>(.*?)</li>', response.content.decode())
    assert error and error.group(1) == "shares and cohorts claim 9, more than the pool&#x27;s 8"
    assert not Cohort.objects.filter(policy=policy).exists()


def test_a_share_moved_under_an_unknown_cohort_is_refused(admin, policy):
    response = admin.post(url(policy), share_post(policy, "a", cohort="nowhere"))
    assert response.status_code == 400  # the choice is not offered: the form refuses it
    assert "nowhere is not one of the available choices" in response.content.decode()


def test_renaming_a_cohort_keeps_its_shares_and_cohorts_in_it(admin, policy):
    build_two_levels(admin, policy)
    research = Cohort.objects.get(policy=policy, name="research")
    renamed = {**cohort_post("save-cohort", "lab", quota=1), "cohort": str(research.pk)}
    response = admin.post(url(policy), renamed)
    assert response.status_code == 302
    engine = policy.engine_policy()
    assert [(c.name, c.parent) for c in engine.cohorts] == [("lab", None), ("vision", "lab")]
    assert engine.share("b").cohort == "lab"


def test_removing_a_cohort_moves_what_it_holds_to_its_parent(admin, policy):
    build_two_levels(admin, policy)
    vision = Cohort.objects.get(policy=policy, name="vision")
    assert admin.post(url(policy), {"action": "delete-cohort", "cohort": str(vision.pk)}).status_code == 302
    engine = policy.engine_policy()
    assert [c.name for c in engine.cohorts] == ["research"]
    assert engine.share("a").cohort == "research"


def test_an_admin_edits_a_shares_flavor_order_and_fungibility(admin, policy):
    data = share_post(policy, "b", flavor_order="h100, a100", when_can_borrow="TryNextFlavor",
                      when_can_preempt="TryNextFlavor", preference="PreemptionOverBorrowing")  # fmt: skip
    assert admin.post(url(policy), data).status_code == 302
    engine = policy.engine_policy()
    assert engine.types_in_order("b") == ["h100", "a100"]
    assert engine.share("b").flavor_fungibility.preference.value == "PreemptionOverBorrowing"
    page = admin.get(url(policy)).content.decode()
    shown = "h100 → a100; could borrow: TryNextFlavor, could preempt: TryNextFlavor; prefers preempting"
    assert shown in page


def test_flavor_settings_the_validator_refuses_are_named_under_their_field(admin, policy):
    response = admin.post(url(policy), share_post(policy, "b", flavor_order="h100, v100"))
    assert response.status_code == 400
    error = re.search(r'id="id_share-flavor_order_error"><li>(.*?)</li>', response.content.decode())
    assert error and error.group(1) == "unknown instance type &#x27;v100&#x27; (the policy has a100, h100)"
    response = admin.post(url(policy), share_post(policy, "b", preference="PreemptionOverBorrowing"))
    assert response.status_code == 400
    error = re.search(r'id="id_share-preference_error"><li>(.*?)</li>', response.content.decode())
    assert error and error.group(1) == (
        "PreemptionOverBorrowing needs when_can_borrow and when_can_preempt both TryNextFlavor"
    )
    assert policy.engine_policy().share("b").flavor_order is None


def test_a_viewer_reads_the_tree_and_cannot_edit_it(admin, policy):
    build_two_levels(admin, policy)
    viewer = client_as("viewer")
    page = viewer.get(url(policy) + "?edit=new-cohort").content.decode()
    assert [row[1] for row in tree_on_page(page)] == ["c", "research", "b", "vision", "a"]
    assert 'name="cohort-name"' not in page and "Add a cohort" not in page and "Remove" not in page
    response = viewer.post(url(policy), cohort_post("add-cohort", "mine"))
    assert response.status_code == 403
    assert Cohort.objects.filter(policy=policy).count() == 2
