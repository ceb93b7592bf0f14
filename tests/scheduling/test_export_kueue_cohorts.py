"""Kueue cohort trees (SEMANTICS.md section 13) in and out: the export writes Cohorts with spec.parent,
their quotas, limits and weights; a live configuration (v1beta2 parentName / cohortName, v1alpha1
Cohorts, implicit cohorts, several trees) becomes ``cohorts``; import(export(p)) == p over random trees;
the AWS Batch export flattens a tree and says so."""

from __future__ import annotations

import copy

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_export_round_trips import kueue_policies

from scheduling.cohorts import CohortTree
from scheduling.errors import InputError
from scheduling.export import from_aws_batch, from_kueue_yaml, to_aws_batch, to_kueue_yaml
from scheduling.export.kueue_cluster import from_kueue_cluster
from scheduling.model import Cohort as CohortObject
from scheduling.model import InstanceType, Policy, Share

H100, A100 = "h100", "a100"

# An org of three levels: org (the root, 1 x H100 unassigned) -> research (own 1 x H100, may borrow
# 2 x H100 from org) -> nlp (lends at most 1 x A100 up) -> ClusterQueue llm; research -> vision;
# Prod (its own 1 x A100, neither lends nor borrows) -> serve; misc at the top.
ORG = {
    "name": "org",
    "instance_types": {H100: {"gpus": 8, "hourly_price": 3.5}, A100: {"gpus": 8, "hourly_price": 0}},
    "capacity": {H100: 10, A100: 6},
    "cohorts": [
        {"name": "research", "capacity": {H100: 1}, "borrowing_limit": {H100: 2}, "fair_weight": 2},
        {"name": "nlp", "parent": "research", "capacity": {}, "lending_limit": {A100: 1}},
        {"name": "Prod", "capacity": {A100: 1}, "borrowing_limit": {H100: 0, A100: 0},
         "lending_limit": {H100: 0, A100: 0}},
    ],
    "shares": [
        {"name": "llm", "capacity": {H100: 3}, "cohort": "nlp"},
        {"name": "vision", "capacity": {H100: 2, A100: 1}, "cohort": "research", "strategy": "LEND"},
        {"name": "serve", "capacity": {A100: 2}, "cohort": "Prod"},
        {"name": "misc", "capacity": {H100: 1}},
    ],
}  # fmt: skip


def objects(text: str) -> dict[tuple[str, str], dict]:
    return {(d["kind"], d["metadata"]["name"]): d for d in yaml.safe_load_all(text)}


def gpu_entries(document: dict) -> dict[str, dict]:
    """Flavor -> its nvidia.com/gpu quota entry (without the name)."""
    out = {}
    for group in document["spec"].get("resourceGroups", []):
        for flavor in group["flavors"]:
            (resource,) = flavor["resources"]
            out[flavor["name"]] = {k: v for k, v in resource.items() if k != "name"}
    return out


def test_the_export_writes_each_cohort_under_its_parent_in_gpus():
    docs = objects(to_kueue_yaml(ORG))
    root = docs[("Cohort", "org")]
    assert "parent" not in root["spec"]
    # 10 - 3 - 2 - 1 (shares) - 1 (research) = 3 H100; 6 - 1 - 2 (shares) - 1 (Prod) = 2 A100; x 8 GPUs
    assert gpu_entries(root) == {H100: {"nominalQuota": 24}, A100: {"nominalQuota": 16}}
    research = docs[("Cohort", "research")]
    assert research["spec"]["parent"] == "org"
    assert research["spec"]["fairSharing"] == {"weight": 2}
    assert gpu_entries(research) == {H100: {"nominalQuota": 8, "borrowingLimit": 16}}
    nlp = docs[("Cohort", "nlp")]
    assert nlp["spec"]["parent"] == "research"
    assert "fairSharing" not in nlp["spec"]  # weight 1 and fair sharing off: Kueue's default
    assert gpu_entries(nlp) == {A100: {"nominalQuota": 0, "lendingLimit": 8}}
    prod = docs[("Cohort", "prod")]  # not a Kubernetes name: renamed, the planner's kept
    assert prod["metadata"]["annotations"]["planner/cohort-name"] == "Prod"
    assert gpu_entries(prod) == {
        H100: {"nominalQuota": 0, "borrowingLimit": 0, "lendingLimit": 0},
        A100: {"nominalQuota": 8, "borrowingLimit": 0, "lendingLimit": 0},
    }
    cohort_of = {name: d["spec"]["cohort"] for (kind, name), d in docs.items() if kind == "ClusterQueue"}
    assert cohort_of == {"llm": "nlp", "vision": "research", "serve": "prod", "misc": "org"}


def test_the_exported_tree_comes_back_equal_and_the_notes_say_where_it_is():
    text = to_kueue_yaml(ORG)
    assert Policy.from_dict(from_kueue_yaml(text)) == Policy.from_dict(ORG)
    assert "The policy's 3 cohorts are Cohorts below the root Cohort" in text
    assert "Cohort names Prod are not Kubernetes names" in text


def test_a_cohort_named_like_the_policy_is_renamed_apart_from_the_root():
    policy = copy.deepcopy(ORG)
    policy["cohorts"][0]["name"] = "org"
    policy["cohorts"][1]["parent"] = "org"
    policy["shares"][1]["cohort"] = "org"
    docs = objects(to_kueue_yaml(policy))
    assert docs[("Cohort", "org-2")]["spec"]["parent"] == "org"
    assert docs[("Cohort", "nlp")]["spec"]["parent"] == "org-2"
    assert Policy.from_dict(from_kueue_yaml(to_kueue_yaml(policy))) == Policy.from_dict(policy)


def test_fair_sharing_on_writes_every_cohorts_weight():
    policy = {**copy.deepcopy(ORG), "fair_sharing": {"preemption_strategies": ["LessThanInitialShare"]}}
    docs = objects(to_kueue_yaml(policy))
    assert docs[("Cohort", "nlp")]["spec"]["fairSharing"] == {"weight": 1.0}
    assert Policy.from_dict(from_kueue_yaml(to_kueue_yaml(policy))) == Policy.from_dict(policy)


# ---------------------------------------------------------------------------------------
# Live configurations


def cohort(name: str, parent: str | None = None, version: str = "v1beta2", **spec) -> dict:
    if parent is not None:
        spec["parentName" if version == "v1beta2" else "parent"] = parent
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "Cohort", "metadata": {"name": name},
            "spec": spec, "status": {"fairSharing": {"weightedShare": 0}}}  # fmt: skip


def queue(name: str, cohort_name: str | None, quotas: dict, version: str = "v1beta2") -> dict:
    spec: dict = {"namespaceSelector": {}, "resourceGroups": [resource_group(quotas)]}
    if cohort_name is not None:
        spec["cohortName" if version == "v1beta2" else "cohort"] = cohort_name
    return {"apiVersion": f"kueue.x-k8s.io/{version}", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def resource_group(quotas: dict) -> dict:
    """{flavor: nominalQuota or (nominal, borrowingLimit, lendingLimit)} as a GPU resource group."""
    flavors = []
    for flavor, value in quotas.items():
        nominal, borrow, lend = value if isinstance(value, tuple) else (value, None, None)
        resource = {"name": "nvidia.com/gpu", "nominalQuota": nominal}
        if borrow is not None:
            resource["borrowingLimit"] = borrow
        if lend is not None:
            resource["lendingLimit"] = lend
        flavors.append({"name": flavor, "resources": [resource]})
    return {"coveredResources": ["nvidia.com/gpu"], "flavors": flavors}


def flavor(name: str, gpus: int = 1) -> dict:
    annotations = {"planner/gpus-per-instance": str(gpus)} if gpus != 1 else {}
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name, "annotations": annotations}, "spec": {}}  # fmt: skip


def live(*items: dict) -> dict:
    return from_kueue_cluster([(f"cluster.yaml: items[{i}]", item) for i, item in enumerate(items)])


def test_a_live_v1beta2_tree_of_three_levels_with_an_implicit_cohort():
    data = live(
        flavor("h100", gpus=8),
        cohort("org", resourceGroups=[resource_group({"h100": 16})]),
        cohort("research", "org", fairSharing={"weight": "0.5"},
               resourceGroups=[resource_group({"h100": (8, "16", None)})]),
        cohort("prod", "org", resourceGroups=[resource_group({"h100": (0, 0, 8)})]),
        queue("nlp", "research", {"h100": 24}),
        queue("vision", "research", {"h100": 16}),
        queue("serving", "prod", {"h100": 32}),
        queue("interns", "sandbox", {"h100": 0}),  # sandbox: no object, under no parent
    )  # fmt: skip
    policy = Policy.from_dict(data)
    # sandbox is a tree of its own: two trees, so every root is a fenced top-level cohort.
    assert "Imported from 2 Kueue cohort trees (org, sandbox)" in data["description"]
    assert (
        "Cohort sandbox (named by ClusterQueue/interns) is not listed: an implicit cohort"
        in (data["description"])
    )
    by_name = {c.name: c for c in policy.cohorts}
    assert [c.name for c in policy.cohorts] == ["org", "research", "prod", "sandbox"]
    assert (by_name["org"].parent, dict(by_name["org"].capacity)) == (None, {"h100": 2})
    assert dict(by_name["org"].borrowing_limit) == dict(by_name["org"].lending_limit) == {"h100": 0}
    assert (by_name["research"].parent, dict(by_name["research"].capacity)) == ("org", {"h100": 1})
    assert dict(by_name["research"].borrowing_limit) == {"h100": 2}
    assert by_name["research"].lending_limit is None and by_name["research"].fair_weight == 0.5
    assert dict(by_name["prod"].borrowing_limit) == {"h100": 0} and dict(by_name["prod"].lending_limit) == {
        "h100": 1
    }
    assert dict(by_name["sandbox"].capacity) == {}
    assert {s.name: s.cohort for s in policy.shares} == {
        "nlp": "research", "vision": "research", "serving": "prod", "interns": "sandbox"
    }  # fmt: skip
    # Pool: 2 (org) + 1 (research) + 3 + 2 + 4 (queues) = 12 H100
    assert dict(policy.capacity) == {"h100": 12}


def test_kueues_own_hierarchy_example_with_fair_weights():
    """The Cohort concept page's tree (root-cohort -> important-org 0.75, regular-org 0.25, v1alpha1)
    with a ClusterQueue in each org."""
    data = live(
        flavor("default-flavor"),
        cohort("root-cohort", version="v1alpha1"),
        cohort("important-org", "root-cohort", version="v1alpha1", fairSharing={"weight": "0.75"}),
        cohort("regular-org", "root-cohort", version="v1alpha1", fairSharing={"weight": "0.25"}),
        queue("important", "important-org", {"default-flavor": 6}, version="v1beta1"),
        queue("regular", "regular-org", {"default-flavor": 6}, version="v1beta1"),
    )
    policy = Policy.from_dict(data)
    assert policy.name == "root-cohort"
    assert [(c.name, c.parent, c.fair_weight) for c in policy.cohorts] == [
        ("important-org", None, 0.75), ("regular-org", None, 0.25)
    ]  # fmt: skip


def test_one_tree_makes_its_root_the_policys_root():
    data = live(
        flavor("a100"),
        cohort("org", resourceGroups=[resource_group({"a100": 4})]),
        cohort("research", "org", version="v1alpha1"),  # Kueue 0.9/0.10: v1alpha1, spec.parent
        queue("nlp", "research", {"a100": 8}, version="v1beta1"),
        queue("prod", "org", {"a100": 4}, version="v1beta1"),
        queue("solo", None, {"a100": 2}, version="v1beta1"),
        cohort("lab", resourceGroups=[resource_group({"a100": 6})]),  # no ClusterQueue below it
    )
    policy = Policy.from_dict(data)
    assert policy.name == "org"
    assert [(c.name, c.parent) for c in policy.cohorts] == [("research", None)]
    assert {s.name: (s.cohort, s.strategy.value) for s in policy.shares} == {
        "nlp": ("research", "LEND_AND_BORROW"), "prod": (None, "LEND_AND_BORROW"), "solo": (None, "RESERVE")
    }  # fmt: skip
    assert dict(policy.capacity) == {"a100": 18}  # 4 unassigned + 8 + 4 + 2; lab's 6 serve nobody
    assert "not used: Cohort/lab" in data["description"]
    assert "Its tree has 1 cohorts below it: research." in data["description"]


def test_several_trees_neither_lend_nor_borrow_across():
    """Two trees of 8 GPUs each: with the fence, a queue of one may use its own tree's idle quota
    (8) but never the other's, as in Kueue."""
    data = live(
        flavor("gpu"),
        queue("a1", "tree-a", {"gpu": 4}),
        queue("a2", "tree-a", {"gpu": 4}),
        queue("b1", "tree-b", {"gpu": 8}),
    )
    policy = Policy.from_dict(data)
    tree = CohortTree(policy.cohort_nodes(), policy.capacity, {"gpu": 1})
    assert tree.available("a1", "gpu") == 8  # its own 4 and a2's idle 4
    tree.add_usage("b1", "gpu", 0)
    assert tree.available("b1", "gpu") == 8
    tree.add_usage("a1", "gpu", 8)
    assert tree.available("a2", "gpu") == 0  # tree-b's idle 8 are out of reach
    assert tree.available("b1", "gpu") == 8


def test_a_cohort_named_like_a_cluster_queue_is_renamed():
    data = live(flavor("gpu"), cohort("team"), queue("team", "team", {"gpu": 4}),
                queue("other", "team", {"gpu": 4}))  # fmt: skip
    # One tree: its root is the policy's root, so no cohort is needed and nothing is renamed.
    assert "cohorts" not in data
    data = live(flavor("gpu"), cohort("org"), cohort("team", "org"), queue("team", "team", {"gpu": 4}))
    assert data["cohorts"] == [{"name": "team-cohort", "capacity": {}}]
    assert data["shares"][0]["cohort"] == "team-cohort"
    assert "Cohort team is named team-cohort here: a share already has the name team." in data["description"]


def test_limits_on_a_root_cohort_are_said_unused():
    data = live(flavor("gpu"), cohort("org", resourceGroups=[resource_group({"gpu": (4, 2, 1)})]),
                queue("q", "org", {"gpu": 4}))  # fmt: skip
    assert "cluster.yaml: items[1]" not in data["description"]  # (labelled by kind/name once read)
    assert (
        "Cohort/org is the root of its tree: its borrowingLimit and lendingLimit are not used"
        in (data["description"])
    )
    assert data["capacity"] == {"gpu": 8}


def test_a_cycle_of_parents_is_refused_naming_the_cohort():
    with pytest.raises(InputError) as error:
        live(flavor("gpu"), cohort("a", "b"), cohort("b", "a"), queue("q", "a", {"gpu": 1}))
    assert error.value.field == "Cohort/a.spec.parent"
    assert "a cycle of parents (a -> b -> a)" in error.value.reason
    with pytest.raises(InputError) as error:
        live(flavor("gpu"), cohort("a", "a"), queue("q", "a", {"gpu": 1}))
    assert error.value.field == "Cohort/a.spec.parent"


def test_a_cohort_quota_that_is_not_whole_instances_names_the_field():
    with pytest.raises(InputError) as error:
        live(flavor("h100", gpus=8), cohort("org"),
             cohort("research", "org", resourceGroups=[resource_group({"h100": 12})]),
             queue("q", "research", {"h100": 8}))  # fmt: skip
    assert error.value.field == "Cohort/research.spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"
    assert "12 GPUs is not a whole number of instances of 8 GPUs" in error.value.reason


def test_a_cohort_of_another_api_version_is_named():
    bad = cohort("org")
    bad["apiVersion"] = "kueue.x-k8s.io/v1"
    with pytest.raises(InputError) as error:
        live(flavor("gpu"), bad, queue("q", "org", {"gpu": 1}))
    assert error.value.field == "cluster.yaml: items[1].apiVersion"


# ---------------------------------------------------------------------------------------
# AWS Batch has no tree


def test_the_aws_batch_export_flattens_the_tree_and_says_so():
    bundle = to_aws_batch(ORG)
    (note,) = [n for n in bundle.notes if n.startswith("cohorts (")]
    assert "cohorts (research, nlp (in research), Prod) are not exported" in note
    assert "their own quotas (1 x h100, 1 x a100) become unassigned capacity" in note
    back = Policy.from_dict(from_aws_batch(bundle.to_dict()))
    assert back.cohorts == () and all(s.cohort is None for s in back.shares)
    assert dict(back.capacity) == ORG["capacity"]
    quotas = {s["name"]: s["capacity"] for s in ORG["shares"]}
    assert {s.name: dict(s.capacity) for s in back.shares} == quotas


# ---------------------------------------------------------------------------------------
# Round trips over random trees

COHORT_NAMES = ["org", "Research Dept", "nlp", "vision-lab", "prod", "Ops/Infra"]


@st.composite
def tree_policies(draw) -> dict:
    """A Kueue-style policy (shares as ``kueue_policies`` draws them) with a tree of cohorts up to three
    levels deep above them: each cohort's own quota is added to the pool, its limits drawn per type."""
    policy = draw(kueue_policies())
    types = list(policy["capacity"])
    cohorts: list[dict] = []
    depth: dict[str, int] = {}
    for name in draw(st.lists(st.sampled_from(COHORT_NAMES), min_size=1, max_size=5, unique=True)):
        item: dict = {"name": name}
        parents = [c["name"] for c in cohorts if depth[c["name"]] < 3]
        parent = draw(st.sampled_from([None, *parents]))
        if parent is not None:
            item["parent"] = parent
        depth[name] = 1 if parent is None else depth[parent] + 1
        own = {t: n for t in types if (n := draw(st.integers(0, 3)))}
        for t, n in own.items():
            policy["capacity"][t] += n
        item["capacity"] = own
        for key in ("borrowing_limit", "lending_limit"):
            limited = draw(st.lists(st.sampled_from(types), unique=True))
            if limited:
                item[key] = {t: draw(st.integers(0, 5)) for t in limited}
        weight = draw(st.sampled_from([1, 2, 0.5, 0]))
        if weight != 1:
            item["fair_weight"] = weight
        cohorts.append(item)
    policy["cohorts"] = cohorts
    for share in policy["shares"]:
        place = draw(st.sampled_from([None, *(c["name"] for c in cohorts)]))
        if place is not None:
            share["cohort"] = place
    if draw(st.booleans()):
        policy["fair_sharing"] = {"preemption_strategies": ["LessThanOrEqualToFinalShare"]}
    return policy


def as_live_v1beta2(text: str) -> list[tuple[str, dict]]:
    """The export as a cluster would print it in v1beta2: cohortName, parentName, and a status."""
    out = []
    for i, document in enumerate(yaml.safe_load_all(text)):
        if document["kind"] in ("Cohort", "ClusterQueue", "ResourceFlavor", "WorkloadPriorityClass"):
            document["apiVersion"] = "kueue.x-k8s.io/v1beta2"
            spec = document.get("spec", {})
            for old, new in (("cohort", "cohortName"), ("parent", "parentName")):
                if old in spec:
                    spec[new] = spec.pop(old)
            document["status"] = {"conditions": []}
        out.append((f"live.yaml: items[{i}]", document))
    return out


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(tree_policies())
def test_kueue_round_trip_of_random_trees(policy):
    expected = Policy.from_dict(policy)
    text = to_kueue_yaml(policy)
    # Kueue's webhooks: limits only on a Cohort with a parent, on a ClusterQueue with a cohort.
    for document in yaml.safe_load_all(text):
        if document["kind"] in ("Cohort", "ClusterQueue") and not document["spec"].get(
            "parent" if document["kind"] == "Cohort" else "cohort"
        ):
            assert all(set(entry) <= {"nominalQuota"} for entry in gpu_entries(document).values())
    assert Policy.from_dict(from_kueue_yaml(text)) == expected
    assert Policy.from_dict(from_kueue_cluster(as_live_v1beta2(text))) == expected


def test_a_long_chain_of_cohorts_is_read_once_and_too_many_are_refused():
    chain = [cohort("c0")] + [cohort(f"c{i}", f"c{i - 1}") for i in range(1, 200)]
    data = live(flavor("gpu"), *chain, queue("q", "c199", {"gpu": 1}))
    assert len(data["cohorts"]) == 199
    assert data["cohorts"][-1] == {"name": "c199", "parent": "c198", "capacity": {}}
    many = [cohort(f"c{i}") for i in range(501)]
    with pytest.raises(InputError) as error:
        live(flavor("gpu"), *many, queue("q", "c0", {"gpu": 1}))
    assert error.value.field == "Cohort/c500"
    assert "501 cohorts: a policy has at most 500" in error.value.reason


# ---------------------------------------------------------------------------------------
# Hostile cohort names: the YAML holds exactly the policy's documents, the notes stay comments


HOSTILE = ["--- apiVersion: v1", "x: {a: b}", "# comment", "nl\n---\nkind: Namespace\n#"]


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_cohort_name_stays_inside_its_annotation(name):
    policy = Policy(
        name="lab",
        instance_types={"gpu": InstanceType("gpu", 1, 0)},
        capacity={"gpu": 3},
        shares=(Share(name="a", capacity={"gpu": 1}, cohort=name),),
        cohorts=(CohortObject(name=name, capacity={"gpu": 1}),),
    )
    text = to_kueue_yaml(policy)
    documents = list(yaml.safe_load_all(text))
    assert [d["kind"] for d in documents] == ["Cohort", "Cohort", "ResourceFlavor", "ClusterQueue",
                                              "WorkloadPriorityClass"]  # fmt: skip
    assert documents[1]["metadata"]["annotations"]["planner/cohort-name"] == name
    assert documents[3]["spec"]["cohort"] == documents[1]["metadata"]["name"]
    assert all(line.startswith("#") for line in text[: text.index("\n---")].splitlines())
    if "\n" not in name:  # the validator refuses line breaks; the others come back
        assert Policy.from_dict(from_kueue_yaml(text)).cohorts[0].name == name
