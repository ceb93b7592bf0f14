"""Bind a trace to a policy: share and instance-type names become the policy's indices.

A trace is stored once and replayed under many policies; this is where a job that names a
share or instance type the policy does not have is rejected, with its row and field.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from scheduling.errors import InputError
from scheduling.job_ids import JobIds
from scheduling.model import Policy
from scheduling.trace import NO_TYPE, TYPE_SEPARATOR, Trace, accepted_types


@dataclass
class BoundTrace:
    """The trace's columns in the policy's terms (indices into ``policy.shares`` and ``type_names``)."""

    trace: Trace
    type_names: list[str]
    share: np.ndarray  # int32 index into policy.shares
    instance_type: np.ndarray  # int32 index into type_names (several accepted: the first tried)
    id_rank: np.ndarray  # int64: position of each job_id in job_id order (see job_id_order)
    update_job: np.ndarray  # int64 job index per priority update, -1 = unknown job
    # Section 12: per job, -1 when it accepts one type, else an index into ``flavor_sets``: the
    # types it accepts, in its share's flavor order (one entry per such set and share).
    flavor_set: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int32))
    flavor_sets: list[list[int]] = field(default_factory=list)

    @property
    def has_flavor_lists(self) -> bool:
        return bool(self.flavor_sets)


def bind(policy: Policy, trace: Trace) -> BoundTrace:
    type_names = list(policy.instance_types)
    share_index = policy.share_index()
    share_map = np.array([share_index.get(name, -1) for name in trace.share_names] or [0], dtype=np.int32)
    share = share_map[trace.share] if len(trace) else np.zeros(0, dtype=np.int32)
    if len(trace) and (share < 0).any():
        row = int(np.argmax(share < 0))
        name = trace.share_names[trace.share[row]]
        known = ", ".join(share_index)
        raise InputError(f"unknown share {name!r} (the policy has {known})", row=row + 1, field="share")
    instance_type, lists = _bind_types(policy, trace, type_names)
    flavor_set, flavor_sets = _flavor_sets(policy, trace, share, instance_type, lists)
    update_job = np.zeros(0, dtype=np.int64)
    if len(trace.updates.job_id):  # most traces have none: no need to index a million ids
        index_of_id = {job_id: i for i, job_id in enumerate(trace.job_id)}
        update_job = np.array([index_of_id.get(j, -1) for j in trace.updates.job_id], dtype=np.int64)
    return BoundTrace(
        trace, type_names, share, instance_type, job_id_order(trace.job_id), update_job,
        flavor_set, flavor_sets,
    )  # fmt: skip


def _type_lists(trace: Trace, type_index: dict[str, int]) -> dict[int, list[int] | str]:
    """The trace's type names that are lists (section 12), each as its policy type indices, or
    the message saying what is wrong with it. A name the policy has as it is stays one type."""
    lists: dict[int, list[int] | str] = {}
    for code, name in enumerate(trace.type_names):
        if name in type_index or TYPE_SEPARATOR not in name:
            continue
        parts = accepted_types(name)
        indices: list[int] = []
        problem = ""
        for part in parts:
            if not part:
                problem = f"{name!r} has an empty type name between '|'"
            elif part not in type_index:
                known = ", ".join(type_index)
                problem = f"unknown instance type {part!r} in {name!r} (the policy has {known})"
            elif type_index[part] in indices:
                problem = f"{part!r} is listed twice in {name!r}"
            else:
                indices.append(type_index[part])
            if problem:
                break
        lists[code] = problem or indices
    return lists


def _bind_types(
    policy: Policy, trace: Trace, type_names: list[str]
) -> tuple[np.ndarray, dict[int, list[int]]]:
    """Each job's type index (a job that accepts several: its first in the policy's order, made its
    share's first by ``_flavor_sets``), and the trace's list codes with their types."""
    type_index = {name: i for i, name in enumerate(type_names)}
    lists = _type_lists(trace, type_index)
    codes = trace.instance_type
    if (codes == NO_TYPE).any() and len(type_names) != 1:
        row = int(np.argmax(codes == NO_TYPE))
        raise InputError(
            f"instance_type is required: the policy has several types ({', '.join(type_names)})",
            row=row + 1,
            field="instance_type",
        )
    type_map = np.array(
        [_first_listed(lists[code]) if code in lists else type_index.get(name, -1)
         for code, name in enumerate(trace.type_names)] + [0],
        dtype=np.int32,
    )  # fmt: skip
    # NO_TYPE (-1) picks the appended last entry: the policy's single type.
    bound = type_map[codes] if len(trace) else np.zeros(0, dtype=np.int32)
    if len(trace) and (bound < 0).any():
        row = int(np.argmax(bound < 0))
        code = int(codes[row])
        name = trace.type_names[code]
        listed = lists.get(code)
        message = (
            listed
            if isinstance(listed, str)
            else (f"unknown instance type {name!r} (the policy has {', '.join(type_names)})")
        )
        raise InputError(message, row=row + 1, field="instance_type")
    return bound, {code: value for code, value in lists.items() if not isinstance(value, str)}


def _first_listed(listed: list[int] | str) -> int:
    return -1 if isinstance(listed, str) else min(listed)


def _flavor_sets(
    policy: Policy, trace: Trace, share: np.ndarray, instance_type: np.ndarray, lists: dict[int, list[int]]
) -> tuple[np.ndarray, list[list[int]]]:
    """Section 12: for each job that accepts several types, the index of its (types, share) set
    (its types in its share's flavor order); its ``instance_type`` becomes the first of them."""
    flavor_set = np.full(len(trace), -1, dtype=np.int32)
    if not lists or not len(trace):
        return flavor_set, []
    is_list = np.zeros(len(trace.type_names), dtype=bool)
    is_list[list(lists)] = True
    codes = trace.instance_type
    rows = np.flatnonzero((codes >= 0) & is_list[np.maximum(codes, 0)])
    if not len(rows):
        return flavor_set, []
    type_index = {name: i for i, name in enumerate(policy.instance_types)}
    pairs = codes[rows].astype(np.int64) * len(policy.shares) + share[rows]
    unique, inverse = np.unique(pairs, return_inverse=True)
    sets: list[list[int]] = []
    for pair in unique.tolist():
        code, s = divmod(pair, len(policy.shares))
        accepted = set(lists[code])
        order = [type_index[t] for t in policy.types_in_order(policy.shares[s].name)]
        sets.append([t for t in order if t in accepted])
    flavor_set[rows] = inverse.astype(np.int32)
    instance_type[rows] = np.array([chosen[0] for chosen in sets], dtype=np.int32)[inverse]
    return flavor_set, sets


def check_fits(policy: Policy, share_names: Iterable[str], type_names: Iterable[str]) -> None:
    """Raise InputError naming every share and instance type a trace uses (by name; ``""`` for jobs
    without a type) that the policy lacks, so that a study is refused when it is made, not when its
    replay binds the trace (``bind`` says the same per row)."""
    missing_shares = sorted(set(share_names) - set(policy.share_index()))
    types = set()
    for name in type_names:  # a list (section 12) needs each of its types
        types.update([name] if name in policy.instance_types else accepted_types(name))
    missing_types = sorted(t for t in types - set(policy.instance_types) if t)
    untyped = "" in types and len(policy.instance_types) != 1
    problems = []
    if missing_shares:
        problems.append(f"no share {', '.join(missing_shares)}")
    if missing_types:
        problems.append(f"no instance type {', '.join(missing_types)}")
    if untyped:
        problems.append(
            f"several instance types ({', '.join(policy.instance_types)}) for jobs that name none"
        )
    if problems:
        raise InputError(f"policy {policy.name} has {'; '.join(problems)}, which the trace's jobs use")


def job_id_order(ids: Sequence[str]) -> np.ndarray:
    """Rank of each job_id where ties are broken by job_id **(choice)**: when every id is an
    integer they compare as numbers ("9" before "10"), otherwise as strings (by code point)."""
    if not ids:
        return np.zeros(0, dtype=np.int64)
    column = ids if isinstance(ids, JobIds) else JobIds(ids)
    order = _integer_order(column) if _is_integer(column[0]) else None
    if order is None:
        order = column.order()
    rank = np.empty(len(column), dtype=np.int64)
    rank[order] = np.arange(len(column), dtype=np.int64)
    return rank


def _is_integer(job_id: str) -> bool:
    try:
        int(job_id)
    except ValueError:
        return False
    return True


def _integer_order(column: JobIds) -> np.ndarray | None:
    """The order of the ids as numbers, or None if one is not an integer. (Asked only when the first
    one is: a million ids made into Python strings cost more than the sort.)"""
    job_ids = column.to_list()
    try:
        keys = np.array([int(j) for j in job_ids], dtype=object if _too_big(job_ids) else np.int64)
    except ValueError:
        return None
    return np.argsort(keys, kind="stable")


def _too_big(job_ids: list[str]) -> bool:
    return any(len(j) > 17 for j in job_ids)
