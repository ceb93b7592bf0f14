"""Every page of planner.web in a real browser (Debian's chromium): it loads, its charts draw,
the shares editor works in place, presets make variants, uploads report the bad row next to
the file field, and a study launches. Screenshots go to tests/pages/screenshots/."""

import re

import pytest

from planner.capacity.models import Policy
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus, Study, run_summary
from planner.traces.models import Trace
from tests.pages.conftest import PASSWORD, SMALL_TRACE_CSV, look_at

pytestmark = pytest.mark.django_db(transaction=True)


def test_signing_in_through_the_login_form(page_as, users):
    page = page_as(None)
    page.goto("/policies/")
    assert page.url.endswith("/login/?next=/policies/")
    look_at(page, "login")
    page.get_by_label("Username").fill("admin")
    page.get_by_label("Password").fill(PASSWORD)
    page.get_by_role("button", name="Sign in").click()
    page.wait_for_url("**/policies/")
    whoami = page.locator(".whoami")
    assert whoami.locator(".user").inner_text() == "admin"
    assert whoami.locator(".role").inner_text().lower() == "admin"
    # the current page's link is in its group's dropdown (closed: read its text, not its rendering)
    assert page.locator('.topnav a[aria-current="page"]').text_content() == "Policies"


def test_the_overview_shows_pools_studies_and_traces(page_as, small_policy, small_trace, eager_celery):
    launch_study(StudyLaunch(name="lab study", trace=small_trace, policies=[small_policy]))
    page = page_as("viewer")
    page.goto("/")
    assert "4 GPUs" in page.locator(".cards").inner_text()
    studies = page.locator("#studies-heading + .table-wrap table")
    row = studies.locator("tbody tr").first
    assert "lab study" in row.inner_text()
    assert re.search(r"\d+\.\d %", row.inner_text()), "utilization of the replayed policy"
    assert "lab-week" in page.locator("#traces-heading + .table-wrap").inner_text()
    look_at(page, "overview")


def test_empty_states_say_what_to_do(page_as):
    page = page_as("admin")
    page.goto("/")
    empty = page.locator(".empty")
    assert empty.count() == 6  # idle $ (admins read finance), find my job, pools, studies, curves, traces
    assert "No finished study has prices yet" in page.locator("#money-heading ~ .empty").inner_text()
    assert "No study has a finished replay yet" in page.locator("#job-heading ~ .empty").inner_text()
    assert "Chart a capacity curve" in page.locator("#curves-heading ~ .empty").inner_text()
    assert "upload one" in page.locator("#traces-heading ~ .empty").inner_text()
    look_at(page, "overview-empty")


def test_a_share_is_edited_in_place_and_errors_show_next_to_the_field(page_as, small_policy):
    train = small_policy.shares.get(name="train")
    page = page_as("admin")
    page.goto(f"/policies/{small_policy.pk}/")
    look_at(page, "policy", "#quota-chart")
    page.locator(f"#share-{train.pk}").get_by_role("link", name="Edit").click()
    quota = page.get_by_label("Quota of ml.g5.xlarge")
    quota.fill("4")
    page.get_by_role("button", name="Save").click()
    cell = page.locator("td", has=page.locator("#id_share-quota_0"))
    assert (
        cell.locator(".errorlist")
        .inner_text()
        .endswith("share quotas of ml.g5.xlarge add up to 5, more than the pool's 4")
    )
    assert page.locator("#id_share-quota_0").get_attribute("aria-invalid") == "true"
    assert page.evaluate("document.documentElement.scrollWidth") <= 1280
    look_at(page, "policy-edit-error")
    page.get_by_label("Quota of ml.g5.xlarge").fill("1")
    page.get_by_label("Strategy").select_option("LEND")
    page.get_by_label("% of quota (empty: unlimited)").fill("")
    page.get_by_role("button", name="Save").click()
    assert "Share train saved." in page.locator(".messages").inner_text()
    row = page.locator(f"#share-{train.pk}")
    assert row.locator("td").nth(0).inner_text() == "1" and "LEND" in row.inner_text()


def test_a_preset_makes_a_variant_in_one_click(page_as, small_policy):
    page = page_as("admin")
    page.goto(f"/policies/{small_policy.pk}/")
    page.get_by_role("button", name="Variant: static split").click()
    page.wait_for_url(re.compile(r"/policies/\d+/"))
    assert page.locator("h1").inner_text() == "Policy lab-policy (static split)"
    strategies = page.locator("#shares-table tbody tr[id^=share-] td:nth-child(3)").all_inner_texts()
    assert strategies == ["RESERVE", "RESERVE"]
    variant = Policy.objects.get(name="lab-policy (static split)")
    assert variant.parent_id == small_policy.pk
    look_at(page, "policy-variant", "#quota-chart")


def test_a_viewer_sees_the_policy_without_edit_controls(page_as, small_policy):
    page = page_as("viewer")
    page.goto(f"/policies/{small_policy.pk}/")
    assert page.get_by_role("link", name="Edit").count() == 0
    assert page.get_by_role("button", name=re.compile("Variant")).count() == 0
    look_at(page, "policy-viewer", "#quota-chart")


def test_a_bad_upload_is_refused_on_its_page_naming_the_row(page_as, eager_celery):
    page = page_as("admin")
    page.goto("/traces/upload/")
    bad = SMALL_TRACE_CSV.replace(b"i1,600,infer,5,1,900", b"i1,600,infer,5,1,-5")
    page.get_by_label("Trace file").set_input_files(
        {"name": "bad.csv", "mimeType": "text/csv", "buffer": bad}
    )
    page.get_by_label("Name").fill("bad week")
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/traces/\d+/"))
    assert page.locator("#trace-error").inner_text().strip() == "row 3, duration: -5 is negative"
    trace = Trace.objects.get()
    assert trace.state == "failed" and not trace.jobs_file and not trace.upload_file
    look_at(page, "trace-upload-error")


def test_a_good_upload_shows_its_summary_charts(page_as, eager_celery):
    page = page_as("admin")
    page.goto("/traces/upload/")
    page.get_by_label("Trace file").set_input_files(
        {"name": "week.csv", "mimeType": "text/csv", "buffer": SMALL_TRACE_CSV}
    )
    page.get_by_role("button", name="Preview").click()  # in place: the chosen file stays chosen
    preview = page.locator("#preview-table")
    preview.wait_for()
    assert preview.locator("tbody tr").count() == 4
    assert page.get_by_label("Trace file").evaluate("input => input.files.length") == 1
    look_at(page, "trace-upload-preview")
    page.get_by_label("Name").fill("lab week")
    page.get_by_role("button", name="Upload").click()
    page.wait_for_url(re.compile(r"/traces/\d+/"))
    assert "a worker is reading it" in page.locator(".messages").inner_text()
    stats = page.locator(".stats").inner_text()
    assert "4\njobs" in stats and "5\nGPU-hours" in stats  # 2x1 h + 1x2 h + 1x0.25 h + 2x(1/3) h = 4.9
    for chart in ("#arrivals-chart", "#demand-chart", "#size-chart", "#duration-chart"):
        look_at(page, "trace-" + chart.strip("#"), chart)
    look_at(page, "trace")
    page.locator(".menu-group summary", has_text="Data").click()
    page.get_by_role("navigation", name="Main").get_by_role("link", name="Traces").click()
    assert page.locator("#trace-table tbody tr").first.locator("td").first.inner_text() == "lab week"


def test_the_parse_progress_bar_survives_a_reload_and_the_page_shows_the_trace_when_done(page_as):
    from django.utils import timezone

    from planner.traces.tasks import parse_trace

    page = page_as("admin")
    page.goto("/traces/upload/")
    page.get_by_label("Trace file").set_input_files(
        {"name": "week.csv", "mimeType": "text/csv", "buffer": SMALL_TRACE_CSV}
    )
    page.get_by_label("Name").fill("slow week")
    page.get_by_role("button", name="Upload").click()  # no worker runs yet: the trace waits
    page.wait_for_url(re.compile(r"/traces/\d+/"))
    trace = Trace.objects.get(name="slow week")
    half = len(SMALL_TRACE_CSV) // 2
    Trace.objects.filter(pk=trace.pk).update(  # a live worker's last beat
        status="running", progress=half / len(SMALL_TRACE_CSV), bytes_read=half, heartbeat=timezone.now()
    )
    page.reload()  # what a worker wrote is what the bar shows, after a reload too
    bar = page.locator('#trace-progress progress[data-field="progress"]')
    assert float(bar.get_attribute("value")) == pytest.approx(half / len(SMALL_TRACE_CSV), abs=1e-3)
    assert page.locator('[data-field="bytes"]').inner_text() == f"{half} of {len(SMALL_TRACE_CSV)} bytes"
    look_at(page, "trace-parsing")
    Trace.objects.filter(pk=trace.pk).update(status="queued", attempts=0)
    parse_trace.apply(args=[trace.pk])  # the worker: the page notices by itself and shows the trace
    page.locator(".stats").wait_for(timeout=15_000)
    assert "4\njobs" in page.locator(".stats").inner_text()


def test_a_study_is_launched_from_the_form(page_as, small_policy, small_trace, eager_celery):
    static = small_policy.duplicate("lab static")
    page = page_as("admin")
    page.goto(f"/studies/new/?trace={small_trace.pk}&policy={small_policy.pk}")
    assert page.get_by_label("lab static (pool lab)").is_checked()  # a policy's variants come along
    page.get_by_label("Name").fill("static or not")
    look_at(page, "study-new")
    page.get_by_role("button", name="Launch").click()
    page.wait_for_url(re.compile(r"/studies/\d+/"))
    study = Study.objects.get(name="static or not")
    assert page.url.endswith(f"/studies/{study.pk}/")
    assert {run.policy_id for run in study.runs.all()} == {small_policy.pk, static.pk}
    assert study.baseline_id == small_policy.pk
    page.goto("/studies/")
    assert page.locator("#study-table .status-succeeded").count() == 2
    look_at(page, "studies")


def test_a_study_needs_a_policy(page_as, small_policy, small_trace):
    page = page_as("admin")
    page.goto("/studies/new/")
    page.get_by_label("Name").fill("nothing")
    page.get_by_label("Trace").select_option(label="lab-week")
    page.get_by_role("button", name="Launch").click()
    assert "required" in page.locator('[data-errors-for="policies"]').inner_text()
    assert Study.objects.count() == 0


def test_tables_sort_and_filter_with_the_state_in_the_url(page_as, small_policy):
    small_policy.duplicate("b-variant")
    small_policy.duplicate("a-variant")
    page = page_as("viewer")
    page.goto("/policies/")
    page.locator("#policy-table thead").get_by_role("button", name="Policy").click()
    names = page.locator("#policy-table tbody td:first-child").all_inner_texts()
    assert names == sorted(names)
    page.get_by_label("Filter").fill("b-var")
    assert page.locator("#policy-table tbody tr:visible").count() == 1
    assert "sort=policies%3A0%3Aasc" in page.url or "sort=policies:0:asc" in page.url
    page.reload()
    assert page.locator("#policy-table tbody tr:visible").count() == 1


def test_narrow_screens_and_the_keyboard(page_as, small_policy):
    page = page_as("admin", width=390, height=800)
    page.goto(f"/policies/{small_policy.pk}/")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "skip-link"
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Planner"
    for label in ("Overview", "API"):
        assert page.locator(".topnav").get_by_role("link", name=label, exact=True).is_visible()
    for group in ("Plan", "Data", "Reports"):  # the rest in dropdowns (tests/pages/test_menu.py)
        assert page.locator(".menu-group summary", has_text=group).is_visible()
    # wide tables scroll inside their box: the page itself never scrolls sideways
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    look_at(page, "policy-narrow", "#quota-chart")


def test_the_studies_list_follows_running_work_without_a_reload(page_as, small_policy, small_trace):
    launch_study(StudyLaunch(name="quick one", trace=small_trace, policies=[small_policy]), enqueue=False)
    Run.objects.update(status=RunStatus.FAILED)
    study = launch_study(
        StudyLaunch(name="slow one", trace=small_trace, policies=[small_policy]), enqueue=False
    )
    run = study.runs.get()
    Run.objects.filter(pk=run.pk).update(status=RunStatus.RUNNING, progress=0.3)
    page = page_as("viewer")
    page.goto("/studies/")
    assert page.locator("#study-table progress").get_attribute("value") == "0.3"
    page.get_by_label("Filter").fill("slow")
    assert page.locator("#study-table tbody:visible").count() == 1
    look_at(page, "studies-running")
    page.evaluate("window.notReloaded = true")
    metrics = {"summary": {"utilization": 0.75}, "shares": [{"name": "train", "wait_seconds": {"p95": 0}}]}
    Run.objects.filter(pk=run.pk).update(
        status=RunStatus.SUCCEEDED, progress=1, metrics=metrics, summary=run_summary(metrics)
    )
    page.locator("#study-table .status-succeeded").wait_for(timeout=15_000)
    assert "75.0 %" in page.locator("#study-table").inner_text()
    assert page.evaluate("window.notReloaded") is True  # updated in place
    assert page.locator("#study-table tbody:visible").count() == 1  # the filter still applies
    assert page.locator("#study-progress").get_attribute("data-refresh-url") is None


def test_an_importer_preview_offers_the_files_columns(page_as):
    with open("tests/scheduling/samples/sacct_parsable.txt", "rb") as sample:
        content = sample.read()
    page = page_as("admin")
    page.goto("/traces/upload/")
    page.get_by_label("Trace file").set_input_files(
        {"name": "sacct.txt", "mimeType": "text/plain", "buffer": content}
    )
    page.get_by_label("Format").select_option("slurm-sacct")
    page.get_by_text("Column mapping, for the importer formats").click()
    page.get_by_label("Share column").fill("Nope")
    page.get_by_role("button", name="Preview").click()
    error = page.locator('[data-errors-for="share_column"]')
    error.get_by_text("'Nope' is not a column of this trace").wait_for()
    assert page.get_by_label("Share column").get_attribute("aria-invalid") == "true"
    page.get_by_label("Share column").fill("Account")
    page.get_by_role("button", name="Preview").click()
    page.locator("#preview-table").wait_for()
    assert error.inner_text().strip() == ""
    options = page.locator("datalist#trace-columns option")
    assert "Account" in [options.nth(i).get_attribute("value") for i in range(options.count())]
    look_at(page, "trace-upload-importer-preview")
    assert Trace.objects.count() == 0
