"""The finance report in a real browser: who may open it, the choices kept in the URL, the
capacity check, the chart, a second policy side by side, and the CSV download."""

from __future__ import annotations

import copy
import math
import re

import pytest

from planner.advisor.models import Sweep, SweepVariant
from planner.studies.models import Run, RunStatus, Study, run_summary
from planner.studies.window import apply_study_window
from tests.pages.conftest import look_at
from tests.service.test_reports_views import replayed_study

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def study(roles):
    """Two runs as a worker leaves them: with their summaries, on the study's common window."""
    study = replayed_study("finance", jobs=1500, variants=1)
    for run in study.runs.all():
        Run.objects.filter(pk=run.pk).update(summary=run_summary(run.metrics))
    apply_study_window(study.pk)
    return study


@pytest.mark.parametrize("role", ["finance", "admin"])
def test_finance_and_admin_read_the_report(page_as, study, role):
    page = page_as(role)
    page.goto("/finance/")
    assert page.locator('.topnav a[aria-current="page"]').text_content() == "Finance"
    baseline = study.runs.get(policy=study.baseline)
    assert page.get_by_label("Policy (run)").input_value() == str(baseline.pk)
    assert "✓ Adds up" in page.locator("#check-title + p").inner_text()
    # The answer comes first: the study's policies side by side (pool cost, idle, stranded, lent,
    # rerun, each against the baseline), then the chargeback per share, on the first screen.
    policies = page.locator("#finance-policies")
    assert list(policies.locator("thead th").all_inner_texts()) == [
        "Policy",
        "Pool cost",
        "Idle",
        "Stranded",
        "Lent",
        "Rerun",
    ]
    rows = policies.locator("tbody tr")
    assert rows.count() == 2 and "baseline" in rows.first.inner_text()
    assert re.search(r"[+−±]\$[\d,.]+", rows.nth(1).inner_text())  # the difference from the baseline
    assert policies.bounding_box()["y"] < 900
    assert page.locator("#chargeback").bounding_box()["y"] < page.locator("#f-study").bounding_box()["y"]
    assert page.locator("#no-prices").count() == 0  # the demo pool is priced
    shares = baseline.metrics["shares"]
    assert page.locator("#chargeback tbody tr").count() == len(shares)
    assert page.locator("#chargeback tfoot td").first.inner_text() == "All shares"
    # the per-period table is folded
    assert not page.locator("#finance-periods").is_visible()
    assert "Every figure here is measured over one window" in page.locator("#window-note").inner_text()
    # the glossary is folded at the end
    page.locator(".reports-definitions summary").click()
    definitions = page.locator(".reports-definitions").inner_text()
    for word in ("Lent", "Idle", "Stranded"):
        assert word in definitions
    assert "in proportion to what each had lendable" in definitions
    look_at(page, f"finance-{role}", "#finance-chart")


def test_a_viewer_is_refused_and_sees_no_finance_link(page_as, study):
    page = page_as("viewer")
    response = page.goto("/finance/")
    assert response.status == 403
    page.goto("/")
    assert page.locator(".topnav").get_by_text("Finance").count() == 0


def test_choices_are_kept_in_the_url_and_a_second_policy_is_compared(page_as, study):
    page = page_as("finance")
    page.goto("/finance/")
    page.get_by_label("Period", exact=True).select_option("week")
    page.wait_for_url(re.compile(r"period=week"))
    page.get_by_label("Idle capacity").select_option("usage")
    page.wait_for_url(re.compile(r"idle=usage"))
    page.locator("#periods-details > summary").click()
    periods = page.locator("#finance-periods tbody td:first-child").all_inner_texts()
    days = len(study.runs.get(policy=study.baseline).metrics["periods"]["day"])
    # a last week shorter than 7 days says so ("week 1 (partial: 6.0 of 7 days)")
    assert {p.split(" (partial")[0] for p in periods} == {f"week {n + 1}" for n in range(math.ceil(days / 7))}
    assert days % 7 == 0 or periods[-1].endswith(f"(partial: {days % 7:.1f} of 7 days)")
    headings = page.locator("#finance-periods thead th").all_inner_texts()
    assert any(h.startswith("Idle shared out") for h in headings)
    other = study.runs.exclude(policy=study.baseline).get()
    # a policy of the side-by-side table opens its chargeback
    page.locator("#finance-policies").get_by_role("link", name=other.policy_name).click()
    page.wait_for_url(re.compile(rf"run={other.pk}"))
    assert page.get_by_label("Policy (run)").input_value() == str(other.pk)
    assert "period=week" in page.url and "idle=usage" in page.url
    page.get_by_label("Policy (run)").select_option(str(study.runs.get(policy=study.baseline).pk))
    page.wait_for_url(re.compile(rf"run={study.runs.get(policy=study.baseline).pk}"))
    page.get_by_label("Compare with").select_option(str(other.pk))
    page.wait_for_url(re.compile(rf"compare={other.pk}"))
    assert f"against {other.policy_name}" in page.locator("#compare-title").inner_text()
    assert page.locator("#finance-compare tbody tr").count() >= 5  # two shares at least, unassigned, total
    shared = page.url
    page.goto(shared)
    assert page.get_by_label("Period", exact=True).input_value() == "week"
    assert page.get_by_label("Idle capacity").input_value() == "usage"
    assert page.get_by_label("Compare with").input_value() == str(other.pk)
    look_at(page, "finance-compared", "#finance-chart-other")


def test_csv_download_of_the_report(page_as, study):
    page = page_as("admin")
    page.goto("/finance/?period=month&idle=quota")
    with page.expect_download() as download:
        page.locator("#whole-title").locator("xpath=..").get_by_text("Download CSV").click()
    assert download.value.suggested_filename.endswith("-month-quota.csv")
    with open(download.value.path(), encoding="utf-8-sig") as stream:
        lines = stream.read().splitlines()
    assert lines[0].startswith("period,line,Capacity (GPU-hours),Capacity ($)")
    assert any(line.startswith("month 1 (30 days),Pool total,") for line in lines)


def copied_study(source, name: str, *, price: float | None = None) -> Study:
    """A newer study of ``source``'s runs (their metrics as they are), its policies' instance
    types at ``price`` when given: a $0 import when 0."""
    study = Study.objects.create(name=name, trace=source.trace, baseline=source.baseline)
    for run in source.runs.order_by("id"):
        snapshot = copy.deepcopy(run.policy_snapshot)
        if price is not None:
            for spec in snapshot["instance_types"].values():
                spec["hourly_price"] = price
        Run.objects.create(
            study=study, policy=run.policy, policy_name=run.policy_name, policy_snapshot=snapshot,
            status=RunStatus.SUCCEEDED, progress=1.0, metrics=run.metrics, summary=run.summary,
        )  # fmt: skip
    return study


def test_finance_opens_on_a_priced_study_and_sweeps_stay_off_finance_and_commons(page_as, study):
    unpriced = copied_study(study, "Kueue import", price=0.0)
    swept = copied_study(study, "Advisor: finance sweep")
    sweep = Sweep.objects.create(
        name="finance-sweep", trace=study.trace, base_policy=study.baseline, study=swept
    )
    variant = study.runs.exclude(policy=study.baseline).get().policy
    SweepVariant.objects.create(sweep=sweep, policy=variant, number=1, label="a variant", kept=False)
    page = page_as("finance")
    page.goto("/finance/")
    # the newest studies are a sweep and a $0 import: finance opens on the priced one
    assert page.get_by_label("Study", exact=True).input_value() == str(study.pk)
    assert page.locator("#no-prices").count() == 0
    listed = page.locator("#f-study option").all_inner_texts()
    assert not any("Advisor" in text for text in listed) and any("Kueue import" in t for t in listed)
    page.goto(f"/finance/?study={swept.pk}")  # a sweep's study is not offered, even asked for
    assert page.get_by_label("Study", exact=True).input_value() == str(study.pk)
    page.goto(f"/finance/?study={unpriced.pk}")
    assert "have no hourly price" in page.locator("#no-prices").inner_text()
    assert re.search(r"the pool had [\d,]+ GPU-hours, of which [\d,.]+ GPU-hours \(\d",
                     page.locator("#finance-answer").inner_text())  # fmt: skip
    look_at(page, "finance-no-prices")
    # commons lists the runs of studies, never a sweep's
    page.goto(f"/commons/?trace={study.trace.pk}")
    runs = page.locator("#f-run option").all_inner_texts()
    assert runs and not any(text.startswith("Advisor") for text in runs)
    assert len(runs) == 2 * study.runs.count()  # the study and the $0 import, each run once
