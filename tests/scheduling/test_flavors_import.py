"""Section 12 in the Kueue importers and the export: a live configuration whose ClusterQueues list several
flavors (reserved, then on-demand, then spot) with flavorFungibility, v1beta1 and v1beta2 spellings, and
the errors that name the object and field. (import(export(p)) == p is drawn in test_export_round_trips.)"""

from __future__ import annotations

import pytest
import yaml

from scheduling.errors import InputError
from scheduling.export import from_kueue_yaml, to_kueue_yaml
from scheduling.export.configuration import read_configuration_files
from scheduling.model import Policy


def flavor(name: str, gpus: int = 8) -> dict:
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
            "metadata": {"name": name, "annotations": {"planner/gpus-per-instance": str(gpus)}},
            "spec": {"nodeLabels": {"pool": name}}}  # fmt: skip


def cluster_queue(name: str, flavors: list[tuple[str, int]], fungibility: dict | None = None) -> dict:
    spec = {
        "cohortName": "gpus",
        "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [
            {"name": f, "resources": [{"name": "nvidia.com/gpu", "nominalQuota": q}]} for f, q in flavors
        ]}],
    }  # fmt: skip
    if fungibility is not None:
        spec["flavorFungibility"] = fungibility
    return {"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue", "metadata": {"name": name},
            "spec": spec}  # fmt: skip


def live(*objects) -> dict:
    listed = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    return read_configuration_files("kueue", [("cluster.yaml", yaml.safe_dump(listed))])


def test_a_live_configuration_with_several_flavors_and_fungibility():
    data = live(
        flavor("reserved"), flavor("on-demand"), flavor("spot"),
        cluster_queue("team-a", [("reserved", 16), ("on-demand", 8), ("spot", 0)],
                      {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "MayStopSearch"}),
        cluster_queue("team-b", [("spot", 8), ("reserved", 8)],
                      {"whenCanBorrow": "TryNextFlavor", "whenCanPreempt": "TryNextFlavor",
                       "preference": "PreemptionOverBorrowing"}),
        cluster_queue("team-c", [("reserved", 8), ("on-demand", 8), ("spot", 8)]),
    )  # fmt: skip
    policy = Policy.from_dict(data)
    shares = {s["name"]: s for s in data["shares"]}
    # team-a lists the types in the policy's order: no flavor_order to keep
    assert "flavor_order" not in shares["team-a"]
    assert shares["team-a"]["flavor_fungibility"] == {
        "when_can_borrow": "TryNextFlavor", "when_can_preempt": "MayStopSearch"}  # fmt: skip
    # team-b lists spot first; on-demand, which it does not list, comes last (it cannot borrow it)
    assert policy.types_in_order("team-b") == ["spot", "reserved", "on-demand"]
    assert shares["team-b"]["borrowing_limit"]["on-demand"] == 0
    assert policy.share("team-b").flavor_fungibility.preference.value == "PreemptionOverBorrowing"
    assert "flavor_fungibility" not in shares["team-c"]  # Kueue's defaults
    assert "not modelled" not in data["description"].replace("borrowWithinCohort", "")
    # and the export writes it back: the same policy again
    assert Policy.from_dict(from_kueue_yaml(to_kueue_yaml(policy))) == policy


def test_v1beta1_borrow_and_preempt_mean_may_stop_search():
    data = live(
        flavor("reserved"), flavor("spot"),
        cluster_queue("team-a", [("reserved", 8), ("spot", 8)],
                      {"whenCanBorrow": "Borrow", "whenCanPreempt": "Preempt"}),
    )  # fmt: skip
    assert data["shares"][0]["flavor_fungibility"] == {
        "when_can_borrow": "MayStopSearch", "when_can_preempt": "MayStopSearch"}  # fmt: skip


@pytest.mark.parametrize(
    ("fungibility", "field", "words"),
    [
        ({"whenCanBorrow": "Sometimes"}, "flavorFungibility.whenCanBorrow", "'Sometimes' is not one of"),
        ({"whenCanPreempt": 3}, "flavorFungibility.whenCanPreempt", "3 is not one of Preempt"),
        ({"preference": "Cheapest"}, "flavorFungibility.preference", "'Cheapest' is not one of"),
        ("TryNextFlavor", "flavorFungibility", "must be an object"),
    ],
)
def test_a_bad_flavor_fungibility_names_the_cluster_queue_and_field(fungibility, field, words):
    with pytest.raises(InputError) as caught:
        live(flavor("reserved"), cluster_queue("team-a", [("reserved", 8)], fungibility))
    assert caught.value.field.endswith(f"ClusterQueue/team-a.spec.{field}")
    assert words in str(caught.value)


def test_preemption_over_borrowing_without_both_try_next_flavor_is_refused():
    with pytest.raises(InputError) as caught:
        queue = cluster_queue("team-a", [("reserved", 8)], {"preference": "PreemptionOverBorrowing"})
        live(flavor("reserved"), queue)
    assert "flavor_fungibility.preference" in caught.value.field
    assert "both TryNextFlavor" in str(caught.value)


# --- the Kueue workload history: every flavor a workload could use --------------------------------------


def history_cluster_queue(name: str, flavors: list[str]) -> dict:
    queue = cluster_queue(name, [(f, 8) for f in flavors])
    queue["spec"]["resourceGroups"].insert(0, {"coveredResources": ["cpu"], "flavors": [
        {"name": "cpu-only", "resources": [{"name": "cpu", "nominalQuota": 64}]}]})  # fmt: skip
    return queue


def test_a_workload_accepts_its_cluster_queues_flavors_that_cover_gpus_in_their_order():
    from test_import_kueue_workloads import read, workload

    items = [history_cluster_queue("team-a", ["h100", "a100", "l4"]), workload()]
    items += [flavor("h100"), flavor("a100"), flavor("l4"), flavor("cpu-only")]
    stats: dict = {}
    trace = read(*items, stats=stats)
    # admitted on a100; it could have used h100, a100 and l4 (not cpu-only: it covers no GPUs)
    assert trace.type_names[trace.instance_type[0]] == "h100|a100|l4"
    assert stats["notes"]["workloads_accepting_several_flavors"] == 1


def test_a_node_selector_keeps_only_the_flavors_whose_labels_agree():
    from test_import_kueue_workloads import read, workload

    chosen = workload()
    chosen["spec"]["podSets"][0]["template"]["spec"]["nodeSelector"] = {"pool": "a100", "zone": "x"}
    trace = read(history_cluster_queue("team-a", ["h100", "a100"]), flavor("h100"), flavor("a100"), chosen)
    # h100's label pool=h100 disagrees; zone is no flavor's label: left to the node scheduler
    assert trace.type_names == ["a100"]


def test_without_cluster_queues_a_workload_keeps_its_admitted_flavor():
    from test_import_kueue_workloads import read, workload

    assert read(workload()).type_names == ["a100"]


def test_the_cluster_may_come_as_its_own_file():
    import io
    import json

    from test_import_kueue_workloads import read, workload

    cluster = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [history_cluster_queue("team-a", ["a100", "h100"]), flavor("a100"), flavor("h100")],
    }
    trace = read(workload(), cluster=io.BytesIO(json.dumps(cluster).encode()))
    assert trace.type_names == ["a100|h100"]
    with pytest.raises(InputError) as caught:
        read(workload(), cluster=io.BytesIO(json.dumps({"items": [workload()]}).encode()))
    assert caught.value.field == "cluster.kind"


def test_a_flavor_the_cluster_queue_no_longer_lists_is_kept_last():
    from test_import_kueue_workloads import read, workload

    stats: dict = {}
    trace = read(history_cluster_queue("team-a", ["h100"]), flavor("h100"), workload(), stats=stats)
    assert trace.type_names == ["h100|a100"]
    assert stats["notes"]["admitted_on_a_flavor_its_cluster_queue_no_longer_lists"] == 1


# --- traces of several types elsewhere: summaries, fitting a trace to an imported policy --------------


def test_a_job_of_several_types_counts_its_first_types_gpus_in_the_summary():
    from conftest import make_trace, table

    from scheduling.traces.summary import job_gpus

    trace = make_trace(table("job_id submit_time share duration instance_type instance_count\n"
                             " j1 0 A 10 a100|h100 2\n j2 0 A 10 h100 1"))  # fmt: skip
    assert job_gpus(trace, {"h100": 8, "a100": 4}).tolist() == [8.0, 8.0]  # 2 x 4 (a100), 1 x 8


def test_a_trace_of_lists_fits_a_policy_that_has_every_listed_type():
    from conftest import make_trace, table

    from scheduling.traces.policy_fit import check_trace_fits_policy

    policy = Policy.from_dict({"instance_types": {"h100": {}, "a100": {}}, "capacity": {"h100": 1, "a100": 1},
                               "shares": [{"name": "A"}]})  # fmt: skip
    header = "job_id submit_time share duration instance_type\n"
    check_trace_fits_policy(make_trace(table(header + " j1 0 A 10 a100|h100")), policy)
    with pytest.raises(InputError) as caught:
        check_trace_fits_policy(make_trace(table(header + " j1 0 A 10 a100|v100")), policy)
    assert "'a100|v100' is not in" in str(caught.value)
