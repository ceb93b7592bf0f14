"""A live Kueue configuration into a policy: ``kubectl get clusterqueues,cohorts,resourceflavors,
workloadpriorityclasses -o yaml`` (a ``List``, ``kueue.x-k8s.io/v1beta1`` or ``v1beta2``), plus, optionally,
the Kueue manager's ``Configuration`` (``config.kueue.x-k8s.io``) for ``fairSharing``.

v1beta2 objects are read as their v1beta1 equivalents (``spec.cohortName`` is v1beta1's ``spec.cohort``,
a Cohort's ``spec.parentName`` its ``spec.parent``), and so are v1alpha1 Cohorts (Kueue 0.9 and 0.10,
``spec.parent`` already); what the cluster adds (``status``, managed fields) is not configuration and is
left out; then ``from_kueue_yaml`` reads the objects, so a live configuration and the planner's own export
are read by one reader. Cohort trees become section 13's ``cohorts`` there (one tree: its root is the
policy's root; several: each a top-level cohort with limits 0, see ``kueue._CohortForest``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from scheduling.errors import InputError
from scheduling.export.kueue import API_VERSION, CONFIG_API_VERSION, GPU_RESOURCE, from_kueue_yaml
from scheduling.nesting import check_yaml_nesting

API_VERSIONS = ("kueue.x-k8s.io/v1beta1", "kueue.x-k8s.io/v1beta2")
V1BETA2 = "kueue.x-k8s.io/v1beta2"
# Kueue 0.9 and 0.10 served Cohorts (hierarchical cohorts) in v1alpha1 only.
COHORT_V1ALPHA1 = "kueue.x-k8s.io/v1alpha1"
CONFIG_API_VERSIONS = ("config.kueue.x-k8s.io/v1beta1", "config.kueue.x-k8s.io/v1beta2")
KUEUE_KINDS = ("ClusterQueue", "Cohort", "ResourceFlavor", "WorkloadPriorityClass")
# v1beta2 field -> v1beta1 field, per kind (spec keys renamed when v1beta2 came).
V1BETA2_RENAMES = {"ClusterQueue": {"cohortName": "cohort"}, "Cohort": {"parentName": "parent"}}


def load_yaml_documents(files: Iterable[tuple[str, bytes | str]]) -> list[tuple[str, Any]]:
    """Every YAML document of the given files ``(name, content)``, a ``List`` opened into its items,
    each labelled for messages (``cluster.yaml: ClusterQueue/team-a``)."""
    out = []
    for name, content in files:
        try:
            text = content.decode("utf-8-sig") if isinstance(content, bytes) else content
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", field=name) from None
        check_yaml_nesting(text, field=name)  # before the loader, which builds collections recursively
        try:
            documents = [d for d in yaml.safe_load_all(text) if d is not None]
        except yaml.YAMLError as error:
            mark = getattr(error, "problem_mark", None)
            where = f" at line {mark.line + 1}" if mark is not None else ""
            raise InputError(
                f"not valid YAML: {getattr(error, 'problem', None) or 'cannot be read'}{where}", field=name
            ) from None
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", field=name) from None
        for i, document in enumerate(documents):
            if isinstance(document, Mapping) and document.get("kind") == "List":
                items = document.get("items")
                if not isinstance(items, list):
                    raise InputError("a List needs items", field=f"{name}: document {i + 1}.items")
                out.extend((f"{name}: items[{j}]", item) for j, item in enumerate(items))
            else:
                out.append((f"{name}: document {i + 1}", document))
    if not out:
        raise InputError("no YAML documents", field="file")
    return out


def from_kueue_cluster(
    documents: Iterable[tuple[str, Any]], *, gpu_resource: str = GPU_RESOURCE
) -> dict[str, Any]:
    """The policy dict of live Kueue objects ``(label, object)``; a ``Configuration`` among them is read
    for fairSharing. Raises InputError naming the object and the field."""
    objects = []
    notes: list[str] = []
    configurations = []
    for label, document in documents:
        if not isinstance(document, Mapping):
            raise InputError("must be a Kubernetes object (apiVersion, kind, metadata)", field=label)
        kind = document.get("kind")
        if kind == "Configuration":
            configurations.append((label, document))
            continue
        if kind == "Workload":
            raise InputError(
                "a Workload is a job, not configuration: upload workloads as a trace "
                "(format kueue-workloads)",
                field=f"{label}.kind",
            )
        if kind in KUEUE_KINDS:
            version = document.get("apiVersion")
            accepted = (*API_VERSIONS, COHORT_V1ALPHA1) if kind == "Cohort" else API_VERSIONS
            if version not in accepted:
                raise InputError(f"{version!r} is not {' or '.join(accepted)}", field=f"{label}.apiVersion")
            document = _as_v1beta1(document)
        objects.append(_configuration_only(document))
    if len(configurations) > 1:
        raise InputError("more than one Kueue Configuration", field=configurations[1][0])
    for label, configuration in configurations:
        # ClusterQueues keep spec.fairSharing.weight: the export's reader makes it the share's
        # fair_weight, and turns fair sharing on from this Configuration.
        objects.append(fair_sharing_of(label, configuration))
    data = from_kueue_yaml(yaml.safe_dump_all(objects, sort_keys=False), gpu_resource=gpu_resource)
    fair = data.get("fair_sharing")
    if fair is not None:
        strategies = ", ".join(fair.get("preemption_strategies") or ["the default strategies"])
        notes.append(f"The Kueue Configuration turns fair sharing on (preemptionStrategies {strategies}).")
    data["description"] = " ".join([data.get("description", ""), *notes]).strip()
    return data


def _as_v1beta1(document: Mapping[str, Any]) -> dict[str, Any]:
    document = dict(document)
    if document.get("apiVersion") == API_VERSION:
        return document
    renames = V1BETA2_RENAMES.get(document.get("kind"), {}) if document.get("apiVersion") == V1BETA2 else {}
    document["apiVersion"] = API_VERSION
    spec = document.get("spec")
    if isinstance(spec, Mapping) and renames:
        document["spec"] = {renames.get(key, key): value for key, value in spec.items()}
    return document


def _configuration_only(document: Mapping[str, Any]) -> dict[str, Any]:
    """The object without what the cluster adds: status and metadata other than name and annotations."""
    out = {key: value for key, value in document.items() if key != "status"}
    metadata = document.get("metadata")
    if isinstance(metadata, Mapping):
        out["metadata"] = {key: metadata[key] for key in ("name", "annotations", "labels") if key in metadata}
    return out


def fair_sharing_of(label: str, configuration: Mapping[str, Any]) -> dict[str, Any]:
    """The Kueue Configuration's ``fairSharing`` (SEMANTICS.md section 8) as the v1beta1
    Configuration document the export's reader takes (``scheduling.export.kueue``), checked here
    for what the live file may hold: v1beta2 (which dropped ``enable``: the section's presence
    turns fair sharing on) and a strategy list of names."""
    version = configuration.get("apiVersion")
    if version not in CONFIG_API_VERSIONS:
        raise InputError(
            f"{version!r} is not {' or '.join(CONFIG_API_VERSIONS)}", field=f"{label}.apiVersion"
        )
    fair = configuration.get("fairSharing")
    document: dict[str, Any] = {
        "apiVersion": CONFIG_API_VERSION,  # what the export's reader takes
        "kind": "Configuration",
        "metadata": {"name": "kueue-configuration"},
    }
    if fair is None:
        return document
    if not isinstance(fair, Mapping):
        raise InputError("must be an object", field=f"{label}.fairSharing")
    enabled = fair.get("enable", True)  # v1beta2 dropped `enable`: the section's presence turns it on
    if not enabled:
        return {**document, "fairSharing": {"enable": False}}
    strategies = fair.get("preemptionStrategies") or ["LessThanOrEqualToFinalShare", "LessThanInitialShare"]
    if not isinstance(strategies, list) or not all(isinstance(s, str) for s in strategies):
        raise InputError(
            "must be a list of strategy names", field=f"{label}.fairSharing.preemptionStrategies"
        )
    return {**document, "fairSharing": {"enable": True, "preemptionStrategies": strategies}}
