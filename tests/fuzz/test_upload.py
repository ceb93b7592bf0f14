"""The trace upload (API and page) against the broken-file corpus and hypothesis-made files. The
request keeps the file and answers 202; the worker (eager here) parses it: every bad file fails the
trace with ``{"row", "field", "message"}``, never a 500 or a crash, and nothing half-stored (the
failed Trace row keeps only its message: no jobs file, no upload, counted under MEDIA_ROOT before
and after). A bad request itself (format, mapping) is an HTTP 400; a body over the size limit 413.
The size and row limits are configurable and enforced while streaming."""

from __future__ import annotations

import gzip
import html
import itertools

import pytest
from django.core.exceptions import RequestDataTooBig
from django.core.files.uploadedfile import SimpleUploadedFile
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.traces.models import Trace
from planner.traces.uploads import LimitedUploadHandler
from tests.fuzz.test_readers import EXAMPLES, HEADER, VALID, WHERE, broken_files
from tests.uploads import eager_worker, upload_trace

pytestmark = pytest.mark.django_db
names = itertools.count()


def upload(client, data: bytes, filename: str, **fields):
    """The trace once the worker has parsed it (or the refused request)."""
    payload = {"name": f"upload-{next(names)}", "file": SimpleUploadedFile(filename, data), **fields}
    return upload_trace(client, payload)


def failed_rows() -> int:
    return Trace.objects.filter(status="failed").count()


@pytest.mark.parametrize("name", sorted(set(broken_files()) - set(VALID)))
def test_a_broken_file_fails_the_trace_naming_row_and_field_and_stores_nothing(admin_api, stored, name):
    before = stored()
    response = upload(admin_api, broken_files()[name], name)
    if response.status_code == 400:  # refused with the request (an empty file): nothing kept at all
        assert response.json()["error"]["field"] == "file" and stored() == before
        return
    assert response.status_code == 200, response.content[:300]
    assert response.json()["status"] == "failed"
    error = response.json()["error"]
    assert set(error) == {"row", "field", "message"} and error["message"]
    if name in WHERE:
        assert (error["row"], error["field"] if WHERE[name][1] else None) == WHERE[name]
    assert stored() == (before[0] + 1, before[1]) and failed_rows() == 1  # the row and its message only


@pytest.mark.parametrize("name", sorted(set(broken_files()) - set(VALID)))
def test_the_upload_page_shows_a_broken_file_refused_on_the_trace_page(admin_page, stored, name):
    before = stored()
    with eager_worker():
        response = admin_page.post(
            "/traces/upload/",
            {
                "name": f"page-{name}",
                "format": "auto",
                "file": SimpleUploadedFile(name, broken_files()[name]),
            },
        )
    if response.status_code == 400:  # refused with the request (an empty file): the form says why
        assert b"errorlist" in response.content and stored() == before
        return
    assert response.status_code == 302
    page = admin_page.get(response["Location"])
    assert page.status_code == 200 and b"This upload was refused" in page.content
    assert Trace.objects.get(name=f"page-{name}").error in html.unescape(page.content.decode("utf-8"))
    assert stored() == (before[0] + 1, before[1])


@pytest.mark.parametrize("name", sorted(VALID))
def test_odd_but_valid_files_are_stored_once(admin_api, stored, name):
    rows, files = stored()
    response = upload(admin_api, broken_files()[name], name)
    assert response.json()["status"] == "ready", response.json()
    assert response.json()["job_count"] == VALID[name]
    assert stored() == (rows + 1, files + 1)


@settings(max_examples=max(10, EXAMPLES // 5), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])  # fmt: skip
@given(
    data=st.one_of(
        st.binary(max_size=1500),
        st.lists(st.text(max_size=10), max_size=30).map(lambda cells: (HEADER + ",".join(cells)).encode()),
    ),
    filename=st.sampled_from(["t.csv", "t.json", "t.csv.gz", "t", "../../etc/passwd", "t\x00.csv", "ü.csv"]),
    fmt=st.sampled_from(["auto", "planner-csv", "planner-json", "slurm-sacct", "helios", "nonsense", ""]),
    mapping=st.sampled_from(["", "{}", "[1]", "{bad json", '{"share_column": 5}', "null"]),
)
def test_hypothesis_uploads_are_ready_failed_or_a_json_400(admin_api, stored, data, filename, fmt, mapping):
    before = stored()
    response = upload(admin_api, data, filename, format=fmt, mapping=mapping)
    assert response.status_code in (200, 400), response.content[:300]
    body = response.json()
    if response.status_code == 400:  # the request itself: format or mapping
        assert "error" in body and body["error"]["message"], body
        assert stored() == before
    elif body["status"] == "failed":
        assert body["error"]["message"], body
        assert stored() == (before[0] + 1, before[1])
    else:
        assert body["status"] == "ready", body
        assert stored() == (before[0] + 1, before[1] + 1)


def test_the_size_limit_is_configurable_and_answered_as_json(admin_api, stored, settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 2000
    data = (HEADER + "".join(f"j{i},{i},train,1,1,60\n" for i in range(400))).encode()
    assert 2000 < len(data) < 64 * 1024  # past the limit, but not by the declared Content-Length check
    before = stored()
    response = upload(admin_api, data, "big.csv")
    assert response.status_code == 413
    error = response.json()["error"]
    assert error["field"] == "file" and "2,000" in error["message"]
    assert stored() == before
    huge = upload(admin_api, b"x" * 200_000, "huge.csv")  # refused from its Content-Length alone
    assert huge.status_code == 413 and huge.json()["error"]["field"] == "file"


def test_the_size_limit_stops_the_upload_while_it_streams(settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 10_000
    handler = LimitedUploadHandler()
    handler.new_file("file", "big.csv", "text/csv", None)
    chunk = b"x" * 4096
    handler.receive_data_chunk(chunk, 0)
    handler.receive_data_chunk(chunk, 4096)
    with pytest.raises(RequestDataTooBig):
        handler.receive_data_chunk(chunk, 8192)  # the third chunk passes 10,000 bytes: stop here


def test_the_row_limit_is_configurable(admin_api, stored, settings):
    settings.PLANNER_MAX_TRACE_ROWS = 50
    data = (HEADER + "".join(f"j{i},{i},train,1,1,60\n" for i in range(80))).encode()
    before = stored()
    response = upload(admin_api, data, "long.csv")
    assert response.json()["status"] == "failed"
    assert response.json()["error"]["row"] == 51 and "50" in response.json()["error"]["message"]
    assert stored() == (before[0] + 1, before[1])


def test_a_failure_while_storing_leaves_no_file(admin_api, stored, monkeypatch):
    """The row is created after the upload is written: if creating it fails, the file goes too."""

    def broken_create(*args, **kwargs):
        raise RuntimeError("database went away")

    monkeypatch.setattr(Trace.objects, "create", broken_create)
    before = stored()
    with pytest.raises(RuntimeError):
        upload(admin_api, (HEADER + "j1,0,train,1,1,60\n").encode(), "ok.csv")
    assert stored() == before


def test_a_gzip_json_upload_is_read_through(admin_api):
    data = gzip.compress(b'{"jobs": [{"job_id": "a", "submit_time": 0, "share": "s", "duration": 60}]}')
    response = upload(admin_api, data, "t.json.gz")
    assert response.json()["status"] == "ready", response.json()
    assert response.json()["job_count"] == 1


def test_the_upload_page_refuses_a_file_past_the_limit_with_a_413(admin_page, stored, settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 2000
    data = (HEADER + "".join(f"j{i},{i},train,1,1,60\n" for i in range(400))).encode()
    before = stored()
    response = admin_page.post(
        "/traces/upload/", {"name": "too-big", "format": "auto", "file": SimpleUploadedFile("big.csv", data)}
    )
    assert response.status_code == 413
    assert b"errorlist" in response.content and b"2,000 bytes" in response.content  # the form, with why
    assert stored() == before


def test_the_upload_page_refuses_a_body_declared_past_the_limit_with_the_form(admin_page, stored, settings):
    settings.PLANNER_MAX_UPLOAD_BYTES = 1000
    before = stored()
    response = admin_page.generic(
        "POST", "/traces/upload/", b"x" * 70_000, content_type="multipart/form-data; boundary=zzz"
    )  # declared 70,000 bytes: refused before the body is read, with the form saying why
    assert response.status_code == 413
    assert b"errorlist" in response.content and b"70,000 bytes: the limit is 1,000" in response.content
    assert stored() == before
