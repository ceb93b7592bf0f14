"""Which policies can replay a trace: every share the trace names must be one of the policy's,
every instance type one of its pool's (SEMANTICS.md section 6 would reject the rest row by row).
Read from the trace's stored summary and the policy's rows, so the study form can offer only the
policies that fit and say why the others are not offered."""

from __future__ import annotations

from collections.abc import Iterable

from planner.capacity.models import Policy
from planner.traces.models import Trace

MAX_NAMED = 4  # names listed in a reason before "and N more"


def _names(values: Iterable[str]) -> str:
    values = sorted(values)
    shown = ", ".join(values[:MAX_NAMED])
    return shown + (f" and {len(values) - MAX_NAMED} more" if len(values) > MAX_NAMED else "")


def misfit(policy: Policy, trace: Trace) -> str | None:
    """Why ``policy`` cannot replay ``trace`` (None when it can). Expects the policy's shares and
    its pool's capacities prefetched when called for many policies."""
    summary = trace.summary or {}
    trace_shares = {share["name"] for share in summary.get("shares", [])}
    policy_shares = {share.name for share in policy.shares.all()}
    missing = trace_shares - policy_shares
    if missing:
        return f"no share for {_names(missing)} of the trace"
    trace_types = set(summary.get("instance_types", {}))
    pool_types = {capacity.instance_type.name for capacity in policy.pool.capacities.all()}
    if "" in trace_types and len(pool_types) != 1:
        return f"the trace's jobs name no instance type and its pool has {len(pool_types)} types"
    missing_types = trace_types - pool_types - {""}
    if missing_types:
        return f"its pool has no {_names(missing_types)}"
    return None


def split_by_fit(policies: Iterable[Policy], trace: Trace) -> tuple[list[Policy], list[tuple[Policy, str]]]:
    """(policies that fit, [(policy, why not)])."""
    fitting, others = [], []
    for policy in policies:
        reason = misfit(policy, trace)
        if reason is None:
            fitting.append(policy)
        else:
            others.append((policy, reason))
    return fitting, others
