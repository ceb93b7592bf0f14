"""Issue 25, item 6, through the API and the worker: a gzip bomb is refused at its first attempt
with the limit named; a NUL byte in a header is refused naming the column, stored without the NUL
(PostgreSQL refuses it: the parse failed three times as a DataError); an error the same input would
raise again is final at once."""

from __future__ import annotations

import gzip

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import DataError

from planner.studies import tasks as study_tasks
from planner.studies.launch import StudyLaunch, launch_study
from planner.studies.tasks import replay_run
from planner.traces import models as trace_models
from planner.traces.models import ParseStatus, Trace
from tests.fixtures import raise_on_every_call
from tests.uploads import upload_trace

pytestmark = pytest.mark.django_db


def upload(client, content: bytes, filename: str = "trace.csv.gz"):
    return upload_trace(client, {"file": SimpleUploadedFile(filename, content), "name": "t1"}).json()


def test_a_gzip_bomb_fails_on_its_first_attempt_naming_the_limit(admin_api, settings, media_root):
    settings.PLANNER_MAX_DECOMPRESSED_BYTES = 1024 * 1024
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    bomb = gzip.compress(b"job_id,submit_time,share,duration\n" + b"\n" * (8 * 1024 * 1024))
    assert len(bomb) < 20_000
    body = upload(admin_api, bomb)
    trace = Trace.objects.get(pk=body["id"])
    assert (trace.status, trace.attempts, trace.error_field) == (ParseStatus.FAILED, 1, "file")
    assert body["error"]["message"] == (
        "file: the gzip data decompresses to more than 1,048,576 bytes, the limit for a compressed "
        "file: send a smaller file, or split it"
    )


def test_the_decompressed_limit_is_the_upload_limit_by_default():
    from django.conf import settings

    assert settings.PLANNER_MAX_DECOMPRESSED_BYTES == settings.PLANNER_MAX_UPLOAD_BYTES


def test_a_nul_byte_in_a_csv_header_fails_at_once_naming_the_column(admin_api, settings):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    body = upload(admin_api, b"job_id,sha\x00re,submit_time,duration\nj1,A,0,10\n", "trace.csv")
    trace = Trace.objects.get(pk=body["id"])
    assert (trace.status, trace.attempts) == (ParseStatus.FAILED, 1)
    assert body["error"] == {
        "row": None,
        "field": "header column 2",
        "message": "header column 2: contains a NUL byte",
    }
    assert "\x00" not in trace.error + trace.error_field


def test_a_nul_byte_in_a_text_field_fails_at_once_with_row_and_field(admin_api):
    body = upload(admin_api, b"job_id,share,submit_time,duration\nj1,A,0,10\nj2,B\x00,0,10\n", "trace.csv")
    assert body["error"] == {"row": 2, "field": "share", "message": "row 2, share: contains a NUL byte"}
    assert Trace.objects.get(pk=body["id"]).attempts == 1


def test_an_unexpected_reader_error_is_final_on_the_first_attempt(admin_api, settings, monkeypatch):
    """The same file would raise it again: no three attempts, no half-minute of retries."""
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    calls = raise_on_every_call(monkeypatch, trace_models, "read_trace", KeyError("cluster"))
    body = upload(admin_api, b"job_id,share,submit_time,duration\nj1,A,0,10\n", "trace.csv")
    assert len(calls) == 1
    assert Trace.objects.get(pk=body["id"]).attempts == 1
    assert body["error"]["message"] == "the file could not be read: KeyError: 'cluster'"


def test_a_result_the_database_refuses_fails_the_run_at_once(
    aws_policy, aws_trace, settings, monkeypatch, django_capture_on_commit_callbacks
):
    settings.PLANNER_RUN_MAX_ATTEMPTS = 3
    with django_capture_on_commit_callbacks(execute=False):
        run = launch_study(StudyLaunch(name="s", trace=aws_trace, policies=[aws_policy])).runs.get()
    calls = raise_on_every_call(
        monkeypatch, study_tasks, "recorded_metrics", DataError("integer out of range")
    )
    assert replay_run.apply(args=[run.pk]).get() == "failed"
    run.refresh_from_db()
    assert (run.status, run.attempts, len(calls)) == ("failed", 1, 1)
    assert run.error == "attempt 1: the database refused the result: integer out of range"
