"""The finance report's arithmetic on hand-made metrics: period sums, labels, the three ways of
showing idle capacity, the pool's capacity identity, partial days and the two-policy comparison."""

from __future__ import annotations

import pytest

from planner.reports.finance import (
    IDLE_LINE,
    TOTAL,
    UNASSIGNED,
    capacity_in_horizon,
    compare_reports,
    finance_report,
    group_days,
    unassigned_usd_rates,
)

DAY = 86400.0
PRICE = 2.0  # $ per GPU-hour
# GPU-hours per day: A (quota 4 GPUs) and B (quota 2 GPUs) lend and borrow; 2 GPUs unassigned.
# Borrowed 6 + 12 = lent 10 + 0 + unassigned lent 8.
A = {"capacity": 96, "own": 40, "lent": 10, "borrowed": 6, "idle": 46, "stranded": 0, "rerun": 1}
B = {"capacity": 48, "own": 20, "lent": 0, "borrowed": 12, "idle": 28, "stranded": 5, "rerun": 0}
U = {"capacity": 48, "lent": 8, "idle": 40}


def metrics(days: int = 9, *, origin: float = 0.0, epoch_times: bool = False, start=None, end=None) -> dict:
    """Metrics of a run whose every day looks like A, B, U above, priced at $2 per GPU-hour."""

    def row(values: dict) -> dict:
        out = {k: [float(v)] * days for k, v in values.items()}
        out["usd"] = {k: [float(v) * PRICE] * days for k, v in values.items()}
        return out

    def share(name: str, values: dict) -> dict:
        out = {"name": name}
        for key in ("capacity", "own", "borrowed", "lent", "idle", "stranded"):
            out[f"{key}_gpu_hours"] = values[key] * days
            out[f"{key}_usd"] = values[key] * days * PRICE
        return out

    idle = (A["idle"] + B["idle"] + U["idle"]) * days
    return {
        "summary": {
            "epoch_times": epoch_times,
            "horizon": {
                "start": origin if start is None else start,
                "end": origin + days * DAY if end is None else end,
            },
        },
        "shares": [share("A", A), share("B", B)],
        "pool": {
            "capacity_gpu_hours": 192.0 * days,
            "capacity_usd": 192.0 * days * PRICE,
            "idle_gpu_hours": idle,
            "idle_usd": idle * PRICE,
            "unassigned_lent_gpu_hours": U["lent"] * days,
            "unassigned_idle_gpu_hours": U["idle"] * days,
        },
        "series": {"pool_capacity": 8.0},
        "periods": {
            "day": [origin + d * DAY for d in range(days)],
            "shares": {"A": row(A), "B": row(B)},
            "unassigned": {k: [float(v)] * days for k, v in U.items()},
        },
    }


def test_days_sum_into_weeks_and_thirty_day_months_without_dates():
    report = finance_report(metrics(9), period="week")
    assert [p.period.label for p in report.periods] == ["week 1", "week 2"]
    week1, week2 = report.periods
    assert week1.shares["A"].hours["own"] == 7 * 40
    assert week2.shares["A"].hours["own"] == 2 * 40
    assert week1.shares["B"].usd["stranded"] == 7 * 5 * PRICE
    assert week2.shares[UNASSIGNED].hours["lent"] == 2 * 8
    assert week2.shares[UNASSIGNED].usd["idle"] == pytest.approx(2 * 40 * PRICE)
    month = finance_report(metrics(9), period="month")
    assert [p.period.label for p in month.periods] == ["month 1 (30 days)"]
    assert month.periods[0].shares["A"].hours["rerun"] == 9
    days = finance_report(metrics(3), period="day")
    assert [p.period.label for p in days.periods] == ["day 1", "day 2", "day 3"]


def test_calendar_weeks_and_months_with_real_dates():
    monday = 1708905600.0  # 2024-02-26, a Monday
    starts = [monday + d * DAY for d in range(9)]  # Feb 26 .. Mar 5
    weeks = group_days(starts, "week", epoch_times=True)
    assert [(w.label, len(w.days)) for w in weeks] == [("week of 2024-02-26", 7), ("week of 2024-03-04", 2)]
    months = group_days(starts, "month", epoch_times=True)
    assert [(m.label, len(m.days)) for m in months] == [("2024-02", 4), ("2024-03", 5)]
    assert group_days(starts, "day", epoch_times=True)[4].label == "2024-03-01"
    with pytest.raises(ValueError):
        group_days(starts, "year", epoch_times=True)


def test_idle_shown_separately_is_a_line_of_its_own():
    day = finance_report(metrics(1), idle="separate").periods[0]
    assert day.shares["A"].hours["charge"] == 40 + 6
    assert day.shares["B"].hours["charge"] == 20 + 12
    assert day.shares["A"].hours["idle_share"] == 0
    assert day.shares[IDLE_LINE].hours["charge"] == 46 + 28 + 40
    assert day.shares[IDLE_LINE].usd["charge"] == (46 + 28 + 40) * PRICE
    assert day.total.hours["charge"] == 192
    assert day.total.hours["idle"] == 114  # the idle line does not count the idle twice


def test_idle_shared_by_quota():
    day = finance_report(metrics(1), idle="quota").periods[0]
    # 114 idle GPU-hours shared 96 : 48.
    assert day.shares["A"].hours["idle_share"] == pytest.approx(76)
    assert day.shares["B"].hours["idle_share"] == pytest.approx(38)
    assert day.shares["A"].hours["charge"] == pytest.approx(46 + 76)
    assert day.shares["B"].usd["charge"] == pytest.approx((32 + 38) * PRICE)
    assert IDLE_LINE not in day.shares
    assert day.total.hours["charge"] == pytest.approx(192)


def test_idle_shared_by_usage():
    day = finance_report(metrics(1), idle="usage").periods[0]
    # Use: A 40 + 6 = 46, B 20 + 12 = 32: 114 shared 46 : 32.
    assert day.shares["A"].hours["idle_share"] == pytest.approx(114 * 46 / 78)
    assert day.shares["B"].hours["idle_share"] == pytest.approx(114 * 32 / 78)
    assert day.total.usd["charge"] == pytest.approx(192 * PRICE)


def test_a_period_without_use_shares_idle_by_quota():
    data = metrics(1)
    for name in ("A", "B"):
        row = data["periods"]["shares"][name]
        for key in ("own", "borrowed", "lent"):
            row[key] = [0.0]
            row["usd"][key] = [0.0]
        row["idle"] = [row["capacity"][0]]
        row["usd"]["idle"] = [row["usd"]["capacity"][0]]
    data["periods"]["unassigned"].update(lent=[0.0], idle=[48.0])
    day = finance_report(data, idle="usage").periods[0]
    assert day.shares["A"].hours["idle_share"] == pytest.approx(192 * 96 / 144)
    assert day.shares["B"].hours["idle_share"] == pytest.approx(192 * 48 / 144)


def test_pool_adds_up_to_its_capacity_and_a_broken_day_is_caught():
    report = finance_report(metrics(9), period="week")
    for period in [*report.periods, report.whole]:
        assert period.check.holds
    assert report.whole.check.capacity_hours == 192 * 9
    assert report.whole.check.accounted_hours == (40 + 10 + 46 + 20 + 0 + 28 + 8 + 40) * 9
    broken = metrics(2)
    broken["periods"]["shares"]["A"]["idle"][1] = 40.0  # 6 GPU-hours lost
    checked = finance_report(broken)
    assert checked.periods[0].check.holds
    assert not checked.periods[1].check.holds
    assert checked.periods[1].check.difference == pytest.approx(-6)


def test_partial_first_and_last_days_count_only_their_capacity_inside_the_replay():
    # The replay runs from noon of day 1 to 6 am of day 3; the engine reports whole-day capacity.
    data = metrics(3, start=0.5 * DAY, end=2.25 * DAY)
    assert capacity_in_horizon(data) == pytest.approx([0.5, 1.0, 0.25])
    report = finance_report(data)
    assert report.periods[0].shares["A"].hours["capacity"] == pytest.approx(48)
    assert report.periods[2].shares[UNASSIGNED].hours["capacity"] == pytest.approx(12)
    assert report.periods[2].shares["B"].usd["capacity"] == pytest.approx(12 * PRICE)
    assert report.notes
    # Capacity the engine already cut to the horizon is left as it is.
    for name in ("A", "B"):
        row = data["periods"]["shares"][name]
        row["capacity"][0] /= 2
    data["periods"]["unassigned"]["capacity"][0] /= 2
    assert capacity_in_horizon(data)[0] == pytest.approx(1.0)


def test_unassigned_dollars_from_the_pool_totals():
    rates = unassigned_usd_rates(metrics(4))
    assert rates == pytest.approx({"capacity": PRICE, "idle": PRICE, "lent": PRICE})


def test_two_policies_compared_line_by_line():
    a = finance_report(metrics(2), idle="quota")
    other = metrics(2)
    other["periods"]["shares"]["B"]["stranded"] = [0.0, 0.0]
    other["periods"]["shares"]["B"]["usd"]["stranded"] = [0.0, 0.0]
    b = finance_report(other, idle="quota")
    rows = compare_reports(a, b, "hours")
    whole_b = next(r for r in rows if r["period"] == "whole trace" and r["line"] == "B")
    assert whole_b["cells"]["stranded"].a == 10
    assert whole_b["cells"]["stranded"].delta == -10
    total = next(r for r in rows if r["period"] == "day 1" and r["line"] == TOTAL)
    assert total["cells"]["charge"].delta == pytest.approx(0)


def test_unknown_choices_are_refused():
    with pytest.raises(ValueError):
        finance_report(metrics(1), idle="everyone")
    with pytest.raises(ValueError):
        finance_report(metrics(1), period="fortnight")
