"""A queue snapshot from any of the formats section 11 reads: the planner's JSON, a kubectl List of
Kueue Workloads, or AWS Batch's list/describe pages, told apart by their keys. Each format's reader
builds on ``scheduling.forecast.snapshot``; this module only chooses among them.
"""

from __future__ import annotations

import json
from typing import Any

from scheduling.errors import InputError
from scheduling.forecast.aws_batch_snapshot import read_aws_batch_snapshot
from scheduling.forecast.kueue_snapshot import read_kueue_snapshot
from scheduling.forecast.snapshot import Snapshot, parse_planner_snapshot
from scheduling.model import Policy


def read_snapshot(data: bytes | str | dict, fmt: str = "auto", *, policy: Policy | None = None) -> Snapshot:
    """A snapshot from the planner's JSON, ``kubectl get workloads -A -o json`` or AWS Batch pages
    (``fmt`` "planner", "kueue-workloads", "aws-batch" or "auto", which tells them apart by their
    keys). A Kueue workload's share is its ClusterQueue (admitted) or its LocalQueue's (from the
    LocalQueues in the same List); ``policy``, when given, tells how many GPUs an instance of each
    flavor has (1 otherwise, as the Kueue policy import counts)."""
    value = _json_value(data)
    if fmt == "auto":
        fmt = detect_format(value)
    if fmt == "planner":
        return parse_planner_snapshot(value)
    if fmt == "kueue-workloads":
        return read_kueue_snapshot(value, policy=policy)
    if fmt == "aws-batch":
        return read_aws_batch_snapshot(value)
    raise InputError(
        f"unknown snapshot format {fmt!r}: use planner, kueue-workloads or aws-batch", field="format"
    )


def detect_format(value: Any) -> str:
    if isinstance(value, dict):
        if "list_service_jobs" in value or "describe_service_job" in value:
            return "aws-batch"
        if value.get("kind") == "List" or "items" in value:
            return "kueue-workloads"
        if "running" in value or "pending" in value or "time" in value:
            return "planner"
    raise InputError(
        "is not a snapshot: expected the planner's {time, running, pending}, a kubectl List of "
        "Workloads, or AWS Batch {list_service_jobs, describe_service_job}",
        field="snapshot",
    )


def _json_value(data: bytes | str | dict) -> Any:
    if isinstance(data, dict):
        return data
    if isinstance(data, bytes):
        try:
            data = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(f"is not UTF-8 text: {exc}", field="snapshot") from None
    try:
        return json.loads(data)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not valid JSON: {exc}", field="snapshot") from None
