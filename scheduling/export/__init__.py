"""Policies as real scheduler configurations and back: AWS Batch quota management (CLI inputs) and
Kueue (a tree of Cohorts, ClusterQueues, ResourceFlavors, WorkloadPriorityClasses as YAML)."""

from scheduling.export.aws_batch import ExportBundle, from_aws_batch, to_aws_batch
from scheduling.export.kueue import from_kueue_yaml, kueue_notes, to_kueue_yaml

__all__ = [
    "ExportBundle",
    "from_aws_batch",
    "from_kueue_yaml",
    "kueue_notes",
    "to_aws_batch",
    "to_kueue_yaml",
]
