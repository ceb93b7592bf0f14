"""Whether a trace can be replayed under a policy, said in the source's own terms: the first job whose
share (quota share, ClusterQueue) or instance type (capacity unit, flavor) the policy lacks, named with
its job id and the field of the format it came from."""

from __future__ import annotations

from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.trace import NO_TYPE, Trace, accepted_types

# The source field each format takes the share and the instance type from (default: the planner's).
SOURCE_FIELDS = {
    "aws-batch-jobs": ("quotaShareName", "capacityUsage.capacityUnit"),
    "kueue-workloads": ("status.admission.clusterQueue", "status.admission.podSetAssignments.flavors"),
    "slurm-sacct": ("Account", "AllocTRES"),
}


def check_trace_fits_policy(trace: Trace, policy: Policy, format: str = "") -> None:
    """Raises InputError naming the first job (in trace order) whose share or instance type ``policy``
    does not have; ``format`` picks the field names of the message."""
    share_field, type_field = SOURCE_FIELDS.get(format, ("share", "instance_type"))
    shares = [share.name for share in policy.shares]
    missing = [code for code, name in enumerate(trace.share_names) if name not in shares]
    if missing:
        for i, code in enumerate(trace.share.tolist()):
            if code in missing:
                name = trace.share_names[code]
                raise InputError(
                    f"job {trace.job_id[i]}: {name!r} is not a share of {policy.name} "
                    f"(the imported configuration has {', '.join(shares)})",
                    field=share_field,
                )
    types = list(policy.instance_types)
    unknown = [  # (a list of types, section 12, needs each of them)
        code for code, name in enumerate(trace.type_names)
        if name not in types and not all(part in types for part in accepted_types(name))
    ]  # fmt: skip
    if unknown or ((trace.instance_type == NO_TYPE).any() and len(types) != 1):
        for i, code in enumerate(trace.instance_type.tolist()):
            if code in unknown or (code == NO_TYPE and len(types) != 1):
                name = trace.type_names[code] if code != NO_TYPE else "(none)"
                raise InputError(
                    f"job {trace.job_id[i]}: instance type {name!r} is not in {policy.name} "
                    f"(it has {', '.join(types)})",
                    field=type_field,
                )
