"""Section 13's tree of cohorts over the policy API: stored relationally (Cohort, CohortLimit,
Share.cohort), read and written as the policy JSON has it, carried by duplicate and export; an
invalid tree is a 400 naming the cohort (or share) and its field, and nothing is stored."""

import copy

import pytest

from planner.capacity.models import Cohort, CohortLimit, Policy, Pool, Share, ShareLimit
from tests.fixtures import one_type_pool

pytestmark = pytest.mark.django_db

# research (own quota 2) holds vision (borrows at most 2 from research) and team b; team a is in
# vision; team c is at the root. 2 + 4 + 4 + 2 = 12 = the pool.
TREE = [
    {"name": "research", "capacity": {"gpu": 2}, "lending_limit": {"gpu": 3}, "fair_weight": 2},
    {"name": "vision", "parent": "research", "capacity": {"gpu": 0}, "borrowing_limit": {"gpu": 2}},
]
SHARES = [
    {"name": "a", "capacity": {"gpu": 4}, "cohort": "vision"},
    {"name": "b", "capacity": {"gpu": 4}, "cohort": "research",
     "flavor_fungibility": {"when_can_borrow": "TryNextFlavor", "when_can_preempt": "TryNextFlavor",
                            "preference": "PreemptionOverBorrowing"}},
    {"name": "c", "capacity": {"gpu": 2}},
]  # fmt: skip


@pytest.fixture
def pool(db) -> Pool:
    return one_type_pool("lab", "gpu", 12, hourly_price=2)


def payload(pool: Pool, name: str = "tree") -> dict:
    return {"name": name, "pool": pool.pk, "shares": copy.deepcopy(SHARES), "cohorts": copy.deepcopy(TREE)}


@pytest.fixture
def tree_policy(admin_api, pool) -> dict:
    response = admin_api.post("/api/policies/", payload(pool), format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def stored_state() -> tuple:
    """Everything the tree could change in the database, to compare before and after a refusal."""
    return (
        list(Policy.objects.values_list("name", flat=True)),
        list(Cohort.objects.values_list("policy__name", "name", "parent__name", "fair_weight")),
        list(CohortLimit.objects.values_list("cohort__name", "quota", "borrowing_limit", "lending_limit")),
        list(Share.objects.values_list("policy__name", "name", "cohort__name")),
        list(ShareLimit.objects.values_list("share__name", "quota", "lending_limit")),
    )


def test_a_policy_with_a_tree_is_read_back_as_the_policy_json_has_it(admin_api, tree_policy):
    assert tree_policy["cohorts"] == [
        {"name": "research", "capacity": {"gpu": 2}, "lending_limit": {"gpu": 3}, "fair_weight": 2},
        {"name": "vision", "parent": "research", "capacity": {"gpu": 0}, "borrowing_limit": {"gpu": 2}},
    ]
    assert [s["cohort"] for s in tree_policy["shares"]] == ["vision", "research", None]
    assert tree_policy["shares"][1]["flavor_fungibility"]["preference"] == "PreemptionOverBorrowing"
    exported = admin_api.get(f"/api/policies/{tree_policy['id']}/export/").json()
    assert exported["cohorts"] == tree_policy["cohorts"]
    assert [s.get("cohort") for s in exported["shares"]] == ["vision", "research", None]
    engine = Policy.objects.get(pk=tree_policy["id"]).engine_policy()
    assert engine.cohorts[1].parent == "research" and engine.share("a").cohort == "vision"


def test_patching_the_tree_keeps_each_share_in_its_cohort(admin_api, tree_policy):
    tree = copy.deepcopy(TREE)
    tree[1]["fair_weight"] = 0.5
    tree[0]["capacity"] = {"gpu": 1}
    response = admin_api.patch(f"/api/policies/{tree_policy['id']}/", {"cohorts": tree}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["cohorts"][1]["fair_weight"] == 0.5
    assert [s["cohort"] for s in response.json()["shares"]] == ["vision", "research", None]
    flat = admin_api.patch(
        f"/api/policies/{tree_policy['id']}/",
        {"cohorts": [], "shares": [{**s, "cohort": None} for s in SHARES]},
        format="json",
    )
    assert flat.status_code == 200, flat.json()
    assert flat.json()["cohorts"] == [] and not Cohort.objects.exists()


def test_a_share_moves_into_a_cohort_through_the_shares_endpoint(admin_api, tree_policy):
    share = Share.objects.get(policy_id=tree_policy["id"], name="c")
    response = admin_api.patch(f"/api/shares/{share.pk}/", {"cohort": "vision"}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["cohort"] == "vision"
    refused = admin_api.patch(f"/api/shares/{share.pk}/", {"cohort": "nowhere"}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"cohort": ["no cohort 'nowhere'"]}
    assert Share.objects.get(pk=share.pk).cohort.name == "vision"


def test_duplicating_a_policy_copies_its_tree(admin_api, tree_policy):
    url = f"/api/policies/{tree_policy['id']}/duplicate/"
    response = admin_api.post(url, {"name": "copy"}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["cohorts"] == tree_policy["cohorts"]
    copied = Share.objects.get(policy__name="copy", name="a")
    assert copied.cohort.policy.name == "copy" and copied.cohort.parent.policy.name == "copy"


def _cycle(body: dict) -> None:
    body["cohorts"][0]["parent"] = "vision"  # research -> vision -> research


def _unknown_parent(body: dict) -> None:
    body["cohorts"][1]["parent"] = "nowhere"


def _lending_above_quota(body: dict) -> None:
    body["shares"][0]["lending_limit"] = {"gpu": 5}  # a's quota is 4


def _quotas_above_pool(body: dict) -> None:
    body["cohorts"][0]["capacity"] = {"gpu": 3}  # 3 + 4 + 4 + 2 = 13 on a pool of 12


BAD_TREES = {
    "cycle": (_cycle, {"cohorts": ["cohort research, parent: a cycle (research -> vision -> research)"]}),
    "unknown parent": (_unknown_parent, {"cohorts": ["cohort vision, parent: no cohort 'nowhere'"]}),
    "lending above quota": (
        _lending_above_quota,
        {"shares": ["share a, lending_limit.gpu: 5 is above its capacity 4"]},
    ),
    "quotas above the pool": (
        _quotas_above_pool,
        {"shares": ["capacity.gpu: shares and cohorts claim 13, more than the pool's 12"]},
    ),
}


@pytest.mark.parametrize("case", list(BAD_TREES))
def test_an_invalid_tree_is_refused_on_create_and_nothing_is_stored(admin_api, pool, tree_policy, case):
    spoil, expected = BAD_TREES[case]
    body = payload(pool, name="second")
    spoil(body)
    before = stored_state()
    response = admin_api.post("/api/policies/", body, format="json")
    assert response.status_code == 400
    assert response.json() == expected
    assert stored_state() == before


@pytest.mark.parametrize("case", list(BAD_TREES))
def test_an_invalid_tree_is_refused_on_patch_and_nothing_is_stored(admin_api, tree_policy, case):
    spoil, expected = BAD_TREES[case]
    body = {"shares": copy.deepcopy(SHARES), "cohorts": copy.deepcopy(TREE)}
    spoil(body)
    before = stored_state()
    response = admin_api.patch(f"/api/policies/{tree_policy['id']}/", body, format="json")
    assert response.status_code == 400
    assert response.json() == expected
    assert stored_state() == before


def test_a_cohort_of_an_unknown_instance_type_is_named(admin_api, pool):
    body = payload(pool)
    body["cohorts"][0]["capacity"] = {"h100": 1}
    response = admin_api.post("/api/policies/", body, format="json")
    assert response.status_code == 400
    assert response.json() == {"cohorts": ["unknown instance type(s): h100"]}


def test_an_imported_policy_keeps_its_tree_and_the_exports_get_it_whole(admin_api, pool):
    """The exports app hands ``scheduling.export`` the engine policy whole and stores an import's
    dict whole: the tree goes through both without being rebuilt field by field."""
    from planner.exports.api.views import engine_policy_of
    from planner.exports.importing import store_imported_policy

    data = {
        "name": "imported",
        "instance_types": {"gpu": {"gpus": 1, "hourly_price": 2}},
        "capacity": {"gpu": 12},
        "shares": copy.deepcopy(SHARES),
        "cohorts": copy.deepcopy(TREE),
    }
    policy = store_imported_policy(data, pool_name="lab")
    engine = engine_policy_of(policy.pk)
    assert engine.to_dict()["cohorts"] == TREE
    assert [s.cohort for s in engine.shares] == ["vision", "research", None]
    response = admin_api.get(f"/api/policies/{policy.pk}/export/kueue/")
    assert response.status_code == 200, response.content
