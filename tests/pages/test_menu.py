"""The top bar's menu (planner/web/menu.py): every feature in Plan / Data / Reports dropdowns,
each role seeing what it may open, usable by keyboard, fitting 1280 and 390 px; and the menu's
"Find a job" page."""

import io

import pytest

from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.models import Run, RunStatus
from planner.traces.models import Trace, read_upload
from planner.web.menu import menu_for
from tests.pages.conftest import look_at

pytestmark = pytest.mark.django_db(transaction=True)

PLAN = ["Policies", "Studies", "Advisor", "Capacity curves", "Forecasts"]
DATA_ADMIN = ["Traces", "Bring your scheduler", "Calibration", "Semantics"]
DATA_READER = ["Traces", "Calibration", "Semantics"]
REPORTS_FINANCE = ["Find a job", "Commons", "Finance"]
REPORTS_VIEWER = ["Find a job", "Commons"]


def _labels(user) -> dict[str, list[str]]:
    return {group.label: [item.label for item in group.items] for group in menu_for(user)}


def test_each_role_sees_what_it_may_open(users):
    assert _labels(users["admin"]) == {"Plan": PLAN, "Data": DATA_ADMIN, "Reports": REPORTS_FINANCE}
    assert _labels(users["finance"]) == {"Plan": PLAN, "Data": DATA_READER, "Reports": REPORTS_FINANCE}
    assert _labels(users["viewer"]) == {"Plan": PLAN, "Data": DATA_READER, "Reports": REPORTS_VIEWER}
    assert _labels(users["nobody"]) == {}  # no role: no page to open but the 403 itself


def test_forecasts_have_their_line_and_an_item_without_its_app_is_left_out(users, monkeypatch):
    from planner.web import menu

    plan = menu_for(users["viewer"], namespace="forecasts", url_name="list", path="/forecasts/")[0]
    assert plan.items[-1].label == "Forecasts" and plan.items[-1].url == "/forecasts/"
    assert plan.items[-1].current and plan.current
    label, entries = menu.GROUPS[0]
    nowhere = menu.Entry("Nowhere", "nowhere:list", menu.can_read, ("nowhere:*",))
    monkeypatch.setattr(menu, "GROUPS", ((label, (*entries, nowhere)), *menu.GROUPS[1:]))
    assert _labels(users["viewer"])["Plan"] == PLAN  # an app not installed has no item


@pytest.mark.parametrize("width", [1280, 390])
def test_the_menu_opens_by_keyboard_and_fits_the_screen(page_as, width):
    admin = page_as("admin", width=width)  # the longest menu: every item
    admin.goto("/")
    for group in ("Plan", "Data", "Reports"):
        admin.locator(".menu-group summary", has_text=group).click()
        box = admin.get_by_role("navigation", name="Main").get_by_role("list", name=group).bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width
    assert admin.evaluate("document.documentElement.scrollWidth") <= width
    page = page_as("viewer", width=width)
    page.goto("/")
    nav = page.get_by_role("navigation", name="Main")
    for label in ("Overview", "API"):
        assert nav.get_by_role("link", name=label, exact=True).is_visible()
    # Tab to "Reports", Enter opens it, its first item takes the focus, Escape closes it again.
    page.locator(".menu-group summary", has_text="Reports").focus()
    page.keyboard.press("Enter")
    reports = nav.get_by_role("list", name="Reports")
    assert reports.is_visible()
    assert reports.get_by_role("link").all_inner_texts() == REPORTS_VIEWER
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Find a job"
    page.keyboard.press("Escape")
    assert not reports.is_visible()
    assert page.evaluate("document.activeElement.textContent") == "Reports"
    for group in ("Plan", "Data", "Reports"):
        page.locator(".menu-group summary", has_text=group).click()
        panel = nav.get_by_role("list", name=group)
        assert panel.is_visible()
        box = panel.bounding_box()
        assert box["x"] >= 0 and box["x"] + box["width"] <= width, f"{group} leaves the screen: {box}"
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        look_at(page, f"menu-{group.lower()}-{width}", full_page=False)
    # one open at a time; a click elsewhere closes it
    assert page.locator("details[data-menu][open]").count() == 1
    page.locator("h1").click()
    assert page.locator("details[data-menu][open]").count() == 0


def test_the_current_page_is_marked_in_its_group(page_as):
    page = page_as("viewer")
    page.goto("/commons/")
    summary = page.locator(".menu-group summary.current")
    assert summary.inner_text().strip().startswith("Reports")
    page.locator(".menu-group summary", has_text="Reports").click()
    assert page.locator('.topnav a[aria-current="page"]').inner_text() == "Commons"


def test_find_a_job_from_the_menu(page_as, small_policy, small_trace, eager_celery):
    older = launch_study(StudyLaunch(name="older", trace=small_trace, policies=[small_policy]))
    newer = launch_study(StudyLaunch(name="newer", trace=small_trace, policies=[small_policy]))
    assert set(Run.objects.values_list("status", flat=True)) == {RunStatus.SUCCEEDED}
    page = page_as("viewer")
    page.goto("/")
    page.locator(".menu-group summary", has_text="Reports").click()
    page.get_by_role("link", name="Find a job").click()
    page.wait_for_url("**/jobs/")
    assert page.get_by_label("Study").input_value() == str(newer.pk)  # the newest is chosen
    page.get_by_label("Study").select_option(str(older.pk))
    page.get_by_label("Job id, user or name starts with").fill("t2")
    page.get_by_role("button", name="Find").click()
    page.wait_for_url(f"**/studies/{older.pk}/jobs/?q=t2")
    assert "t2" in page.locator("#job-results").inner_text()


def test_find_a_job_without_a_finished_study_says_what_to_do(client_as, small_policy, small_trace):
    queued = launch_study(
        StudyLaunch(name="queued", trace=small_trace, policies=[small_policy]), enqueue=False
    )
    # on a study's page the menu's "Find a job" searches that study
    study_page = client_as("viewer").get(f"/studies/{queued.pk}/").content.decode()
    assert f'<a href="/studies/{queued.pk}/jobs/" >Find a job</a>' in study_page
    assert '<a href="/jobs/" >Find a job</a>' in client_as("viewer").get("/").content.decode()
    page = client_as("viewer").get("/jobs/").content.decode()
    assert "No study has a finished replay yet" in page and "ask an admin to start a study" in page
    unknown = client_as("viewer").get("/jobs/?study=999&q=x")
    assert unknown.status_code == 200  # an unknown study is not followed: the form again


def _trace_of(name: str, share: str) -> Trace:
    csv = f"job_id,submit_time,share,priority,instance_count,duration\nj1,0,{share},1,1,60\n".encode()
    return Trace.store(read_upload(io.BytesIO(csv), format="planner-csv"), name=name, format="planner-csv")


def test_a_trace_no_policy_fits_says_so_not_that_there_is_no_policy(client_as, small_policy):
    odd = _trace_of("odd", "nobody-has-me")
    page = client_as("admin").get(f"/studies/new/?trace={odd.pk}").content.decode()
    assert "There is no policy yet" not in page
    assert "No policy has a share for every share of this trace" in page
    assert "lab-policy" in page  # listed among those not offered, with the reason
    Trace.objects.all().delete()
    small_policy.delete()
    _trace_of("alone", "x")
    assert "There is no policy yet" in client_as("admin").get("/studies/new/").content.decode()


def test_the_semantics_the_pages_cite_are_served(client_as, small_policy):
    page = client_as("viewer").get("/docs/semantics/").content.decode()
    assert '<h2 id="section-9">9. Capacity and quotas over time (optional)</h2>' in page
    assert "implement it exactly" not in page  # the user-facing parts, not the engineers' brief
    policy = client_as("viewer").get(f"/policies/{small_policy.pk}/").content.decode()
    assert "SEMANTICS.md" not in policy
    assert '<a href="/docs/semantics/#section-9">semantics, section 9</a>' in policy


def test_the_docs_reader_escapes_before_it_marks_up():
    from planner.web.views.docs import _inline

    assert _inline("<b>x</b> of *other* shares, **Fit**, `a<b`") == (
        "&lt;b&gt;x&lt;/b&gt; of <em>other</em> shares, <strong>Fit</strong>, <code>a&lt;b</code>"
    )
