"""The API does what the pages do: the study and finance CSVs take a token (401/403 JSON for a
script, never the login page), and the job finder answers at /api/studies/<id>/jobs/."""

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from planner.studies.launch import StudyLaunch, launch_study
from tests.pages.conftest import eager_celery, roles, small_policy, small_trace, users  # noqa: F401

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(small_policy, small_trace, eager_celery):  # noqa: F811
    return launch_study(StudyLaunch(name="lab", trace=small_trace, policies=[small_policy]))


def _token(user) -> str:
    return f"Token {Token.objects.create(user=user).key}"


def test_a_token_downloads_the_study_csv(users, study):  # noqa: F811
    response = Client().get(f"/studies/{study.pk}/policies.csv", HTTP_AUTHORIZATION=_token(users["viewer"]))
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert "lab-policy" in response.content.decode("utf-8-sig")


def test_a_bad_or_missing_token_gets_401_json_not_the_login_page(users, study):  # noqa: F811
    bad = Client().get(f"/studies/{study.pk}/policies.csv", HTTP_AUTHORIZATION="Token nope")
    assert bad.status_code == 401 and bad["WWW-Authenticate"] == "Token"
    assert bad.json() == {"detail": "Invalid token."}
    script = Client().get(f"/studies/{study.pk}/shares.csv", HTTP_ACCEPT="*/*")  # curl's default
    assert script.status_code == 401 and "Authorization: Token" in script.json()["detail"]
    browser = Client().get(f"/studies/{study.pk}/shares.csv", HTTP_ACCEPT="text/html,*/*")
    assert browser.status_code == 302 and "/login/" in browser["Location"]  # a person signs in


def test_a_role_without_finance_gets_403_json_on_the_finance_csv(users, study):  # noqa: F811
    denied = Client().get("/finance/report.csv", HTTP_AUTHORIZATION=_token(users["viewer"]))
    assert denied.status_code == 403
    assert denied.json() == {"detail": "Finance reports need the finance or admin role."}
    nobody = Client().get(f"/studies/{study.pk}/policies.csv", HTTP_AUTHORIZATION=_token(users["nobody"]))
    assert nobody.status_code == 403 and "viewer role" in nobody.json()["detail"]


def test_job_search_in_the_api(users, study):  # noqa: F811
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=_token(users["viewer"]))
    run = study.runs.get()
    found = api.get(f"/api/studies/{study.pk}/jobs/", {"search": "t"}).json()
    assert found["run"] == run.pk and found["search"] == "t" and found["more"] is False
    rows = [(j["job_id"], j["share"], j["wait"]) for j in found["results"]]
    assert rows == [("t1", "train", 0.0), ("t2", "train", 0.0)]
    assert found["results"][1]["timeline_url"].endswith(f"/api/runs/{run.pk}/job-timeline/?job_id=t2")
    assert api.get(found["results"][1]["timeline_url"]).json()["job_id"] == "t2"
    exact = api.get(f"/api/studies/{study.pk}/jobs/", {"search": "I2", "share": "infer"}).json()
    assert [j["job_id"] for j in exact["results"]] == ["i2"]
    assert exact["results"][0]["wait"] is None  # it never ran: infer (quota 1) may not borrow 2
    lists = api.get(f"/api/studies/{study.pk}/jobs/").json()
    assert "results" not in lists and {j["share"] for j in lists["longest_waits"]} == {"train", "infer"}
    one = api.get(f"/api/studies/{study.pk}/jobs/", {"search": "t", "limit": "1"}).json()
    assert len(one["results"]) == 1 and one["more"] is True


def test_job_search_names_the_bad_parameter(users, study):  # noqa: F811
    from rest_framework.test import APIClient

    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=_token(users["viewer"]))
    bad = api.get(f"/api/studies/{study.pk}/jobs/", {"share": "nope"})
    assert bad.status_code == 400
    assert bad.json()["share"] == "'nope' is not a share of this trace: train, infer"
    assert "limit" in api.get(f"/api/studies/{study.pk}/jobs/", {"limit": "0"}).json()
    assert "run" in api.get(f"/api/studies/{study.pk}/jobs/", {"run": "999"}).json()
    assert api.get("/api/studies/999/jobs/").status_code == 404
    assert APIClient().get(f"/api/studies/{study.pk}/jobs/").status_code == 401
