"""A policy as Kueue objects (kueue.x-k8s.io/v1beta1) in one multi-document YAML, and such YAML read back.

One root Cohort holds the pool (its own nominalQuota is the unassigned capacity), one ResourceFlavor per
instance type, one ClusterQueue per share, and WorkloadPriorityClasses for the job priorities in use.
Quotas are ``nvidia.com/gpu`` counts: a share's n instances of a type with g GPUs are n x g GPUs.

Cohort trees (SEMANTICS.md section 13). The export writes each of the policy's ``cohorts`` as a Cohort
whose ``spec.parent`` is its parent's Cohort, or the root Cohort for a top-level one (Kueue refuses
borrowing and lending limits on a Cohort without a parent), with its own nominalQuota, borrowingLimit and
lendingLimit per flavor and its ``spec.fairSharing.weight``; each ClusterQueue's ``spec.cohort`` is its
share's cohort (the root Cohort for a share at the top). The import reads the Cohort objects and the
implicit ones (a name a ClusterQueue or a Cohort's parent gives without an object: Kueue then makes an
empty cohort, no quota, no limits, no parent). **(choice)** When every ClusterQueue in a cohort is in one
tree, the root of that tree is the policy's root: its own nominalQuota is the unassigned capacity and its
children are the top-level cohorts and shares. When they are in several trees, the policy's root is above
them all, and the root of each tree is a top-level cohort with borrowing and lending limits 0 for every
instance type: it neither lends to nor borrows from the others, as separate trees in Kueue. A
ClusterQueue without a cohort is a RESERVE share at the top, which neither lends nor borrows either.
Cohorts of a tree without any ClusterQueue serve nobody and are listed as not used.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import yaml

from scheduling.capacity_plans import changes_in_words
from scheduling.errors import InputError
from scheduling.export.escape import comment_text, unique_name
from scheduling.model import (
    DEFAULT_FUNGIBILITY,
    MAX_PRIORITY,
    MAX_SHARES,
    Cohort,
    FlavorPreference,
    InSharePreemption,
    Policy,
    Queueing,
    Reclaim,
    Share,
    Strategy,
    WhenCan,
    canonical_flavor_order,
)
from scheduling.nesting import check_yaml_nesting

API_VERSION = "kueue.x-k8s.io/v1beta1"
GPU_RESOURCE = "nvidia.com/gpu"
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
PRIORITY_CLASS_LABEL = "kueue.x-k8s.io/priority-class"

# Planner facts Kueue does not use, kept as annotations so that an import restores them.
ANNOTATION_POLICY = "planner/policy-name"
ANNOTATION_STARTUP = "planner/startup-seconds"
ANNOTATION_SHARE = "planner/share-name"
ANNOTATION_COHORT = "planner/cohort-name"
ANNOTATION_INSTANCE_TYPE = "planner/instance-type"
ANNOTATION_GPUS = "planner/gpus-per-instance"
ANNOTATION_HOURLY_PRICE = "planner/hourly-price"
ANNOTATION_FAIR_SHARING = "planner/fair-sharing-strategies"
ANNOTATION_CHANGES = "planner/changes"
ANNOTATION_RUNNABLE_TIMEOUT = "planner/runnable-timeout-seconds"

# Kueue's own configuration file (the controller manager's), where fair sharing is switched on.
CONFIG_API_VERSION = "config.kueue.x-k8s.io/v1beta1"

WITHIN_CLUSTER_QUEUE = {
    InSharePreemption.NEVER: "Never",
    InSharePreemption.LOWER_PRIORITY: "LowerPriority",
    InSharePreemption.LOWER_OR_NEWER_EQUAL_PRIORITY: "LowerOrNewerEqualPriority",
}
RECLAIM_WITHIN_COHORT = {Reclaim.NEVER: "Never", Reclaim.LOWER_PRIORITY: "LowerPriority", Reclaim.ANY: "Any"}
QUEUEING_STRATEGY = {Queueing.BEST_EFFORT_FIFO: "BestEffortFIFO", Queueing.STRICT_FIFO: "StrictFIFO"}
# Section 12's flavorFungibility: v1beta1 names MayStopSearch Borrow / Preempt (v1beta2 MayStopSearch);
# the export writes v1beta1's, the import reads both.
WHEN_CAN_BORROW = {WhenCan.MAY_STOP_SEARCH: "Borrow", WhenCan.TRY_NEXT_FLAVOR: "TryNextFlavor"}
WHEN_CAN_PREEMPT = {WhenCan.MAY_STOP_SEARCH: "Preempt", WhenCan.TRY_NEXT_FLAVOR: "TryNextFlavor"}

_DNS_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def to_kueue_yaml(
    policy: Policy | Mapping[str, Any],
    *,
    priorities: Iterable[int] = (0,),
    gpu_resource: str = GPU_RESOURCE,
    prices: bool = True,
) -> str:
    """The Kueue objects of ``policy`` as multi-document YAML, with ``kueue_notes`` as leading comments;
    ``prices=False`` leaves the hourly prices out (annotations and notes).

    ``priorities`` are the job priorities to make a WorkloadPriorityClass for: ``priority-<p>`` with
    value p, so a job of planner priority p is labelled ``kueue.x-k8s.io/priority-class: priority-<p>``.
    """
    policy = policy if isinstance(policy, Policy) else Policy.from_dict(policy)
    priorities = sorted(set(_check_priorities(priorities)))
    flavors = _flavor_names(policy)
    share_names = _share_names(policy)
    root = _dns_name(policy.name, "planner")
    cohorts = _cohort_names(policy, root)
    documents: list[dict[str, Any]] = [_cohort(policy, root, flavors, gpu_resource)]
    documents += [_tree_cohort(policy, c, cohorts, flavors, gpu_resource) for c in policy.cohorts]
    documents += [_resource_flavor(policy, t, flavor, prices) for t, flavor in flavors.items()]
    documents += [
        _cluster_queue(policy, share, share_names[share.name], cohorts[share.cohort], flavors, gpu_resource)
        for share in policy.shares
    ]
    documents += [_priority_class(p) for p in priorities]
    # The comments are the only text not written by the YAML emitter: names in them are escaped so
    # that none can end the comment line and start a document of its own.
    name = comment_text(policy.name)
    header = [f"# Kueue ({API_VERSION}) configuration of policy {name}, written by the planner."]
    header += ["#", "# Notes:"]
    for note in kueue_notes(policy, gpu_resource=gpu_resource, prices=prices):
        header += textwrap.wrap(
            comment_text(note), width=100, initial_indent="# - ", subsequent_indent="#   "
        )
    # libyaml's emitter when it is built: the pure-Python one took seconds over a long calendar's
    # annotation (one long string, analysed character by character).
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    body = yaml.dump_all(
        documents, Dumper=dumper, sort_keys=False, default_flow_style=False, explicit_start=True
    )
    return "\n".join(header) + "\n" + body


def kueue_notes(policy: Policy, *, gpu_resource: str = GPU_RESOURCE, prices: bool = True) -> list[str]:
    """What the Kueue export changes or cannot say, in words (also the YAML's leading comments)."""
    return [
        *_objects_notes(gpu_resource),
        *_tree_notes(policy),
        *_limit_notes(policy),
        *_section_8_to_10_notes(policy),
        *_annotation_notes(policy, prices),
        *_renaming_notes(policy),
    ]


def _objects_notes(gpu_resource: str) -> list[str]:
    """How the objects are to be used: quotas in GPUs, namespaces, priorities, borrowing."""
    return [
        f"Quotas are {gpu_resource} counts per ResourceFlavor (one flavor per instance type): a quota of n "
        f"instances of a type with g GPUs each is n x g. Jobs should request whole instances' worth of "
        f"GPUs and select their instance type with a nodeSelector on {INSTANCE_TYPE_LABEL}, so that Kueue "
        "picks that flavor.",
        "Every ClusterQueue has namespaceSelector {} (all namespaces may submit): narrow it, and create a "
        "LocalQueue per namespace pointing at it.",
        f"WorkloadPriorityClass priority-<p> has value p: label a job {PRIORITY_CLASS_LABEL}: priority-<p> "
        "to give it the planner's priority p.",
        "borrowWithinCohort is Never: in the planner a job that must borrow never preempts.",
    ]


def _tree_notes(policy: Policy) -> list[str]:
    """Flavors tried in order, the unassigned capacity on the root Cohort, the cohorts below it."""
    notes = []
    if any(s.flavor_order is not None or s.flavor_fungibility != DEFAULT_FUNGIBILITY for s in policy.shares):
        notes.append(
            "A job that accepts several instance types leaves the nodeSelector out: Kueue then tries the "
            "ClusterQueue's flavors in the order listed (the share's flavor_order) under its "
            "flavorFungibility (absent: Kueue's defaults, whenCanBorrow Borrow, whenCanPreempt "
            "TryNextFlavor)."
        )
    unassigned = {t: _root_quota(policy, t) for t in policy.capacity if _root_quota(policy, t) > 0}
    if unassigned:
        counts = ", ".join(f"{n} x {t}" for t, n in unassigned.items())
        notes.append(
            f"Unassigned capacity ({counts}) is the root Cohort's own nominalQuota, which every ClusterQueue "
            "of its tree may borrow (Kueue hierarchical cohorts; the v1beta1 Cohort object needs a recent "
            "Kueue, v1alpha1 before)."
        )
    if policy.cohorts:
        notes.append(
            f"The policy's {len(policy.cohorts)} cohorts are Cohorts below the root Cohort (the policy's): "
            "each names its parent in spec.parent (v1beta1 and v1alpha1; v1beta2 calls it parentName), a "
            "top-level cohort names the root, since Kueue refuses borrowing and lending limits on a Cohort "
            "without a parent; each ClusterQueue names its cohort in spec.cohort (v1beta2: cohortName)."
        )
    return notes


def _limit_notes(policy: Policy) -> list[str]:
    """Limits Kueue writes otherwise: a percent borrowing limit, a lending limit above the quota."""
    notes = []
    for share in policy.shares:
        if share.strategy is Strategy.LEND_AND_BORROW and share.borrowing_limit is None:
            percent = share.borrow_limit_percent
            if percent is not None and percent >= 0:
                limits = ", ".join(f"{share.borrow_limit(t):g} x {t}" for t in policy.capacity)
                notes.append(
                    f"borrow_limit_percent {percent:g} of share {share.name} becomes an absolute "
                    f"borrowingLimit per flavor ({limits}): Kueue has no percent; an import reads it back "
                    "as borrowing_limit."
                )
        for type_name in policy.capacity:
            lend = share.lend_limit(type_name)
            if math.isfinite(lend) and lend > share.quota(type_name) and share.strategy.lends:
                notes.append(
                    f"lending_limit {lend:g} of share {share.name} for {type_name} is above its quota "
                    f"{share.quota(type_name)}: written as lendingLimit = nominalQuota (the same effect)."
                )
    return notes


def _annotation_notes(policy: Policy, prices: bool) -> list[str]:
    """Planner settings Kueue has no field for, kept as annotations (prices left out when asked)."""
    notes = []
    if policy.startup_seconds:
        notes.append(
            f"startup_seconds {policy.startup_seconds:g} has no Kueue setting (it is how long a started job "
            f"holds capacity before work): kept as annotation {ANNOTATION_STARTUP} on the Cohort."
        )
    priced = [t for t in policy.instance_types.values() if t.hourly_price]
    if not prices:
        notes.append(
            "Hourly prices are left out of this export (the reader's role does not read $ figures): an "
            "import takes 0 for a new instance type and keeps the planner's price of a known one."
        )
    elif priced:
        notes.append(
            "hourly_price has no Kueue setting: kept as annotation "
            f"{ANNOTATION_HOURLY_PRICE} on each ResourceFlavor."
        )
    return notes


def _renaming_notes(policy: Policy) -> list[str]:
    """Share and cohort names that are not Kubernetes names, and the names written instead."""
    notes = []
    renamed = [s.name for s in policy.shares if _dns_name(s.name, "share") != s.name]
    if renamed:
        notes.append(
            f"Share names {', '.join(renamed)} are not Kubernetes names: the ClusterQueues are named in "
            f"lower case with - and keep the planner name in annotation {ANNOTATION_SHARE}."
        )
    cohort_names = _cohort_names(policy, _dns_name(policy.name, "planner"))
    renamed = [c.name for c in policy.cohorts if cohort_names[c.name] != c.name]
    if renamed:
        notes.append(
            f"Cohort names {', '.join(renamed)} are not Kubernetes names (or are the root's): the Cohorts "
            f"are named in lower case with - and keep the planner name in annotation {ANNOTATION_COHORT}."
        )
    return notes


def _section_8_to_10_notes(policy: Policy) -> list[str]:
    """Fair sharing lives in Kueue's Configuration, not in the objects; the calendar and the
    RUNNABLE limit have no Kueue setting at all."""
    notes = []
    if policy.fair_sharing is not None:
        strategies = ", ".join(s.value for s in policy.fair_sharing.preemption_strategies)
        notes.append(
            "Fair sharing is on: Kueue's Configuration (the controller manager's config file, "
            f"apiVersion {CONFIG_API_VERSION}, kind Configuration) must enable it with the policy's "
            f"strategies: fairSharing: {{enable: true, preemptionStrategies: [{strategies}]}}. Each "
            "ClusterQueue and each Cohort below the root carries its weight as spec.fairSharing.weight. "
            "An import reads the strategies back from that Configuration when it is given, else from "
            f"annotation {ANNOTATION_FAIR_SHARING} on the root Cohort."
        )
    elif any(node.fair_weight != 1 for node in (*policy.shares, *policy.cohorts)):
        notes.append(
            "Fair sharing is off: the weights are written as spec.fairSharing.weight but Kueue "
            "uses them only when its Configuration enables fairSharing."
        )
    if policy.changes:
        when = changes_in_words(policy.changes, lambda share: "the pool" if share is None else share)
        notes.append(
            f"Kueue has no dated capacity or quotas: the calendar's {len(policy.changes)} changes are not "
            f"applied by these objects ({when}). Change the nominalQuotas at those times (a training plan: "
            f"up at its start, down at its end); they are kept as annotation {ANNOTATION_CHANGES} on the "
            "Cohort, which an import reads back."
        )
    if policy.runnable_timeout_seconds is not None:
        notes.append(
            f"runnable_timeout_seconds {policy.runnable_timeout_seconds:g} (cancel a job queued that long) "
            "has no Kueue setting (waitForPodsReady is about pods starting once admitted): kept as "
            f"annotation {ANNOTATION_RUNNABLE_TIMEOUT} on the Cohort."
        )
    return notes


def _cohort_annotations(policy: Policy) -> dict[str, str]:
    """Sections 8-10 as Cohort annotations (JSON for the calendar: one string, emitted by YAML)."""
    out = {}
    if policy.fair_sharing is not None:
        out[ANNOTATION_FAIR_SHARING] = ",".join(s.value for s in policy.fair_sharing.preemption_strategies)
    if policy.changes:
        out[ANNOTATION_CHANGES] = json.dumps(policy.to_dict()["changes"], separators=(",", ":"))
    if policy.runnable_timeout_seconds is not None:
        out[ANNOTATION_RUNNABLE_TIMEOUT] = _number_text(policy.runnable_timeout_seconds)
    return out


def _root_quota(policy: Policy, type_name: str) -> int:
    """The root's own quota: the pool's capacity that neither a share nor a cohort holds."""
    return policy.unassigned(type_name) - sum(c.capacity.get(type_name, 0) for c in policy.cohorts)


def _cohort(policy: Policy, name: str, flavors: Mapping[str, str], gpu_resource: str) -> dict[str, Any]:
    """The root Cohort: the policy's, holding the unassigned capacity and the policy's annotations."""
    spec: dict[str, Any] = {}
    unassigned = [(t, _root_quota(policy, t)) for t in flavors if _root_quota(policy, t) > 0]
    if unassigned:
        spec["resourceGroups"] = [
            {
                "coveredResources": [gpu_resource],
                "flavors": [
                    {
                        "name": flavors[t],
                        "resources": [{"name": gpu_resource, "nominalQuota": _gpus(policy, t, count)}],
                    }
                    for t, count in unassigned
                ],
            }
        ]
    return {
        "apiVersion": API_VERSION,
        "kind": "Cohort",
        "metadata": {
            "name": name,
            "annotations": {
                ANNOTATION_POLICY: policy.name,
                ANNOTATION_STARTUP: _number_text(policy.startup_seconds),
                **_cohort_annotations(policy),
            },
        },
        "spec": spec,
    }


def _tree_cohort(
    policy: Policy,
    cohort: Cohort,
    names: Mapping[str | None, str],
    flavors: Mapping[str, str],
    gpu_resource: str,
) -> dict[str, Any]:
    """A section 13 cohort: its parent (the root Cohort for a top-level one), its own nominalQuota and
    its limits per flavor (a flavor listed when it has any of them), its fair weight."""
    entries = []
    for type_name, flavor in flavors.items():
        resource: dict[str, Any] = {
            "name": gpu_resource, "nominalQuota": _gpus(policy, type_name, cohort.capacity.get(type_name, 0))
        }  # fmt: skip
        limits = (("borrowingLimit", cohort.borrowing_limit), ("lendingLimit", cohort.lending_limit))
        for key, limit in limits:
            if limit is not None and type_name in limit:
                resource[key] = _gpus(policy, type_name, limit[type_name])
        if type_name in cohort.capacity or len(resource) > 2:
            entries.append({"name": flavor, "resources": [resource]})
    spec: dict[str, Any] = {"parent": names[cohort.parent]}
    if policy.fair_sharing is not None or cohort.fair_weight != 1:
        spec["fairSharing"] = {"weight": cohort.fair_weight}
    if entries:
        spec["resourceGroups"] = [{"coveredResources": [gpu_resource], "flavors": entries}]
    return {
        "apiVersion": API_VERSION,
        "kind": "Cohort",
        "metadata": {"name": names[cohort.name], "annotations": {ANNOTATION_COHORT: cohort.name}},
        "spec": spec,
    }


def _resource_flavor(policy: Policy, type_name: str, flavor: str, prices: bool) -> dict[str, Any]:
    instance_type = policy.instance_types[type_name]
    annotations = {
        ANNOTATION_INSTANCE_TYPE: type_name,
        ANNOTATION_GPUS: _number_text(instance_type.gpus),
    }
    if prices:
        annotations[ANNOTATION_HOURLY_PRICE] = _number_text(instance_type.hourly_price)
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceFlavor",
        "metadata": {"name": flavor, "annotations": annotations},
        "spec": {"nodeLabels": {INSTANCE_TYPE_LABEL: type_name}},
    }


def _cluster_queue(
    policy: Policy, share: Share, name: str, cohort: str, flavors: Mapping[str, str], gpu_resource: str
) -> dict[str, Any]:
    flavor_quotas = []
    for type_name in policy.types_in_order(share.name):  # section 12: the order Kueue tries them in
        flavor = flavors[type_name]
        quota = share.quota(type_name)
        resource: dict[str, Any] = {"name": gpu_resource, "nominalQuota": _gpus(policy, type_name, quota)}
        borrow = share.borrow_limit(type_name)  # 0 for RESERVE and LEND
        if math.isfinite(borrow):
            resource["borrowingLimit"] = _gpus(policy, type_name, borrow)
        lend = share.lend_limit(type_name)  # 0 for RESERVE
        if math.isfinite(lend):
            resource["lendingLimit"] = _gpus(policy, type_name, min(lend, quota))
        flavor_quotas.append({"name": flavor, "resources": [resource]})
    annotations = {ANNOTATION_SHARE: share.name}
    fair: dict[str, Any] = {}  # (and flavorFungibility: the spec's keys written only when needed)
    if policy.fair_sharing is not None or share.fair_weight != 1:
        fair["fairSharing"] = {"weight": share.fair_weight}
    fungibility = share.flavor_fungibility
    if fungibility != DEFAULT_FUNGIBILITY:
        written = {
            "whenCanBorrow": WHEN_CAN_BORROW[fungibility.when_can_borrow],
            "whenCanPreempt": WHEN_CAN_PREEMPT[fungibility.when_can_preempt],
        }
        if fungibility.preference is not DEFAULT_FUNGIBILITY.preference:
            written["preference"] = fungibility.preference.value
        fair["flavorFungibility"] = written
    return {
        "apiVersion": API_VERSION,
        "kind": "ClusterQueue",
        "metadata": {"name": name, "annotations": annotations},
        "spec": {
            **fair,
            "cohort": cohort,
            "namespaceSelector": {},
            "queueingStrategy": QUEUEING_STRATEGY[policy.queueing],
            "preemption": {
                "reclaimWithinCohort": RECLAIM_WITHIN_COHORT[share.reclaim],
                "withinClusterQueue": WITHIN_CLUSTER_QUEUE[share.in_share_preemption],
                "borrowWithinCohort": {"policy": "Never"},
            },
            "resourceGroups": [{"coveredResources": [gpu_resource], "flavors": flavor_quotas}],
        },
    }


def _priority_class(priority: int) -> dict[str, Any]:
    return {
        "apiVersion": API_VERSION,
        "kind": "WorkloadPriorityClass",
        "metadata": {"name": f"priority-{priority}"},
        "value": priority,
        "description": f"planner priority {priority} (higher runs first)",
    }


def _check_priorities(priorities: Iterable[int]) -> list[int]:
    out = []
    for p in priorities:
        if isinstance(p, bool) or not isinstance(p, int) or not 0 <= p <= MAX_PRIORITY:
            raise InputError(f"{p!r} is not a priority from 0 to {MAX_PRIORITY}", field="priorities")
        out.append(p)
    return out


def _gpus(policy: Policy, type_name: str, instances: float) -> int | float:
    value = instances * policy.instance_types[type_name].gpus
    return int(value) if float(value).is_integer() else value


def _flavor_names(policy: Policy) -> dict[str, str]:
    """Instance type -> ResourceFlavor name, for every type the pool or any share names."""
    types = list(policy.capacity)
    types += [t for t in policy.instance_types if t not in policy.capacity]
    used: set[str] = set()
    return {t: _unique(_dns_name(t, "flavor"), used) for t in types}


def _cohort_names(policy: Policy, root: str) -> dict[str | None, str]:
    """Planner cohort -> Cohort name, apart from the root's; None (the planner's root) -> ``root``."""
    used = {root}
    names: dict[str | None, str] = {None: root}
    names.update((c.name, _unique(_dns_name(c.name, "cohort"), used)) for c in policy.cohorts)
    return names


def _share_names(policy: Policy) -> dict[str, str]:
    used: set[str] = set()
    return {s.name: _unique(_dns_name(s.name, "share"), used) for s in policy.shares}


# ---------------------------------------------------------------------------------------
# Import


def from_kueue_yaml(text: str | bytes, *, gpu_resource: str = GPU_RESOURCE) -> dict[str, Any]:
    """The policy dict of Kueue v1beta1 YAML (documents, or ``kind: List`` from kubectl).

    Reads the Cohorts (their trees as ``cohorts``, see the module's docstring), ResourceFlavors and
    ClusterQueues; other kinds and resources other than
    ``gpu_resource`` are listed in the policy's description as not used. A flavor counts instances of
    ``planner/gpus-per-instance`` GPUs (1 when the annotation is absent: the flavor is counted in GPUs).
    Raises InputError naming the object (``ClusterQueue/team-a``) and the field.
    """
    objects = _KueueObjects.sort(_load_documents(text))
    types = _read_flavors(objects.flavors)
    notes: list[str] = [
        f"{label} has no {ANNOTATION_GPUS}: counted in GPUs (1 per instance)."
        for label, document in objects.flavors.values()
        if ANNOTATION_GPUS not in _annotations(label, document)
    ]
    queueing = _one_queueing(objects.queues)
    pool: dict[str, int] = {}
    shares = []
    for label, document in objects.queues:
        share = _read_cluster_queue(label, document, types, gpu_resource, notes)
        for type_name, count in share["capacity"].items():
            pool[type_name] = pool.get(type_name, 0) + count
        shares.append(share)
    forest = _CohortForest.read(objects.cohorts, objects.queues)
    tree = forest.planner_tree(objects.queues, {s["name"] for s in shares}, types, gpu_resource, notes)
    for share, (label, _) in zip(shares, objects.queues, strict=True):
        if tree.share_cohorts.get(label):
            share["cohort"] = tree.share_cohorts[label]
    for cohort in tree.cohorts:
        for flavor, count in cohort["capacity"].items():
            pool[flavor] = pool.get(flavor, 0) + count
    policy_name, startup, extras = _policy_settings(objects.cohorts, tree, types, gpu_resource, pool, notes)
    _fair_sharing(extras, objects.configuration, shares, tree, notes)
    ignored = objects.ignored + [objects.cohorts[name][0] for name in forest.unused(tree.roots)]
    instance_types = {t: {"gpus": gpus, "hourly_price": price} for t, gpus, price in types.values()}
    if ignored:
        notes.append(f"not used: {', '.join(ignored)}")
    if objects.priority_classes:
        classes = ", ".join(objects.priority_classes)
        notes.append(f"WorkloadPriorityClasses (a job's priority is in the trace): {classes}")
    data = {
        "name": policy_name,
        "description": " ".join([tree.summary] + notes),
        "instance_types": instance_types,
        "capacity": {types[flavor][0]: count for flavor, count in pool.items()},
        "queueing": queueing.value,
        "startup_seconds": startup,
        "shares": shares,
        **extras,
    }
    _name_types(shares, tree.cohorts, types)
    if tree.cohorts:
        data["cohorts"] = tree.cohorts
    data["capacity"] = {t: n for t, n in data["capacity"].items() if n}
    try:
        Policy.from_dict(data)
    except InputError as error:
        raise InputError(f"the imported policy: {error.reason}", field=error.field) from None
    return data


@dataclass
class _KueueObjects:
    """The documents by kind, each with its label (``ClusterQueue/team-a``) for messages."""

    cohorts: dict[str, tuple[str, Mapping[str, Any]]]
    flavors: dict[str, tuple[str, Mapping[str, Any]]]
    queues: list[tuple[str, Mapping[str, Any]]]
    ignored: list[str]  # labels of the kinds the planner does not read
    priority_classes: list[str]  # ``name=value``, listed in the description
    configuration: dict[str, Any] | None  # Kueue's Configuration (fair sharing), when given

    @classmethod
    def sort(cls, documents: list[tuple[str, Mapping[str, Any]]]) -> _KueueObjects:
        objects = cls({}, {}, [], [], [], None)
        for label, document in documents:
            kind = document["kind"]
            name = document["metadata"]["name"]
            if kind == "Configuration" and document.get("apiVersion") == CONFIG_API_VERSION:
                objects.configuration = _read_configuration(label, document)
            elif kind == "Cohort":
                objects.cohorts[name] = (label, document)
            elif kind == "ResourceFlavor":
                objects.flavors[name] = (label, document)
            elif kind == "ClusterQueue":
                objects.queues.append((label, document))
            elif kind == "WorkloadPriorityClass":
                value = document.get("value")
                if isinstance(value, bool) or not isinstance(value, int):
                    raise InputError(f"{value!r} is not a whole number", field=f"{label}.value")
                objects.priority_classes.append(f"{name}={value}")
            else:
                objects.ignored.append(label)
        if not objects.queues:
            raise InputError("no ClusterQueue: the planner needs one per share", field="document 1")
        return objects


def _one_queueing(queues: list[tuple[str, Mapping[str, Any]]]) -> Queueing:
    """The ClusterQueues' queueingStrategy: the planner has one per policy, so they must agree."""
    strategies = {_queueing_of(label, document) for label, document in queues}
    if len(strategies) > 1:
        raise InputError(
            "ClusterQueues mix StrictFIFO and BestEffortFIFO: the planner has one queueing rule per policy",
            field=f"{queues[0][0]}.spec.queueingStrategy",
        )
    return strategies.pop()


def _policy_settings(
    cohorts: dict[str, tuple[str, Mapping[str, Any]]],
    tree: _PlannerTree,
    types: dict[str, tuple[str, float, float]],
    gpu_resource: str,
    pool: dict[str, int],
    notes: list[str],
) -> tuple[str, float, dict[str, Any]]:
    """(name, startup_seconds, other settings) of the policy: read from the root Cohort, or with
    several trees from the root the planner's export marked, if any."""
    root = tree.root
    policy_name, startup, extras = root or "kueue-import", 0, {}
    if root in cohorts:
        label, cohort = cohorts[root]
        policy_name, startup, extras = _read_cohort(label, cohort, types, gpu_resource, pool, notes)
    else:
        listed = [cohorts[r] for r in tree.roots if r in cohorts]
        marked = [(at, doc) for at, doc in listed if ANNOTATION_POLICY in _annotations(at, doc)]
        if marked:
            policy_name, startup, extras = _read_policy_annotations(*marked[0])
    return policy_name, startup, extras


def _fair_sharing(
    extras: dict[str, Any],
    configuration: dict[str, Any] | None,
    shares: list[dict[str, Any]],
    tree: _PlannerTree,
    notes: list[str],
) -> None:
    """Kueue's Configuration, when given, says whether fair sharing is on (over the root Cohort's
    annotation); weights without it are noted as unused."""
    if configuration is not None:
        extras.pop("fair_sharing", None)
        if configuration["enable"]:
            extras["fair_sharing"] = configuration["fair_sharing"]
    if "fair_sharing" not in extras and (
        any("fair_weight" in share for share in shares) or any("fair_weight" in c for c in tree.cohorts)
    ):
        notes.append(
            "ClusterQueues or Cohorts have fairSharing weights but no Configuration enabling fairSharing was "
            "given: fair sharing is off (import the Configuration with them to turn it on)."
        )


def _read_flavors(
    flavors: Mapping[str, tuple[str, Mapping[str, Any]]],
) -> dict[str, tuple[str, float, float]]:
    """ResourceFlavor name -> (instance type, GPUs per instance, hourly price); one flavor per type."""
    types = {name: _read_flavor(label, document) for name, (label, document) in flavors.items()}
    seen: dict[str, str] = {}
    for flavor, (type_name, _, _) in types.items():
        if type_name in seen:
            raise InputError(
                f"instance type {type_name} is also ResourceFlavor {seen[type_name]}: one flavor per type",
                field=f"ResourceFlavor/{flavor}.metadata.annotations.{ANNOTATION_INSTANCE_TYPE}",
            )
        seen[type_name] = flavor
    return types


def _name_types(
    shares: list[dict[str, Any]], cohorts: list[dict[str, Any]], types: Mapping[str, tuple[str, float, float]]
) -> None:
    """Shares and cohorts read per flavor name, renamed to their instance types (zero quotas left out:
    zero is the same as none); a share's flavors become its flavor_order."""
    type_order = [t for t, _, _ in types.values()]
    for share in shares:
        listed = [types[f][0] for f in share.pop("flavors")]
        order = canonical_flavor_order(listed, type_order)
        if order is not None:  # section 12: the order the ClusterQueue lists its flavors in
            share["flavor_order"] = list(order)
    for node in [*shares, *cohorts]:
        node["capacity"] = {types[f][0]: n for f, n in node["capacity"].items() if n}
        for key in ("borrowing_limit", "lending_limit"):
            if key in node:
                node[key] = {types[f][0]: n for f, n in node[key].items()}


def _load_documents(text: str | bytes) -> list[tuple[str, Mapping[str, Any]]]:
    check_yaml_nesting(text)  # before the loader, which builds nested collections recursively
    try:
        raw = [doc for doc in yaml.safe_load_all(text) if doc is not None]
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(error, "problem", None) or "cannot be read"
        raise InputError(f"not valid YAML: {problem}{where}") from None
    flat: list[tuple[int, Any]] = []
    for i, document in enumerate(raw):
        if isinstance(document, Mapping) and document.get("kind") == "List":
            items = document.get("items")
            if not isinstance(items, list):
                raise InputError("a List needs items", field=f"document {i + 1}.items")
            flat += [(i, item) for item in items]
        else:
            flat.append((i, document))
    if not flat:
        raise InputError("no YAML documents")
    out = []
    for i, document in flat:
        where = f"document {i + 1}"
        if not isinstance(document, Mapping):
            raise InputError("must be a Kubernetes object (apiVersion, kind, metadata)", field=where)
        kind = document.get("kind")
        if not isinstance(kind, str) or not kind:
            raise InputError("needs a kind", field=f"{where}.kind")
        metadata = document.get("metadata")
        name = metadata.get("name") if isinstance(metadata, Mapping) else None
        if not isinstance(name, str) or not name:
            raise InputError("needs metadata.name", field=f"{where} ({kind}).metadata.name")
        label = f"{kind}/{name}"
        api_version = document.get("apiVersion")
        if kind in {"Cohort", "ResourceFlavor", "ClusterQueue", "WorkloadPriorityClass"} and (
            api_version != API_VERSION
        ):
            raise InputError(
                f"{api_version!r} is not {API_VERSION}, the version this import reads",
                field=f"{label}.apiVersion",
            )
        out.append((label, document))
    return out


def _read_flavor(label: str, document: Mapping[str, Any]) -> tuple[str, float, float]:
    """(instance type name, GPUs per instance, hourly price) of a ResourceFlavor."""
    annotations = _annotations(label, document)
    type_name = annotations.get(ANNOTATION_INSTANCE_TYPE) or document["metadata"]["name"]
    gpus = _annotation_number(annotations, ANNOTATION_GPUS, label, default=1, positive=True)
    price = _annotation_number(annotations, ANNOTATION_HOURLY_PRICE, label, default=0)
    return str(type_name), gpus, price


def _cohort_of(label: str, document: Mapping[str, Any]) -> str:
    cohort = _spec(label, document).get("cohort", "")
    if not isinstance(cohort, str):
        raise InputError("must be a cohort name", field=f"{label}.spec.cohort")
    return cohort


def _queueing_of(label: str, document: Mapping[str, Any]) -> Queueing:
    strategy = _spec(label, document).get("queueingStrategy", "BestEffortFIFO")
    for queueing, name in QUEUEING_STRATEGY.items():
        if strategy == name:
            return queueing
    raise InputError(
        f"{strategy!r} is not StrictFIFO or BestEffortFIFO", field=f"{label}.spec.queueingStrategy"
    )


def _read_cluster_queue(
    label: str,
    document: Mapping[str, Any],
    types: Mapping[str, tuple[str, float, float]],
    gpu_resource: str,
    notes: list[str],
) -> dict[str, Any]:
    """A share, per flavor name (the caller renames flavors to instance types)."""
    spec = _spec(label, document)
    quotas = _read_resource_groups(label, spec, types, gpu_resource, notes)
    name = _annotations(label, document).get(ANNOTATION_SHARE) or document["metadata"]["name"]
    preemption = spec.get("preemption") or {}
    if not isinstance(preemption, Mapping):
        raise InputError("must be an object", field=f"{label}.spec.preemption")
    reclaim = _enum_of(RECLAIM_WITHIN_COHORT, preemption.get("reclaimWithinCohort", "Never"),
                       f"{label}.spec.preemption.reclaimWithinCohort")  # fmt: skip
    within = _enum_of(WITHIN_CLUSTER_QUEUE, preemption.get("withinClusterQueue", "Never"),
                      f"{label}.spec.preemption.withinClusterQueue")  # fmt: skip
    borrow_within = preemption.get("borrowWithinCohort") or {}
    if isinstance(borrow_within, Mapping) and borrow_within.get("policy", "Never") != "Never":
        notes.append(f"{label}: borrowWithinCohort {borrow_within.get('policy')} is not modelled (Never).")
    share: dict[str, Any] = {
        "name": str(name),
        "capacity": {flavor: q[0] for flavor, q in quotas.items()},
        "in_share_preemption": within.value,
        "reclaim": reclaim.value,
        "flavors": list(quotas),  # (in the order listed; made flavor_order by the caller)
    }
    fungibility = _read_fungibility(label, spec.get("flavorFungibility"))
    if fungibility is not None:
        share["flavor_fungibility"] = fungibility
    weight = _fair_weight(label, spec)
    if weight is not None:
        share["fair_weight"] = weight
    if not _cohort_of(label, document):
        share["strategy"] = Strategy.RESERVE.value
        notes.append(f"{label} is in no cohort: imported as RESERVE (it neither lends nor borrows).")
        return share
    borrowing = {flavor: q[1] for flavor, q in quotas.items() if q[1] is not None}
    lending = {flavor: q[2] for flavor, q in quotas.items() if q[2] is not None}
    if quotas and all(q[1] == 0 and q[2] == 0 for q in quotas.values()):
        share["strategy"] = Strategy.RESERVE.value
    elif quotas and all(q[1] == 0 for q in quotas.values()):
        share["strategy"] = Strategy.LEND.value
        if lending:
            share["lending_limit"] = lending
    else:
        share["strategy"] = Strategy.LEND_AND_BORROW.value
        # A flavor the ClusterQueue does not list cannot be borrowed by it.
        borrowing |= {flavor: 0 for flavor in types if flavor not in quotas}
        if borrowing:
            share["borrowing_limit"] = borrowing
        if lending:
            share["lending_limit"] = lending
    return share


def _fair_weight(label: str, spec: Mapping[str, Any]) -> int | float | None:
    """spec.fairSharing.weight of a ClusterQueue or a Cohort (None: not set, Kueue's 1)."""
    fair = spec.get("fairSharing")
    if fair is None:
        return None
    if not isinstance(fair, Mapping):
        raise InputError("must be an object with weight", field=f"{label}.spec.fairSharing")
    if "weight" not in fair:
        return None
    weight = parse_quantity(fair["weight"], f"{label}.spec.fairSharing.weight")
    return int(weight) if weight.denominator == 1 else float(weight)


def _read_fungibility(label: str, raw: Any) -> dict[str, str] | None:
    """spec.flavorFungibility as section 12's flavor_fungibility (None: Kueue's defaults)."""
    if raw is None:
        return None
    where = f"{label}.spec.flavorFungibility"
    if not isinstance(raw, Mapping):
        raise InputError("must be an object with whenCanBorrow and whenCanPreempt", field=where)
    read = {
        "when_can_borrow": _when_can(raw.get("whenCanBorrow", "Borrow"), "Borrow", f"{where}.whenCanBorrow"),
        "when_can_preempt": _when_can(
            raw.get("whenCanPreempt", "TryNextFlavor"), "Preempt", f"{where}.whenCanPreempt"
        ),
    }
    preference = raw.get("preference")
    if preference is not None:
        allowed = [p.value for p in FlavorPreference]
        if preference not in allowed:
            raise InputError(
                f"{preference!r} is not one of {', '.join(allowed)}", field=f"{where}.preference"
            )
        read["preference"] = preference
    default = {
        "when_can_borrow": DEFAULT_FUNGIBILITY.when_can_borrow.value,
        "when_can_preempt": DEFAULT_FUNGIBILITY.when_can_preempt.value,
        "preference": DEFAULT_FUNGIBILITY.preference.value,
    }
    return None if {**default, **read} == default else read


def _when_can(value: Any, v1beta1_stop: str, where: str) -> str:
    """whenCanBorrow / whenCanPreempt: MayStopSearch (v1beta1 Borrow / Preempt) or TryNextFlavor."""
    if value in (v1beta1_stop, WhenCan.MAY_STOP_SEARCH.value):
        return WhenCan.MAY_STOP_SEARCH.value
    if value == WhenCan.TRY_NEXT_FLAVOR.value:
        return value
    raise InputError(f"{value!r} is not one of {v1beta1_stop}, MayStopSearch, TryNextFlavor", field=where)


def _read_resource_groups(
    label: str,
    spec: Mapping[str, Any],
    types: Mapping[str, tuple[str, float, float]],
    gpu_resource: str,
    notes: list[str],
) -> dict[str, tuple[int, int | None, int | None]]:
    """Flavor -> (nominalQuota, borrowingLimit, lendingLimit) in instances, for ``gpu_resource``."""
    groups = spec.get("resourceGroups") or []
    if not isinstance(groups, list):
        raise InputError("must be a list", field=f"{label}.spec.resourceGroups")
    quotas: dict[str, tuple[int, int | None, int | None]] = {}
    other_resources: set[str] = set()
    for g, group in enumerate(groups):
        flavors = group.get("flavors") if isinstance(group, Mapping) else None
        if not isinstance(flavors, list):
            raise InputError("needs a list of flavors", field=f"{label}.spec.resourceGroups[{g}].flavors")
        for f, flavor in enumerate(flavors):
            where = f"{label}.spec.resourceGroups[{g}].flavors[{f}]"
            if not isinstance(flavor, Mapping) or not isinstance(flavor.get("name"), str):
                raise InputError("needs a name and resources", field=where)
            flavor_name = flavor["name"]
            resources = flavor.get("resources")
            if not isinstance(resources, list):
                raise InputError("needs a list of resources", field=f"{where}.resources")
            for r, resource in enumerate(resources):
                at = f"{where}.resources[{r}]"
                if not isinstance(resource, Mapping) or not isinstance(resource.get("name"), str):
                    raise InputError("needs a name and a nominalQuota", field=at)
                if resource["name"] != gpu_resource:
                    other_resources.add(resource["name"])
                    continue
                if flavor_name not in types:
                    raise InputError(
                        f"no ResourceFlavor named {flavor_name!r} among the documents", field=f"{where}.name"
                    )
                if flavor_name in quotas:
                    raise InputError(f"flavor {flavor_name} is listed twice", field=f"{where}.name")
                gpus = types[flavor_name][1]
                if "nominalQuota" not in resource:
                    raise InputError("needs a nominalQuota", field=f"{at}.nominalQuota")
                quotas[flavor_name] = (
                    _instances(resource["nominalQuota"], gpus, f"{at}.nominalQuota"),
                    _instances(resource["borrowingLimit"], gpus, f"{at}.borrowingLimit")
                    if resource.get("borrowingLimit") is not None
                    else None,
                    _instances(resource["lendingLimit"], gpus, f"{at}.lendingLimit")
                    if resource.get("lendingLimit") is not None
                    else None,
                )
    if other_resources:
        notes.append(f"{label}: quotas of {', '.join(sorted(other_resources))} are not used (GPUs only).")
    return quotas


@dataclass
class _PlannerTree:
    """The Kueue cohort trees that hold ClusterQueues, as section 13's ``cohorts``."""

    root: str  # the Kueue cohort that is the planner's root ("" when there is none, or several trees)
    roots: list[str]  # the Kueue roots of the trees that hold ClusterQueues
    cohorts: list[dict[str, Any]]  # planner cohorts, quotas and limits per flavor name
    share_cohorts: dict[str, str]  # ClusterQueue label -> planner cohort (absent: the planner's root)
    summary: str


@dataclass
class _CohortForest:
    """Kueue's cohorts as Kueue builds them: the Cohort objects, and an implicit empty cohort (no quota,
    no limits, no parent) for each name a ClusterQueue's cohort or a Cohort's parent gives without an
    object."""

    documents: Mapping[str, tuple[str, Mapping[str, Any]]]
    parents: dict[str, str]  # every cohort's parent ("" for the root of a tree)
    implicit: dict[str, str]  # implicit cohort -> the label of the first object naming it
    order: list[str]  # the listed cohorts in document order, then the implicit ones
    roots: dict[str, str]  # every cohort's root

    @classmethod
    def read(
        cls,
        documents: Mapping[str, tuple[str, Mapping[str, Any]]],
        queues: list[tuple[str, Mapping[str, Any]]],
    ) -> _CohortForest:
        parents = {name: _parent_of(label, document) for name, (label, document) in documents.items()}
        named = [(parents[name], label) for name, (label, _) in documents.items()]
        named += [(_cohort_of(label, document), label) for label, document in queues]
        implicit: dict[str, str] = {}
        for name, label in named:
            if name and name not in documents:
                implicit.setdefault(name, label)
        parents.update(dict.fromkeys(implicit, ""))
        order = [*documents, *implicit]
        if len(order) > MAX_SHARES:
            label = documents[order[MAX_SHARES]][0] if order[MAX_SHARES] in documents else "Cohort"
            raise InputError(f"{len(order)} cohorts: a policy has at most {MAX_SHARES}", field=label)
        return cls(documents, parents, implicit, order, _roots(documents, parents, order))

    def root_of(self, name: str) -> str:
        return self.roots[name]

    def unused(self, roots: list[str]) -> list[str]:
        """Listed cohorts of trees without a ClusterQueue: nobody can use their quota."""
        return [name for name in self.documents if self.root_of(name) not in roots]

    def planner_tree(
        self,
        queues: list[tuple[str, Mapping[str, Any]]],
        share_names: set[str],
        types: Mapping[str, tuple[str, float, float]],
        gpu_resource: str,
        notes: list[str],
    ) -> _PlannerTree:
        """One tree holds every ClusterQueue: its root is the planner's root (its own quota the
        unassigned capacity). Several trees: **(choice)** the planner's root is above them all, and the
        root of each is a top-level cohort with borrowing and lending limits 0 for every type, so that no
        tree lends to or borrows from another, as in Kueue."""
        queue_cohorts = {label: _cohort_of(label, document) for label, document in queues}
        roots = list(dict.fromkeys(self.root_of(c) for c in queue_cohorts.values() if c))
        root = roots[0] if len(roots) == 1 else ""
        members = [name for name in self.order if self.root_of(name) in roots and name != root]
        for name in members + [root] * bool(root):
            if name in self.implicit:
                notes.append(
                    f"Cohort {name} (named by {self.implicit[name]}) is not listed: an implicit cohort "
                    "with no quota and no limits, as Kueue creates it."
                )
        names = self._planner_names(members, share_names, notes)
        cohorts = [self._planner_cohort(name, root, names, len(roots) > 1, types, gpu_resource, notes)
                   for name in members]  # fmt: skip
        share_cohorts = {label: names[c] for label, c in queue_cohorts.items() if c and c != root}
        return _PlannerTree(root, roots, cohorts, share_cohorts, _tree_summary(root, roots, members))

    def _planner_names(self, members: list[str], share_names: set[str], notes: list[str]) -> dict[str, str]:
        """Kueue name -> planner name (the export's annotation, else the Kueue name), apart from every
        share name: Kueue keeps Cohorts and ClusterQueues apart, the planner's tree has one namespace."""
        used = set(share_names)
        names = {}
        for name in members:
            wanted = name
            if name in self.documents:
                label, document = self.documents[name]
                wanted = str(_annotations(label, document).get(ANNOTATION_COHORT) or name)
            planner, n = wanted, 1
            while planner in used:
                planner, n = f"{wanted}-cohort" + (f"-{n}" if n > 1 else ""), n + 1
            if planner != wanted:
                notes.append(f"Cohort {name} is named {planner} here: a share already has the name {wanted}.")
            used.add(planner)
            names[name] = planner
        return names

    def _planner_cohort(
        self,
        name: str,
        root: str,
        names: Mapping[str, str],
        fenced: bool,
        types: Mapping[str, tuple[str, float, float]],
        gpu_resource: str,
        notes: list[str],
    ) -> dict[str, Any]:
        """A Cohort as section 13's cohort: quotas and limits per flavor (renamed by the caller)."""
        out: dict[str, Any] = {"name": names[name]}
        parent = self.parents[name]
        if parent and parent != root:
            out["parent"] = names[parent]
        quotas: dict[str, tuple[int, int | None, int | None]] = {}
        if name in self.documents:
            label, document = self.documents[name]
            spec = _spec(label, document)
            quotas = _read_resource_groups(label, spec, types, gpu_resource, notes)
            weight = _fair_weight(label, spec)
            if weight is not None:
                out["fair_weight"] = weight
        out["capacity"] = {flavor: q[0] for flavor, q in quotas.items() if q[0]}
        if fenced and not parent:
            if any(q[1] is not None or q[2] is not None for q in quotas.values()):
                notes.append(
                    f"Cohort/{name} is the root of its tree: its borrowingLimit and lendingLimit are "
                    "not used (limits 0 keep its tree apart)."
                )
            out["borrowing_limit"] = dict.fromkeys(types, 0)
            out["lending_limit"] = dict.fromkeys(types, 0)
            return out
        borrowing = {flavor: q[1] for flavor, q in quotas.items() if q[1] is not None}
        lending = {flavor: q[2] for flavor, q in quotas.items() if q[2] is not None}
        if borrowing:
            out["borrowing_limit"] = borrowing
        if lending:
            out["lending_limit"] = lending
        return out


def _roots(
    documents: Mapping[str, tuple[str, Mapping[str, Any]]], parents: Mapping[str, str], order: list[str]
) -> dict[str, str]:
    """Every cohort's root, each walked once; a cycle of parents is refused naming its first Cohort
    (Kueue disables every member of one)."""
    roots: dict[str, str] = {}
    for start in order:
        path: list[str] = []
        on_path: set[str] = set()
        name = start
        while name not in roots and parents[name] and name not in on_path:
            path.append(name)
            on_path.add(name)
            name = parents[name]
        if name in on_path:
            cycle = [*path[path.index(name) :], name]
            raise InputError(
                f"a cycle of parents ({' -> '.join(cycle)}): Kueue disables every ClusterQueue and Cohort "
                "on it until it is broken",
                field=f"{documents[name][0]}.spec.parent",
            )
        root = roots.get(name, name)
        roots[name] = root
        roots.update(dict.fromkeys(path, root))
    return roots


def _tree_summary(root: str, roots: list[str], members: list[str]) -> str:
    if not roots:
        return "Imported from Kueue ClusterQueues in no cohort."
    if root:
        below = f" Its tree has {len(members)} cohorts below it: {', '.join(members)}." if members else ""
        return f"Imported from Kueue cohort {root}.{below}"
    return (
        f"Imported from {len(roots)} Kueue cohort trees ({', '.join(roots)}): each root is a top-level "
        "cohort with borrowing and lending limits 0, so that, as in Kueue, no tree lends to or borrows "
        "from another."
    )


def _parent_of(label: str, document: Mapping[str, Any]) -> str:
    """A Cohort's spec.parent (v1beta1, v1alpha1; v1beta2's parentName is renamed to it on reading)."""
    parent = _spec(label, document).get("parent") or ""
    if not isinstance(parent, str):
        raise InputError("must be a cohort name", field=f"{label}.spec.parent")
    if parent == document["metadata"]["name"]:
        raise InputError("a Cohort cannot be its own parent", field=f"{label}.spec.parent")
    return parent


def _read_cohort(
    label: str,
    document: Mapping[str, Any],
    types: Mapping[str, tuple[str, float, float]],
    gpu_resource: str,
    pool: dict[str, int],
    notes: list[str],
) -> tuple[str, float, dict[str, Any]]:
    """The root of the one Kueue cohort tree: adds its own nominalQuota (the planner's unassigned
    capacity) to ``pool``; its policy name, start-up and the sections 8-10 keys its planner annotations
    hold."""
    spec = _spec(label, document)
    quotas = _read_resource_groups(label, spec, types, gpu_resource, notes)
    for flavor, (quota, _, _) in quotas.items():
        pool[flavor] = pool.get(flavor, 0) + quota
    if any(borrow is not None or lend is not None for _, borrow, lend in quotas.values()):
        notes.append(
            f"{label} is the root of its tree: its borrowingLimit and lendingLimit are not used (it has no "
            "parent to borrow from or lend to; Kueue's webhook refuses them)."
        )
    return _read_policy_annotations(label, document)


def _read_policy_annotations(label: str, document: Mapping[str, Any]) -> tuple[str, float, dict[str, Any]]:
    """The policy name, start-up and the sections 8-10 keys a root Cohort's planner annotations hold."""
    annotations = _annotations(label, document)
    name = annotations.get(ANNOTATION_POLICY) or document["metadata"]["name"]
    startup = _annotation_number(annotations, ANNOTATION_STARTUP, label, default=0)
    extras: dict[str, Any] = {}
    if ANNOTATION_FAIR_SHARING in annotations:
        listed = str(annotations[ANNOTATION_FAIR_SHARING])
        extras["fair_sharing"] = {
            "preemption_strategies": [s.strip() for s in listed.split(",") if s.strip()]
        }
    if ANNOTATION_CHANGES in annotations:
        try:
            extras["changes"] = json.loads(str(annotations[ANNOTATION_CHANGES]))
        except ValueError:
            raise InputError(
                "is not the JSON list of changes the export writes",
                field=f"{label}.metadata.annotations.{ANNOTATION_CHANGES}",
            ) from None
    if ANNOTATION_RUNNABLE_TIMEOUT in annotations:
        extras["runnable_timeout_seconds"] = _annotation_number(
            annotations, ANNOTATION_RUNNABLE_TIMEOUT, label, default=0, positive=True
        )
    return str(name), startup, extras


def _read_configuration(label: str, document: Mapping[str, Any]) -> dict[str, Any]:
    """Kueue's Configuration: whether fairSharing is enabled, and its preemption strategies (the
    engine's validator says whether the list is one Kueue accepts)."""
    fair = document.get("fairSharing") or {}
    if not isinstance(fair, Mapping):
        raise InputError("must be an object", field=f"{label}.fairSharing")
    enable = fair.get("enable", False)
    if not isinstance(enable, bool):
        raise InputError(f"{enable!r} is not true or false", field=f"{label}.fairSharing.enable")
    out: dict[str, Any] = {}
    strategies = fair.get("preemptionStrategies")
    if strategies is not None:
        if not isinstance(strategies, list):
            raise InputError("must be a list", field=f"{label}.fairSharing.preemptionStrategies")
        out["preemption_strategies"] = strategies
    return {"enable": enable, "fair_sharing": out}


# ---------------------------------------------------------------------------------------
# Small shared pieces

_SUFFIXES = {
    "": Fraction(1),
    "m": Fraction(1, 1000),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
}
_QUANTITY = re.compile(
    r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE]([+-]?[0-9]+))?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E)?$"
)


def parse_quantity(value: Any, where: str) -> Fraction:
    """A Kubernetes resource quantity (``8``, ``"16"``, ``"500m"``, ``"1k"``) as an exact number."""
    if isinstance(value, bool):
        raise InputError(f"{value!r} is not a quantity", field=where)
    if isinstance(value, int):
        number = Fraction(value)
    elif isinstance(value, float) and math.isfinite(value):
        number = Fraction(str(value))
    else:
        match = _QUANTITY.match(str(value).strip())
        if not match:
            raise InputError(f"{value!r} is not a Kubernetes quantity", field=where)
        digits, exponent, suffix = match.groups()
        number = Fraction(digits) * Fraction(10) ** int(exponent or 0) * _SUFFIXES[suffix or ""]
    if number < 0:
        raise InputError(f"{value!r} is negative", field=where)
    return number


def _instances(value: Any, gpus: float, where: str) -> int:
    count = parse_quantity(value, where) / Fraction(str(gpus))
    if count.denominator != 1:
        raise InputError(
            f"{value!r} GPUs is not a whole number of instances of {gpus:g} GPUs "
            f"(annotation {ANNOTATION_GPUS} of the flavor)",
            field=where,
        )
    return int(count)


def _spec(label: str, document: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = document.get("spec") or {}
    if not isinstance(spec, Mapping):
        raise InputError("must be an object", field=f"{label}.spec")
    return spec


def _annotations(label: str, document: Mapping[str, Any]) -> Mapping[str, Any]:
    annotations = document["metadata"].get("annotations") or {}
    if not isinstance(annotations, Mapping):
        raise InputError("must be an object", field=f"{label}.metadata.annotations")
    return annotations


def _annotation_number(
    annotations: Mapping[str, Any], key: str, label: str, *, default: float, positive: bool = False
) -> float:
    if key not in annotations:
        return default
    value = annotations[key]
    try:
        number = float(str(value).strip())
    except ValueError:
        raise InputError(f"{value!r} is not a number", field=f"{label}.metadata.annotations.{key}") from None
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        raise InputError(
            f"{value!r} must be a finite number above {'0' if positive else 'or at 0'}",
            field=f"{label}.metadata.annotations.{key}",
        )
    return int(number) if number.is_integer() else number


def _enum_of(mapping: Mapping[Any, str], value: Any, where: str):
    for member, name in mapping.items():
        if value == name:
            return member
    raise InputError(f"{value!r} is not one of {', '.join(mapping.values())}", field=where)


def _dns_name(text: str, fallback: str) -> str:
    """A Kubernetes object name (RFC 1123 subdomain): lower case, digits, - and ., at most 253."""
    if _DNS_NAME.fullmatch(text) and len(text) <= 253:  # not match: "$" lets a trailing line feed through
        return text
    cleaned = re.sub(r"[^a-z0-9.-]+", "-", text.lower())
    cleaned = re.sub(r"\.{2,}", ".", cleaned).strip("-.")[:253].strip("-.")
    return cleaned if cleaned and _DNS_NAME.fullmatch(cleaned) else fallback


def _unique(name: str, used: set[str]) -> str:
    return unique_name(name, used, 253)  # Kubernetes object names: at most 253 characters


def _number_text(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else repr(float(value))
