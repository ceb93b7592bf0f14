"""Trace upload: the request keeps the file and answers 202 (status ``parsing``); a worker parses it
with scheduling's readers and stores it once as .npz with its summary (``ready``); bad input fails
the trace with row, field and message, and nothing else is kept. Bodies over the limit get 413."""

import gzip
import json
import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.traces.models import ParseStatus, Trace
from tests.service.conftest import AWS_TRACE_JSON
from tests.uploads import eager_worker, upload_trace

pytestmark = pytest.mark.django_db

GOOD_CSV = b"job_id,submit_time,share,duration,priority\nj1,0,QS1,100,3\nj2,5,QS2,50,0\nj3,9,QS1,20,1\n"


def upload(client, content: bytes, filename: str = "trace.csv", wait: bool = True, **fields):
    data = {"file": SimpleUploadedFile(filename, content), "name": fields.pop("name", "t1"), **fields}
    return upload_trace(client, data, wait=wait)


def files_under(root) -> list[str]:
    root = Path(root)
    return (
        sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
        if root.exists()
        else []
    )


def test_the_upload_is_answered_at_once_with_the_trace_url_and_status_parsing(admin_api, media_root):
    response = upload(admin_api, GOOD_CSV, wait=False)  # no worker runs: the trace waits for one
    assert response.status_code == 202, response.json()
    body = response.json()
    assert body["status"] == "parsing" and body["job_count"] == 0 and body["summary"] == {}
    assert body["parse"]["bytes_read"] == 0 and body["parse"]["bytes_total"] == len(GOOD_CSV)
    assert response["Location"] == body["url"] == f"http://testserver/api/traces/{body['id']}/"
    assert files_under(media_root) == [Trace.objects.get().upload_file.name]  # the file as uploaded


def test_a_csv_upload_is_parsed_by_the_worker_and_stored_once_with_its_summary(admin_api, media_root):
    body = upload(admin_api, GOOD_CSV).json()
    assert body["status"] == "ready" and body["error"] is None
    assert body["parse"]["bytes_read"] == body["parse"]["bytes_total"] == len(GOOD_CSV)
    assert body["job_count"] == 3
    assert {s["name"]: s["jobs"] for s in body["summary"]["shares"]} == {"QS1": 2, "QS2": 1}
    trace = Trace.objects.get(pk=body["id"])
    assert trace.jobs_file.name.endswith(".npz")
    assert trace.load_jobs().job_id == ["j1", "j2", "j3"]
    assert files_under(media_root) == [trace.jobs_file.name]  # the upload itself is gone


def test_a_gzipped_json_trace_with_priority_updates_is_read(admin_api):
    response = upload(admin_api, gzip.compress(AWS_TRACE_JSON), filename="aws.json.gz")
    assert response.json()["status"] == "ready", response.json()
    assert response.json()["summary"]["priority_updates"] == 1


def test_a_negative_duration_fails_the_trace_naming_row_and_field_and_keeps_nothing_else(
    admin_api, media_root
):
    bad = b"job_id,submit_time,share,duration\nj1,0,QS1,100\nj2,5,QS2,-5\n"
    body = upload(admin_api, bad).json()
    assert body["status"] == "failed"
    assert body["error"] == {"row": 2, "field": "duration", "message": "row 2, duration: -5 is negative"}
    assert body["job_count"] == 0 and body["summary"] == {}
    assert files_under(media_root) == []  # no .npz, no upload


def test_a_missing_column_is_reported(admin_api):
    body = upload(admin_api, b"job_id,submit_time,duration\nj1,0,100\n").json()
    assert body["status"] == "failed" and "share" in body["error"]["message"]


def test_a_duplicate_job_id_is_reported_with_its_row(admin_api):
    body = upload(admin_api, b"job_id,submit_time,share,duration\nj1,0,a,1\nj1,1,a,1\n").json()
    assert body["error"]["row"] == 2


def test_more_rows_than_the_limit_are_refused(admin_api, settings):
    settings.PLANNER_MAX_TRACE_ROWS = 2
    body = upload(admin_api, GOOD_CSV).json()
    assert body["status"] == "failed" and "limit is 2" in body["error"]["message"]


def test_a_failed_trace_does_not_keep_its_name(admin_api):
    assert upload(admin_api, b"job_id,submit_time,share,duration\nj1,0,a,-1\n").json()["status"] == "failed"
    again = upload(admin_api, GOOD_CSV).json()  # the same name "t1", the file fixed
    assert again["status"] == "ready" and Trace.objects.count() == 1


def test_a_file_over_the_size_limit_is_a_413_as_json(admin_api, settings, media_root):
    settings.PLANNER_MAX_UPLOAD_BYTES = 20
    response = upload(admin_api, GOOD_CSV)
    assert response.status_code == 413
    assert (
        response.json()["error"]["field"] == "file"
        and "limit of 20 bytes" in response.json()["error"]["message"]
    )
    assert Trace.objects.count() == 0 and files_under(media_root) == []


def test_a_body_declared_over_the_limit_is_a_413_before_it_is_read(admin_api, settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 1000
    response = admin_api.generic(
        "POST", "/api/traces/", b"x" * 70_000, content_type="multipart/form-data; boundary=zzz"
    )  # 70,000 bytes declared: past the limit plus the form's 64 KiB allowance
    assert response.status_code == 413
    assert response.json()["error"] == {
        "row": None,
        "field": "file",
        "message": "file: the upload is 70,000 bytes: the limit is 1,000",
    }


def test_an_unknown_format_is_refused_on_the_format_field(admin_api):
    response = upload(admin_api, GOOD_CSV, format="no-such-format")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "format"
    assert Trace.objects.count() == 0


def test_a_missing_name_is_reported_in_the_same_shape(admin_api):
    response = admin_api.post(
        "/api/traces/", {"file": SimpleUploadedFile("t.csv", GOOD_CSV)}, format="multipart"
    )
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "name"


def test_a_viewer_cannot_upload(viewer_api):
    assert upload(viewer_api, GOOD_CSV).status_code == 403
    assert Trace.objects.count() == 0


def test_deleting_a_trace_removes_its_file(admin_api, media_root):
    trace_id = upload(admin_api, GOOD_CSV).json()["id"]
    path = Trace.objects.get(pk=trace_id).jobs_file.path
    assert admin_api.delete(f"/api/traces/{trace_id}/").status_code == 204
    assert not os.path.exists(path)


def test_the_list_filters_by_status(admin_api):
    upload(admin_api, GOOD_CSV, name="ready-one")
    upload(admin_api, GOOD_CSV, name="waiting-one", wait=False)
    names = lambda query: [t["name"] for t in admin_api.get(f"/api/traces/?status={query}").json()["results"]]  # noqa: E731
    assert names("ready") == ["ready-one"] and names("parsing") == ["waiting-one"]


def test_a_study_on_a_trace_still_parsing_is_a_clear_400(admin_api, aws_policy):
    trace_id = upload(admin_api, GOOD_CSV, wait=False).json()["id"]
    response = admin_api.post(
        "/api/studies/", {"name": "too early", "trace": trace_id, "policies": [aws_policy.pk]}, format="json"
    )
    assert response.status_code == 400
    assert "still being parsed (0% read): start the study once it is ready" in json.dumps(response.json())


def test_a_worker_crash_while_parsing_is_retried_then_fails_the_trace_with_the_reason(
    admin_api, settings, monkeypatch, media_root
):
    """Not bad input: every attempt raises, so after PLANNER_RUN_MAX_ATTEMPTS it fails, never stuck."""
    import planner.traces.tasks as tasks

    settings.PLANNER_RUN_MAX_ATTEMPTS = 2
    settings.PLANNER_RETRY_DELAY_SECONDS = 0

    def crash(*args, **kwargs):
        raise MemoryError("the worker ran out of memory")

    monkeypatch.setattr(tasks, "read_upload", crash)
    body = upload(admin_api, GOOD_CSV).json()
    trace = Trace.objects.get(pk=body["id"])
    assert trace.status == ParseStatus.FAILED and trace.attempts == 2
    assert body["status"] == "failed" and "attempt 2 failed: MemoryError" in body["error"]["message"]
    assert files_under(media_root) == []


def test_a_parse_whose_worker_died_is_sent_again_by_the_reaper(admin_api, settings):
    from datetime import timedelta

    from django.utils import timezone

    trace_id = upload(admin_api, GOOD_CSV, wait=False).json()["id"]
    long_ago = timezone.now() - timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 5)
    Trace.objects.filter(pk=trace_id).update(status=ParseStatus.RUNNING, attempts=1, heartbeat=long_ago)
    with eager_worker():
        body = admin_api.get(f"/api/traces/{trace_id}/").json()  # reading it reaps it: sent again
    assert Trace.objects.get(pk=trace_id).status == ParseStatus.SUCCEEDED, body
    assert Trace.objects.get(pk=trace_id).attempts == 2


def test_a_parse_whose_process_still_runs_is_not_sent_again(admin_api, settings, live_process):
    from datetime import timedelta

    from django.utils import timezone

    trace_id = upload(admin_api, GOOD_CSV, wait=False).json()["id"]
    long_ago = timezone.now() - timedelta(seconds=settings.PLANNER_HEARTBEAT_STALE_SECONDS + 5)
    Trace.objects.filter(pk=trace_id).update(
        status=ParseStatus.RUNNING, attempts=1, heartbeat=long_ago, worker_process=live_process
    )
    with eager_worker():
        admin_api.get(f"/api/traces/{trace_id}/")
    trace = Trace.objects.get(pk=trace_id)
    assert (trace.status, trace.attempts) == (ParseStatus.RUNNING, 1)


ITP_CSV = (
    b"job_id,submission_time,duration,num_gpu,cluster\n"
    b"a,0,100,1,cluster07\nb,5,50,2,cluster01\nc,9,20,1,cluster07\n"
)


def test_an_importer_format_takes_a_mapping_that_is_stored_with_the_trace(admin_api):
    mapping = {"share_names": {"cluster07": "vision", "cluster01": "nlp"}}
    body = upload(admin_api, ITP_CSV, format="itp-2021", mapping=json.dumps(mapping)).json()
    assert body["status"] == "ready", body
    assert {s["name"] for s in body["summary"]["shares"]} == {"vision", "nlp"}
    assert body["mapping"] == mapping


def test_a_mapping_for_a_format_without_one_is_refused(admin_api):
    response = upload(admin_api, GOOD_CSV, format="planner-csv", mapping='{"share_column": "team"}')
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "mapping"


def test_a_mapping_that_is_not_json_is_refused(admin_api):
    response = upload(admin_api, ITP_CSV, format="itp-2021", mapping="{share")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "mapping"


def raw_upload(client, content: bytes, query: str, content_type: str = "text/csv", **headers):
    """The file as the request body itself, the fields in the query string."""
    with eager_worker():
        response = client.generic(
            "POST", f"/api/traces/?{query}", content, content_type=content_type, **headers
        )
    if response.status_code != 202:
        return response
    return client.get(response.json()["url"])


def test_a_trace_sent_as_the_body_is_parsed_with_the_query_strings_fields(admin_api, media_root):
    body = raw_upload(admin_api, GOOD_CSV, "name=raw&description=from+curl&filename=jobs.csv").json()
    assert body["status"] == "ready" and body["job_count"] == 3
    assert (body["name"], body["description"], body["source_name"]) == ("raw", "from curl", "jobs.csv")
    assert body["parse"]["bytes_total"] == len(GOOD_CSV)
    trace = Trace.objects.get(pk=body["id"])
    assert files_under(media_root) == [trace.jobs_file.name]


def test_a_gzipped_json_body_with_content_disposition_names_its_source(admin_api):
    body = raw_upload(
        admin_api, gzip.compress(AWS_TRACE_JSON), "name=aws", content_type="application/gzip",
        HTTP_CONTENT_DISPOSITION='attachment; filename="aws.json.gz"',
    ).json()  # fmt: skip
    assert body["status"] == "ready" and body["source_name"] == "aws.json.gz"


def test_a_json_body_is_a_file_too_not_the_fields(admin_api):
    # application/json is a trace file like any other body: its fields are not read as the form's
    response = raw_upload(admin_api, AWS_TRACE_JSON, "name=j", content_type="application/json")
    assert response.json()["status"] == "ready"
    response = raw_upload(admin_api, b'{"name": "x"}', "", content_type="application/json")
    assert response.status_code == 400 and response.json()["error"]["field"] == "name"


def test_a_body_sent_without_a_content_type_of_its_own_is_the_file(admin_api):
    # curl --data-binary @trace.csv sends application/x-www-form-urlencoded unless told otherwise
    body = raw_upload(admin_api, GOOD_CSV, "name=plain", content_type="application/x-www-form-urlencoded")
    assert body.json()["status"] == "ready" and body.json()["job_count"] == 3


def test_a_body_over_the_size_limit_is_a_413_and_keeps_nothing(admin_api, settings, media_root):
    settings.PLANNER_MAX_UPLOAD_BYTES = 20
    response = raw_upload(admin_api, GOOD_CSV, "name=big")
    assert response.status_code == 413 and response.json()["error"]["field"] == "file"
    assert "limit of 20 bytes" in response.json()["error"]["message"]
    assert Trace.objects.count() == 0 and files_under(media_root) == []


def test_an_empty_body_is_no_file(admin_api):
    response = raw_upload(admin_api, b"", "name=empty")
    assert response.status_code == 400 and response.json()["error"]["field"] == "file"


def _rows(count: int) -> bytes:
    return b"job_id,submit_time,share,duration\n" + b"".join(
        b"job-%07d,%d,QS%d,60\n" % (k, k, 1 + k % 2) for k in range(count)
    )


@pytest.mark.parametrize("send", ["form", "body"])
def test_a_file_streamed_to_disk_and_written_behind_arrives_whole(admin_api, settings, monkeypatch, send):
    # Past FILE_UPLOAD_MAX_MEMORY_SIZE the upload goes to a temporary file, written behind a
    # window at a time (windows of 4 KB here, so that many are let go)
    from scheduling import write_behind

    monkeypatch.setattr(write_behind, "WINDOW", 4096)
    settings.FILE_UPLOAD_MAX_MEMORY_SIZE = 1024
    content = _rows(3000)
    if send == "form":
        body = upload(admin_api, content, name="disk").json()
    else:
        body = raw_upload(admin_api, content, "name=disk").json()
    assert body["status"] == "ready", body["error"]
    assert body["job_count"] == 3000 and body["parse"]["bytes_total"] == len(content)
    assert Trace.objects.get(pk=body["id"]).load_jobs().job_id[2999] == "job-0002999"
