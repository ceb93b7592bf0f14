"""Bring your scheduler in a real browser, from the overview's empty state: the Kueue sample pair
imported (configuration, then history with its preview), calibrated, studied with its presets, and
the chosen variant's export links; an error shows next to the field that caused it. Screenshots go to
tests/pages/screenshots/."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.calibration.models import Calibration
from planner.capacity.models import Policy
from planner.studies.models import Study
from planner.traces.models import Trace
from planner.web.variants import study_presets
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)
# The flow replays a history four times and calibrates it inline: allow more than the usual 10 s.
STEP_TIMEOUT_MS = 90_000

SAMPLES = Path(__file__).resolve().parents[2] / "samples"


def test_the_kueue_pair_from_the_empty_overview_to_the_export(page_as, eager_celery):
    page = page_as("admin")
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto("/")
    page.locator("#byos-link").click()
    page.wait_for_url("**/byos/")
    assert page.locator("#step-configuration").get_attribute("class") == "step current"
    look_at(page, "byos-1-empty")

    # step 1: the kubectl List and the Kueue Configuration, as two files
    page.select_option("#id_scheduler", "kueue")
    page.set_input_files(
        "#id_files",
        [str(SAMPLES / "kueue" / "configuration.yaml"), str(SAMPLES / "kueue" / "kueue-manager-config.yaml")],
    )
    page.fill("#id_pool", "gpu-cluster")
    page.get_by_role("button", name="Import the configuration").click()
    page.wait_for_selector("#history-form")
    policy = Policy.objects.get()
    assert "fair sharing on" in page.locator("#import-notes").inner_text()

    # step 2: the workload history, previewed first (nothing stored), then stored
    page.set_input_files("#history-form #id_file", str(SAMPLES / "kueue" / "workloads.json"))
    page.fill("#history-form #id_name", "kueue september")
    page.get_by_role("button", name="Preview").click()
    page.wait_for_selector("#history-preview-table")
    assert "351 jobs would be imported" in page.locator("#history-preview").inner_text()
    assert "21 pending at export" in page.locator("#history-preview").inner_text()
    assert not Trace.objects.exists()
    look_at(page, "byos-2-preview")
    page.get_by_role("button", name="Store the history").click()
    page.wait_for_selector("#step-calibration form")
    trace = Trace.objects.get()
    assert page.url.endswith(f"/byos/?scheduler=kueue&policy={policy.pk}&trace={trace.pk}")

    # step 3: calibration (the replay runs inline here), its verdicts per share
    page.get_by_role("button", name="Calibrate").click()
    page.wait_for_selector("#byos-calibration-table")
    calibration = Calibration.objects.get()
    table = page.locator("#byos-calibration-table").inner_text()
    assert calibration.metrics["all"]["preemptions"]["verdict"] in table
    assert "team-nlp" in table
    details = page.context.new_page()
    details.set_default_timeout(STEP_TIMEOUT_MS)
    details.goto(f"/calibration/{calibration.pk}/")
    # the calibration page adds the preemption table under the waits: all jobs and the four shares
    assert details.locator("#calibration-preemptions tbody tr").count() == 5
    assert (
        calibration.metrics["all"]["preemptions"]["verdict"]
        in details.locator("#preemption-verdict").inner_text()
    )
    look_at(details, "byos-3-calibration")
    details.close()

    # step 4: the study of the policy and its presets (the usual three, and flattened when the
    # import made a tree of cohorts)
    page.get_by_role("button", name="Launch the study").click()
    page.wait_for_selector("#byos-study-table")
    study = Study.objects.get()
    rows = page.locator("#byos-study-table tbody tr")
    assert rows.count() == 1 + len(study_presets(policy, Trace.objects.get())) >= 4
    assert all(run.status == "succeeded" for run in study.runs.all())

    # step 5: each policy's exports
    link = rows.first.get_by_role("link", name="Kueue (YAML)")
    assert link.get_attribute("href") == f"/api/policies/{policy.pk}/export/kueue/"
    look_at(page, "byos-5-study")
    response = page.request.get(link.get_attribute("href"))
    assert response.ok and "kind: ClusterQueue" in response.text()


def test_a_history_given_as_configuration_is_refused_next_to_the_files(page_as):
    page = page_as("admin")
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto("/byos/")
    page.select_option("#id_scheduler", "kueue")
    page.set_input_files("#id_files", str(SAMPLES / "kueue" / "workloads.json"))
    page.fill("#id_pool", "gpu-cluster")
    page.get_by_role("button", name="Import the configuration").click()
    error = page.locator('[data-errors-for="files"]')
    error.wait_for()
    assert "a Workload is a job, not configuration" in error.inner_text()
    assert not Policy.objects.exists()
    look_at(page, "byos-error")


def test_the_traces_page_links_to_the_flow(page_as):
    page = page_as("admin")
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto("/traces/")
    assert page.locator("#byos-link").get_attribute("href") == "/byos/"
