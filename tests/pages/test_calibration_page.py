"""The calibration pages in a real browser: per share the simulated against the recorded wait-time
CDF (recorded solid, simulated dashed, in the share's colour), KS and p50/p95 ratios with the verdict;
an admin starts one from the list; a running one shows progress and turns into the results by itself;
the trace page links to it. Screenshots go to tests/pages/screenshots/."""

from __future__ import annotations

import io

import pytest

from planner.calibration.launch import CalibrationLaunch, start_calibration
from planner.calibration.models import Calibration
from planner.calibration.tasks import calibrate_trace
from planner.traces.models import Trace, read_upload
from planner.web.charts import share_colors
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)

# The small two-team trace with the times each job was recorded starting: t2 waited 600 s, i2 3,600 s.
RECORDED_CSV = b"""job_id,submit_time,share,priority,instance_count,duration,recorded_start
t1,0,train,1,2,3600,0
t2,1800,train,1,1,7200,2400
i1,600,infer,5,1,900,600
i2,5400,infer,5,1,1200,9000
"""


@pytest.fixture
def recorded_trace(db) -> Trace:
    columns = read_upload(io.BytesIO(RECORDED_CSV), format="planner-csv")
    return Trace.store(columns, name="lab-recorded", format="planner-csv", description="With start times.")


@pytest.fixture
def calibration(roles, small_policy, recorded_trace) -> Calibration:
    made = start_calibration(
        CalibrationLaunch(
            trace=recorded_trace,
            policy=small_policy,
            note="Two teams as run.",
        ),
        enqueue=False,
    )
    calibrate_trace.apply(args=[made.pk])
    made.refresh_from_db()
    assert made.status == "succeeded", made.error
    return made


def test_each_share_shows_recorded_against_simulated_waits(page_as, calibration):
    page = page_as("viewer")
    page.goto(f"/calibration/{calibration.pk}/")
    assert "Two teams as run." in page.locator("#assumption").inner_text()
    rows = page.locator("#calibration-shares tbody tr")
    assert rows.count() == 3  # train, infer, all jobs
    # train: t1 recorded 0 s, t2 600 s; both start on submit in the replay (p50 300 s -> 0 s).
    assert rows.filter(has_text="train").inner_text().split("\t")[1:5] == [
        "2",
        "0.50 (0.96)",
        "5.0 min → 0 s",
        "0x",
    ]
    verdicts = page.locator(".calibration-share").filter(has_text="Wait time of train").inner_text()
    assert "train: simulated waits are shorter: p95 0 s against 9.5 min recorded" in verdicts
    for chart in ("#calibration-cdf-train", "#calibration-cdf-infer", "#calibration-cdf-all"):
        look_at(page, "calibration", chart)
    lines = page.locator("#calibration-cdf-train").evaluate(
        "el => el._fullData.map(t => [t.name, t.line.dash, t.line.color])"
    )
    color = share_colors(["train", "infer"])["train"]
    assert lines == [["recorded (train)", "solid", color], ["simulated (train)", "dash", color]]
    x_axis = page.locator("#calibration-cdf-train").evaluate("el => el._fullLayout.xaxis.type")
    assert x_axis == "log"
    assert page.locator("form#calibration-form").count() == 0  # viewers read, admins start


def test_an_admin_starts_a_calibration_from_the_list(
    page_as, roles, small_policy, recorded_trace, eager_celery
):
    page = page_as("admin")
    page.goto("/calibration/")
    page.get_by_label("Trace", exact=True).select_option(label="lab-recorded")
    page.get_by_label("Policy", exact=True).select_option(label="lab-policy")
    page.get_by_role("button", name="Replay and compare").click()
    page.wait_for_url("**/calibration/*/")
    look_at(page, "calibration-started", "#calibration-cdf-all")
    calibration = Calibration.objects.get()
    assert calibration.created_by.username == "admin" and calibration.status == "succeeded"


def test_a_policy_without_the_traces_shares_is_refused_next_to_the_policy(
    page_as, roles, small_policy, recorded_trace
):
    small_policy.shares.filter(name="infer").delete()
    page = page_as("admin")
    page.goto("/calibration/")
    page.get_by_label("Trace", exact=True).select_option(label="lab-recorded")
    page.get_by_label("Policy", exact=True).select_option(label="lab-policy")
    page.get_by_role("button", name="Replay and compare").click()
    error = page.locator('[data-errors-for="policy"]')
    assert "no share for the trace's infer" in error.inner_text()
    assert not Calibration.objects.exists()


def test_a_running_calibration_shows_progress_and_then_the_results(
    page_as, roles, small_policy, recorded_trace
):
    waiting = start_calibration(CalibrationLaunch(trace=recorded_trace, policy=small_policy), enqueue=False)
    Calibration.objects.filter(pk=waiting.pk).update(progress=0.4)
    page = page_as("viewer")
    page.goto(f"/calibration/{waiting.pk}/")
    assert page.locator("#calibration-body progress").get_attribute("value") == "0.4"
    look_at(page, "calibration-running")
    calibrate_trace.apply(args=[waiting.pk])
    look_at(page, "calibration-done-after-progress", "#calibration-cdf-train")


def test_the_trace_page_links_to_its_calibration(page_as, calibration):
    page = page_as("viewer")
    page.goto(f"/traces/{calibration.trace_id}/")
    page.get_by_role("link", name="under lab-policy").click()
    page.wait_for_url(f"**/calibration/{calibration.pk}/")
    assert page.locator("h1").inner_text() == "Calibration: lab-recorded under lab-policy"


def test_the_list_shows_each_calibration_with_its_verdict(page_as, calibration):
    page = page_as("viewer")
    page.goto("/calibration/")
    row = page.locator("#calibration-table tbody tr").first
    assert "lab-recorded" in row.inner_text() and "simulated waits are" in row.inner_text()
    look_at(page, "calibration-list")
