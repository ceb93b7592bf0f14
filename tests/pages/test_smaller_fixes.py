"""Issue 26's smaller findings, each with the test that failed before: "▲ better" is not given to
utilization that is only rerun work; a trace keeps the format it was read as, not "auto"; the
upload page does not promise "nothing is kept" when a refused upload stays listed; previews show
rounded numbers, not 397.7819998264313."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.reports.comparison import RunColumn, format_delta, policy_table, verdict_cards
from planner.traces.models import Trace
from planner.web.templatetags.planner_web import cell, dollars
from tests.pages.conftest import SMALL_TRACE_CSV
from tests.uploads import eager_worker


def _run(run_id: int, utilization: float, useful: float, baseline: bool = False) -> RunColumn:
    summary = {"utilization": utilization, "useful_utilization": useful, "jobs": 10, "shares": []}
    return RunColumn(run_id, f"p{run_id}", run_id, baseline, {"summary": summary, "shares": []})


def test_a_utilization_gain_that_is_only_rerun_work_is_not_better():
    base = _run(0, 0.60, 0.55, baseline=True)
    rerun = _run(1, 0.65, 0.55)  # +5 pts busy, useful unchanged: the 5 pts are redone work
    useful = _run(2, 0.65, 0.60)  # +5 pts busy and +5 pts useful: a real gain
    table = policy_table([base, rerun, useful])
    column = next(c for c in table.columns if c.key == "utilization")
    cells = [row["utilization"] for row in table.rows]
    assert [c.verdict for c in cells] == ["", "rerun", "better"]
    assert format_delta(cells[1], column) == "+5.0 pts, only rerun work"
    assert format_delta(cells[2], column) == "+5.0 pts, better"
    cards = verdict_cards([base, rerun, useful])
    assert [card.lines[0].cell.verdict for card in cards] == ["", "rerun", "better"]
    assert cards[1].lines[1].cell.verdict == "same"  # useful utilization itself: unchanged


def test_dollars_keep_cents_below_a_hundred():
    assert dollars(8.625) == "8.62" and dollars(15) == "15.00" and dollars(12345.6) == "12,346"
    assert dollars(None) == ""


def test_preview_numbers_are_rounded_for_display():
    assert cell(397.7819998264313) == "397.782"
    assert cell(3600.0) == "3,600"
    assert cell(0.25) == "0.25"
    assert cell(None) == "—" and cell("j-001") == "j-001" and cell(12345) == "12345"  # ids stay


@pytest.mark.django_db
def test_a_trace_shows_the_format_it_was_read_as(client_as):
    admin = client_as("admin")
    for name, filename, content in (
        ("as-csv", "jobs.csv", SMALL_TRACE_CSV),
        ("as-json", "jobs.txt", b'{"jobs": [{"job_id": "a", "submit_time": 0, "share": "x", "priority": 1, '
                                b'"instance_count": 1, "duration": 60}]}'),  # no extension: read by its "{"
    ):  # fmt: skip
        with eager_worker():
            admin.post("/traces/upload/", {"file": SimpleUploadedFile(filename, content), "name": name,
                                           "format": "auto"})  # fmt: skip
    formats = dict(Trace.objects.values_list("name", "format"))
    assert formats == {"as-csv": "planner-csv", "as-json": "planner-json"}
    listing = admin.get("/traces/").content.decode()
    assert "<td>planner-csv</td>" in listing and "<td>auto</td>" not in listing


@pytest.mark.django_db
def test_the_upload_page_says_what_happens_to_a_refused_upload(client_as):
    page = client_as("admin").get("/traces/upload/").content.decode()
    assert "nothing is kept" not in page
    assert "the refused upload stays listed under <em>Uploads being read, or refused</em>" in page
