"""Trace upload: parsed by scheduling's readers, stored once as .npz with its summary; bad
input gives HTTP 400 with row, field and message, and nothing is stored."""

import gzip
import json
import os

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from planner.traces.models import Trace
from tests.service.conftest import AWS_TRACE_JSON

pytestmark = pytest.mark.django_db

GOOD_CSV = b"job_id,submit_time,share,duration,priority\nj1,0,QS1,100,3\nj2,5,QS2,50,0\nj3,9,QS1,20,1\n"


def upload(client, content: bytes, filename: str = "trace.csv", **fields):
    data = {"file": SimpleUploadedFile(filename, content), "name": fields.pop("name", "t1"), **fields}
    return client.post("/api/traces/", data, format="multipart")


def test_a_csv_upload_is_stored_once_with_its_summary(admin_api):
    response = upload(admin_api, GOOD_CSV)
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["job_count"] == 3
    assert {s["name"]: s["jobs"] for s in body["summary"]["shares"]} == {"QS1": 2, "QS2": 1}
    trace = Trace.objects.get(pk=body["id"])
    assert trace.jobs_file.name.endswith(".npz")
    assert trace.load_jobs().job_id == ["j1", "j2", "j3"]


def test_a_gzipped_json_trace_with_priority_updates_is_read(admin_api):
    response = upload(admin_api, gzip.compress(AWS_TRACE_JSON), filename="aws.json.gz")
    assert response.status_code == 201, response.json()
    assert response.json()["summary"]["priority_updates"] == 1


def test_a_negative_duration_names_its_row_and_field_and_stores_nothing(admin_api):
    bad = b"job_id,submit_time,share,duration\nj1,0,QS1,100\nj2,5,QS2,-5\n"
    response = upload(admin_api, bad)
    assert response.status_code == 400
    error = response.json()["error"]
    assert (error["row"], error["field"]) == (2, "duration")
    assert "-5" in error["message"]
    assert Trace.objects.count() == 0


def test_a_missing_column_is_reported(admin_api):
    response = upload(admin_api, b"job_id,submit_time,duration\nj1,0,100\n")
    assert response.status_code == 400
    assert "share" in json.dumps(response.json()["error"])
    assert Trace.objects.count() == 0


def test_a_duplicate_job_id_is_reported_with_its_row(admin_api):
    response = upload(admin_api, b"job_id,submit_time,share,duration\nj1,0,a,1\nj1,1,a,1\n")
    assert response.status_code == 400
    assert response.json()["error"]["row"] == 2


def test_more_rows_than_the_limit_are_refused(admin_api, settings):
    settings.PLANNER_MAX_TRACE_ROWS = 2
    response = upload(admin_api, GOOD_CSV)
    assert response.status_code == 400
    assert "limit is 2" in response.json()["error"]["message"]
    assert Trace.objects.count() == 0


def test_a_file_over_the_size_limit_is_refused(admin_api, settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 20
    response = upload(admin_api, GOOD_CSV)
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "file"


def test_an_unknown_format_is_refused_on_the_format_field(admin_api):
    response = upload(admin_api, GOOD_CSV, format="no-such-format")
    assert response.status_code == 400
    assert response.json()["error"]["field"] == "format"


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


ITP_CSV = (
    b"job_id,submission_time,duration,num_gpu,cluster\n"
    b"a,0,100,1,cluster07\nb,5,50,2,cluster01\nc,9,20,1,cluster07\n"
)


def test_an_importer_format_takes_a_mapping_that_is_stored_with_the_trace(admin_api):
    mapping = {"share_names": {"cluster07": "vision", "cluster01": "nlp"}}
    response = upload(admin_api, ITP_CSV, format="itp-2021", mapping=json.dumps(mapping))
    assert response.status_code == 201, response.json()
    body = response.json()
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
