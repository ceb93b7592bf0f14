"""A merged forecast as rows (one per snapshot job, for the table and ``?search=``) and as the
aggregates the page draws: per share, its queue at T0 and when it drains. $ figures carry ``_usd``
in their names, so the money filter (``planner.accounts.money``) hides them from viewers."""

from __future__ import annotations

import statistics
from typing import Any

from planner.forecasts.models import Forecast, ForecastJob


def _quantile(block: Any, key: str) -> float | None:
    return block.get(key) if isinstance(block, dict) else None


def _gpus(policy: dict, instance_type: str, count: int) -> float:
    types = policy.get("instance_types", {})
    if not instance_type and len(types) == 1:
        instance_type = next(iter(types))
    return float(types.get(instance_type, {}).get("gpus", 0)) * count


def job_rows(forecast: Forecast, result: dict) -> list[ForecastJob]:
    """FORECAST.json's jobs as (unsaved) rows, each with the user, type and size its snapshot gave."""
    snapshot = forecast.snapshot
    given = {job["job_id"]: job for job in [*snapshot.get("running", []), *snapshot.get("pending", [])]}
    rows = []
    for row, job in enumerate(result.get("jobs", [])):
        snap = given.get(job["job_id"], {})
        start, end = job.get("start") or {}, job.get("end") or {}
        within = job.get("p_start_within") or {}
        baselines = job.get("baselines") or {}
        instance_type = job.get("instance_type") or snap.get("instance_type") or ""
        count = int(job.get("instance_count") or snap.get("instance_count") or 1)
        rows.append(
            ForecastJob(
                forecast=forecast,
                row=row,
                job_id=str(job["job_id"])[:255],
                user=str(job.get("user") or snap.get("user") or "")[:255],
                share=job.get("share") or snap.get("share", ""),
                state=job.get("state", ""),
                position=job.get("position"),
                reason=job.get("reason") or "",
                instance_type=instance_type,
                instance_count=count,
                gpus=_gpus(forecast.policy_snapshot, instance_type, count),
                start_p10=_quantile(start, "p10"),
                start_p50=_quantile(start, "p50"),
                start_p90=_quantile(start, "p90"),
                end_p10=_quantile(end, "p10"),
                end_p50=_quantile(end, "p50"),
                end_p90=_quantile(end, "p90"),
                p_start_1h=within.get("1h"),
                p_start_24h=within.get("24h"),
                baseline_requested_time=baselines.get("requested_time"),
                baseline_share_median_wait=baselines.get("share_median_wait"),
            )
        )
    return rows


def _hourly_price(policy: dict, instance_type: str) -> float:
    types = policy.get("instance_types", {})
    if not instance_type and len(types) == 1:
        instance_type = next(iter(types))
    return float(types.get(instance_type, {}).get("hourly_price", 0) or 0)


def share_queues(jobs: list[ForecastJob], policy: dict) -> list[dict]:
    """Per share (every share of the policy, in its order): jobs running and pending at T0, the GPUs
    they hold and ask for, the queued work (pending jobs' median run, GPU-hours and $), when the
    first and last pending job start (median samples), and how many are not started within the
    horizon in half the samples. Times are seconds, as the snapshot's."""
    order = [share["name"] for share in policy.get("shares", [])]
    names = list(dict.fromkeys([*order, *(job.share for job in jobs)]))
    out = []
    for name in names:
        mine = [job for job in jobs if job.share == name]  # a share with no job at T0 is listed too
        running = [job for job in mine if job.state == "RUNNING"]
        pending = [job for job in mine if job.state != "RUNNING"]
        starts = [job.start_p50 for job in pending if job.start_p50 is not None]
        hours = [
            ((job.end_p50 - job.start_p50) / 3600.0, job)
            for job in pending
            if job.start_p50 is not None and job.end_p50 is not None
        ]
        waits = [job.start_p50 - job.forecast.snapshot_time for job in pending if job.start_p50 is not None]
        out.append(
            {
                "share": name,
                "running": len(running),
                "pending": len(pending),
                "running_gpus": sum(job.gpus for job in running),
                "pending_gpus": sum(job.gpus for job in pending),
                "queued_gpu_hours": sum(h * job.gpus for h, job in hours),
                "queued_usd": sum(
                    h * job.instance_count * _hourly_price(policy, job.instance_type) for h, job in hours
                ),
                "first_start_p50": min(starts) if starts else None,
                "last_start_p50": max(starts) if starts else None,
                "median_wait_p50_seconds": statistics.median(waits) if waits else None,
                "not_started": sum(job.start_p50 is None for job in pending),
            }
        )
    return out
