"""Runs whose worker died: a running run whose heartbeat is stale and whose process is gone is
re-enqueued, or failed with the reason once its attempts are used up. Never stuck "running" while
nothing computes it, and never started again while its process lives (``attempts.reap_stale``).

Called by ``manage.py reap_runs``, by every worker when it starts, and when a study is read.
"""

from __future__ import annotations

from planner.studies.attempts import reap_stale
from planner.studies.launch import enqueue_runs
from planner.studies.models import Run


def reap_stale_runs(runs=None, now=None) -> dict[str, list[int]]:
    """Re-enqueue or fail the stale running runs among ``runs`` (default: all runs)."""
    return reap_stale(runs if runs is not None else Run.objects.all(), enqueue_runs, now)
