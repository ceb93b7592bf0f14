"""Trace upload and the trace page through the Django test client: a request's own mistakes (name,
format, mapping) land next to their field; the file is then read by a worker (eager here) and a
bad row's message is shown on the trace page, nothing else kept; the page draws from the stored
summary."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.traces.models import Trace
from tests.pages.conftest import SMALL_TRACE_CSV
from tests.uploads import eager_worker

pytestmark = pytest.mark.django_db

SACCT_SAMPLE = "tests/scheduling/samples/sacct_parsable.txt"


def upload(client, content: bytes, *, name="week", filename="jobs.csv", **fields):
    data = {"file": SimpleUploadedFile(filename, content), "name": name, "format": "auto", **fields}
    with eager_worker():
        return client.post("/traces/upload/", data)


def test_a_bad_row_is_named_on_the_trace_page_and_nothing_else_is_stored(client_as):
    bad = SMALL_TRACE_CSV.replace(b"i1,600,infer,5,1,900", b"i1,600,infer,5,1,-5")
    admin = client_as("admin")
    response = upload(admin, bad)
    assert response.status_code == 302
    page = admin.get(response["Location"]).content.decode()
    assert "This upload was refused" in page and "row 3, duration: -5 is negative" in page
    trace = Trace.objects.get()
    assert trace.state == "failed" and not trace.jobs_file and not trace.upload_file and trace.summary == {}
    assert "week" not in client_as("viewer").get("/traces/").content.decode()  # out of everyone's list


def test_a_trace_still_parsing_shows_its_progress_and_stays_out_of_the_lists(client_as):
    admin = client_as("admin")
    data = {"file": SimpleUploadedFile("jobs.csv", SMALL_TRACE_CSV), "name": "waiting", "format": "auto"}
    response = admin.post("/traces/upload/", data)  # no worker: it stays queued
    page = admin.get(response["Location"]).content.decode()
    assert "A worker is reading the file" in page and 'data-parse-url="/api/traces/' in page
    assert f"0 of {len(SMALL_TRACE_CSV):,} bytes" in page
    assert "waiting" not in client_as("viewer").get("/traces/").content.decode()
    assert "Uploads being read" in admin.get("/traces/").content.decode()
    assert "waiting" not in admin.get("/studies/new/").content.decode()  # not offered to a study


def test_a_taken_name_and_bad_mapping_are_refused_on_their_fields(client_as, small_trace):
    admin = client_as("admin")
    response = upload(admin, SMALL_TRACE_CSV, name="lab-week")
    assert response.context["form"].errors["name"] == ["a trace named 'lab-week' already exists"]
    response = upload(admin, SMALL_TRACE_CSV, name="other", mapping="{share_column: vc}")
    assert response.context["form"].errors["mapping"][0].startswith("not valid JSON")
    response = upload(admin, SMALL_TRACE_CSV, name="other", mapping='{"share_column": "vc"}')
    assert response.context["form"].errors["mapping"] == [
        "mapping: the format 'auto' takes no column mapping"
    ]
    assert Trace.objects.count() == 1


def test_a_good_upload_is_stored_and_opens_its_page(client_as):
    admin = client_as("admin")
    response = upload(admin, SMALL_TRACE_CSV)
    trace = Trace.objects.get(name="week")
    assert response.status_code == 302 and response["Location"] == f"/traces/{trace.pk}/"
    assert trace.job_count == 4 and trace.created_by.username == "admin"
    page = admin.get(response["Location"])
    assert b"GPU-hours" in page.content
    arrivals = page.context["arrivals_chart"]
    assert {t["name"] for t in arrivals["data"]} == {"train", "infer"}
    assert sum(sum(t["y"]) for t in arrivals["data"]) == 4  # every job arrives once
    demand = page.context["demand_chart"]
    assert demand["layout"]["yaxis"]["title"]["text"] == "GPUs in use on average"
    assert page.context["size_chart"]["data"][0]["y"] == [2, 2]  # two 1-instance jobs, two 2-instance
    shares = {row["name"]: row for row in page.context["shares"]}
    assert shares["train"]["gpu_hours"] == pytest.approx(2 * 1 + 1 * 2)  # 2 x 1 h + 1 x 2 h


def test_preview_shows_the_first_jobs_and_stores_nothing(client_as):
    response = client_as("admin").post(
        "/traces/upload/",
        {
            "file": SimpleUploadedFile("jobs.csv", SMALL_TRACE_CSV),
            "name": "",
            "format": "auto",
            "action": "preview",
        },
    )
    assert response.status_code == 200
    preview = response.context["preview"]
    assert [row["job_id"] for row in preview["rows"]] == ["t1", "t2", "i1", "i2"]
    assert Trace.objects.count() == 0


def test_preview_of_an_importer_format_lists_its_columns(client_as):
    with open(SACCT_SAMPLE, "rb") as sample:
        content = sample.read()
    response = client_as("admin").post(
        "/traces/upload/",
        {
            "file": SimpleUploadedFile("sacct.txt", content),
            "format": "slurm-sacct",
            "share_column": "Account",
            "action": "preview",
        },
    )
    assert response.status_code == 200, response.context["form"].errors
    preview = response.context["preview"]
    assert "Account" in preview["columns"]
    assert preview["rows"] and preview["default_mapping"] is not None
    assert Trace.objects.count() == 0


def test_a_viewer_sees_the_trace_list_without_the_upload_button(client_as, small_trace):
    page = client_as("viewer").get("/traces/").content.decode()
    assert "lab-week" in page and "Upload a trace" not in page


def test_the_trace_page_reads_the_summary_not_the_jobs(client_as, small_trace, monkeypatch):
    def refuse(self):
        raise AssertionError("the trace page must not load the jobs")

    monkeypatch.setattr(Trace, "load_jobs", refuse)
    assert client_as("viewer").get(f"/traces/{small_trace.pk}/").status_code == 200


def test_an_empty_file_is_refused_on_the_file_field(client_as):
    response = upload(client_as("admin"), b"", filename="empty.csv")
    assert response.status_code == 400
    assert response.context["form"].errors["file"]
    assert Trace.objects.count() == 0


def test_a_mapping_column_that_is_not_in_the_file_is_named_on_the_trace_page(client_as):
    with open(SACCT_SAMPLE, "rb") as sample:
        content = sample.read()
    with eager_worker():
        response = client_as("admin").post(
            "/traces/upload/",
            {
                "file": SimpleUploadedFile("sacct.txt", content),
                "name": "slurm week",
                "format": "slurm-sacct",
                "share_column": "Nope",
                "mapping": '{"share_default": "other"}',
            },
        )
    assert response.status_code == 302
    trace = Trace.objects.get()
    assert trace.error.startswith("mapping.share_column: 'Nope' is not a column of this trace; columns: ")
    assert trace.error_field == "mapping.share_column" and not trace.jobs_file
