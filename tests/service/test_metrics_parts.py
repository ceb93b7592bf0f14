"""planner.studies.metrics_parts reads the parts of runs' metrics a page needs, the same on
PostgreSQL (one jsonb_each pass) and SQLite (a KeyTransform a part): the stored values, None for
a key a run lacks, None for a run without metrics."""

from __future__ import annotations

import pytest

from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.metrics_parts import metrics_parts
from planner.studies.models import Run, recorded_metrics

pytestmark = pytest.mark.django_db

METRICS = {
    "summary": {"jobs": 4, "utilization": 0.5},
    "shares": [{"name": "a", "jobs": 3}, {"name": "b", "jobs": 1}],
    "pool": {"capacity_gpu_hours": 12.5},
    "series": {"pool_capacity": 8.0, "t": list(range(1000))},
    "cdfs": {"wait": {"all": {"x": [1.0], "y": [1.0], "n": 4}}},
}


@pytest.fixture
def runs(aws_policy, aws_trace, django_capture_on_commit_callbacks) -> tuple[Run, Run]:
    """One run with metrics (no "types" key), one without."""
    with django_capture_on_commit_callbacks(execute=False):
        study = launch_study(StudyLaunch(name="parts", trace=aws_trace, policies=[aws_policy]))
    measured = study.runs.get()
    Run.objects.filter(pk=measured.pk).update(**recorded_metrics(METRICS))
    bare = Run.objects.create(study=study, policy=None, policy_name="bare", policy_snapshot={})
    return measured, bare


def test_the_parts_asked_and_nothing_else(runs):
    measured, bare = runs
    parts = metrics_parts(
        [measured.pk, bare.pk], ["summary", "shares", "types"], nested={"series": "pool_capacity"}
    )
    assert parts[measured.pk] == {
        "summary": METRICS["summary"],
        "shares": METRICS["shares"],
        "types": None,  # a key the run lacks
        "series": {"pool_capacity": 8.0},  # not the thousand points beside it
    }
    assert parts[bare.pk] is None
    assert metrics_parts([], ["summary"]) == {}


def test_a_nested_part_the_run_lacks_is_none(runs):
    measured, _ = runs
    assert metrics_parts([measured.pk], ["pool"], nested={"cdfs": "jct"})[measured.pk] == {
        "pool": METRICS["pool"],
        "cdfs": {"jct": None},
    }
