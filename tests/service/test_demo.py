"""The demo loads the AWS example and the synthetic teams with their variants and studies
already replayed, and loading it again duplicates nothing."""

import pytest
from django.core.management import call_command

from planner.capacity.models import Policy
from planner.studies.models import Run, Study
from planner.traces.models import Trace

pytestmark = pytest.mark.django_db


def counts() -> tuple[int, int, int, int]:
    return Policy.objects.count(), Trace.objects.count(), Study.objects.count(), Run.objects.count()


def test_the_demo_loads_once_with_every_study_replayed():
    before = counts()
    call_command("load_demo", "--skip-itp")
    loaded = counts()
    # 2 x (a policy and 3 variants), 2 traces, 2 studies of 4 runs each.
    assert tuple(after - earlier for after, earlier in zip(loaded, before, strict=True)) == (8, 2, 2, 8)
    demo_runs = Run.objects.filter(study__trace__name__in=["aws-example", "synthetic-teams"])
    assert set(demo_runs.values_list("status", flat=True)) == {"succeeded"}
    static = Policy.objects.get(name="aws-example-static-split")
    assert static.parent.name == "aws-example"
    assert {share.strategy for share in static.shares.all()} == {"RESERVE"}
    call_command("load_demo", "--skip-itp")
    assert counts() == loaded


def test_the_aws_example_study_shows_what_lending_buys():
    call_command("load_demo", "--skip-itp")
    study = Study.objects.get(trace__name="aws-example")
    summary = {run.policy_name: run.metrics["summary"] for run in study.runs.all()}
    # As in SEMANTICS.md section 4: one cross-share and one in-share preemption.
    assert summary["aws-example"]["preemptions"] == {
        "cross_share": 1,
        "in_share": 1,
        "fair_sharing": 0,
        "capacity": 0,
    }
    assert summary["aws-example-no-preemption"]["preemptions"] == {
        "cross_share": 0,
        "in_share": 0,
        "fair_sharing": 0,
        "capacity": 0,
    }
