"""A run whose fair-sharing preemptions loop (SEMANTICS.md section 8), in a real browser: the study page
shows it as a warning naming the instant, the shares and the jobs, in section 8's words, and the run's why
page says the same; the run that does not loop has no warning. Screenshots go to tests/pages/screenshots/."""

from __future__ import annotations

import pytest

from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.tasks import replay_run
from planner.traces.models import Trace
from tests.pages.conftest import look_at
from tests.service.test_loop_warnings import looping_policies

pytestmark = pytest.mark.django_db(transaction=True)

WORDS = "Kueue would keep evicting and re-admitting these workloads (issue #14543)"


@pytest.fixture
def study(roles, settings, tmp_path):
    # The four-team demo under strict FIFO with fair sharing: weights 1, 2, 4 and 0.5 loop at 145,098.6 s.
    settings.MEDIA_ROOT = tmp_path / "media"
    columns, policies = looping_policies("loop")
    study = launch_study(
        StudyLaunch(
            name="loops",
            trace=Trace.store(columns, name="loop-trace"),
            policies=policies,
        ),
        enqueue=False,
    )
    for run in study.runs.all():
        replay_run.apply(args=(run.pk,))
    return study


def test_the_study_page_warns_of_the_loop_and_the_why_page_of_that_run(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    warnings = page.locator(".reports-loops [role=alert]")
    assert warnings.count() == 1
    text = warnings.first.inner_text()
    assert text.startswith("loop-weighted: at t = 145,098.6 s jobs of prod-training and research")
    assert WORDS in text
    first = study.runs.get(policy_name="loop-weighted").summary["preemption_loops"]["first"][0]
    assert first["job_id"] in text
    assert page.locator("[data-loop-policy=loop-equal]").count() == 0
    look_at(page, "study-loop-warning", full_page=False)
    weighted = study.runs.get(policy_name="loop-weighted")
    page.goto(f"/studies/{study.pk}/why/?run={weighted.pk}")
    assert WORDS in page.locator(".reports-loops").inner_text()
    equal = study.runs.get(policy_name="loop-equal")
    page.goto(f"/studies/{study.pk}/why/?run={equal.pk}")
    assert page.locator(".reports-loops").count() == 0
