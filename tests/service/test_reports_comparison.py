"""The study comparison's tables on hand-made metrics (differences to the baseline, verdicts in
words, sorting) and the spreadsheet-safe CSV cells."""

from __future__ import annotations

import pytest

from planner.reports.comparison import (
    POLICY_COLUMNS,
    RunColumn,
    format_delta,
    format_value,
    policy_table,
    share_table,
    verdict,
    verdict_cards,
)
from planner.reports.exports import csv_text, safe_cell

HOUR = 3600.0


def run_metrics(
    utilization: float, waits: dict[str, float], rerun_usd: float, unschedulable: int = 0
) -> dict:
    """A run with shares named by ``waits`` (p95 wait in hours)."""

    def dist(p95_hours: float) -> dict:
        return {"p50": 0.0, "p95": p95_hours * HOUR, "p99": 2 * p95_hours * HOUR}

    return {
        "summary": {
            "utilization": utilization,
            "useful_utilization": utilization - 0.01,
            "jobs": 100,
            "succeeded": 100 - unschedulable,
            "unschedulable": unschedulable,
            "wait_seconds": dist(max(waits.values())),
            "jct_seconds": dist(10),
            "preemptions": {"cross_share": 3, "in_share": 1},
            "rerun_gpu_hours": rerun_usd / 2,
            "rerun_cost_usd": rerun_usd,
        },
        "shares": [
            {"name": name, "jobs": 50, "unschedulable": 0, "wait_seconds": dist(w), "jct_seconds": dist(10)}
            for name, w in waits.items()
        ],
    }


BASE = RunColumn(1, "configured", 0, True, run_metrics(0.60, {"a": 2.0, "b": 1.0}, 100.0))
SPLIT = RunColumn(2, "static split", 1, False, run_metrics(0.55, {"a": 5.0, "b": 0.5}, 40.0, unschedulable=2))


def test_policy_table_differences_against_the_baseline():
    table = policy_table([BASE, SPLIT])
    base_row, split_row = table.rows
    assert base_row["utilization"].delta is None
    assert split_row["utilization"].value == pytest.approx(55.0)
    assert split_row["utilization"].delta == pytest.approx(-5.0)
    assert split_row["utilization"].verdict == "worse"
    assert split_row["wait_p95"].delta == 3.0  # hours
    assert split_row["wait_p95"].verdict == "worse"
    assert split_row["rerun_usd"].delta == -60.0
    assert split_row["rerun_usd"].verdict == "better"
    assert split_row["unschedulable"].verdict == "worse"


def test_share_table_compares_each_share_with_the_same_share_of_the_baseline():
    table = share_table([BASE, SPLIT])
    rows = {(r["share"].value, r["policy"].value): r for r in table.rows}
    assert rows[("b", "static split")]["wait_p95"].delta == -0.5
    assert rows[("b", "static split")]["wait_p95"].verdict == "better"
    assert rows[("a", "static split")]["wait_p99"].delta == 6.0
    assert [r["share"].value for r in table.rows] == ["a", "a", "b", "b"]


def test_verdict_cards_carry_every_share_p95_and_the_rerun_cost():
    cards = verdict_cards([BASE, SPLIT])
    labels = [line.label for line in cards[1].lines]
    assert labels == [
        "Utilization",
        "Useful utilization",
        "p95 wait, a",
        "p95 wait, b",
        "Rerun cost",
        "Rerun cost",
        "Unschedulable jobs",
        "Cancelled jobs (RUNNABLE limit)",
    ]
    # in GPU-hours for every role (20 against the baseline's 50), then in $ (finance and admin)
    hours = cards[1].lines[4]
    assert format_value(hours.cell, hours.column, with_unit=True) == "20.0 GPU-hours"
    assert format_delta(hours.cell, hours.column) == "−30.0 GPU-hours, better"
    rerun = cards[1].lines[5]
    assert format_value(rerun.cell, rerun.column) == "$40"
    assert format_delta(rerun.cell, rerun.column) == "−$60, better"
    wait = cards[1].lines[2]
    assert format_value(wait.cell, wait.column, with_unit=True) == "5.00 h"
    assert format_delta(wait.cell, wait.column) == "+3.00 h, worse"
    utilization = cards[1].lines[0]
    assert format_delta(utilization.cell, utilization.column) == "−5.0 pts, worse"
    assert all(line.cell.delta is None for line in cards[0].lines)


def test_a_difference_that_rounds_to_zero_is_the_same():
    assert verdict(0.004, "lower", 2) == "same"
    assert verdict(0.006, "lower", 2) == "worse"
    assert verdict(-0.04, "higher", 1) == "same"
    assert verdict(3.0, "", 1) == ""


def test_sorting_by_a_column_puts_missing_values_last():
    table = policy_table([BASE, SPLIT])
    by_wait = table.sorted("wait_p95", descending=True)
    assert [r["policy"].value for r in by_wait.rows] == ["static split", "configured"]
    by_name = table.sorted("policy", descending=False)
    assert [r["policy"].value for r in by_name.rows] == ["configured", "static split"]
    assert table.sorted("no such column", descending=True) is table
    assert {c.key for c in POLICY_COLUMNS} >= {"utilization", "wait_p95", "rerun_usd"}


def test_csv_cells_a_spreadsheet_would_execute_are_quoted():
    assert safe_cell('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert safe_cell("+1") == "'+1"
    assert safe_cell("-2+3") == "'-2+3"
    assert safe_cell("@SUM(A1)") == "'@SUM(A1)"
    assert safe_cell("\tcmd") == "'\tcmd"
    assert safe_cell("\rcmd") == "'\rcmd"
    assert safe_cell("research") == "research"
    assert safe_cell(-5.5) == -5.5  # numbers stay numbers
    assert safe_cell(None) == ""
    text = csv_text(["share", "wait"], [["=cmd|' /C calc'!A0", -1.5], ["ok", 2]])
    assert text.splitlines() == ["share,wait", "'=cmd|' /C calc'!A0,-1.5", "ok,2"]
