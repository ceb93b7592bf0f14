"""The decision sentence of a study (planner.reports.decision) on hand-made studies: each run's
aggregates written out, the sentence expected word for word."""

from __future__ import annotations

from planner.accounts.money import strip_money
from planner.reports.comparison import RunColumn
from planner.reports.decision import decide, longest_waiting_share

H = 3600.0


def run(
    name: str,
    waits: dict[str, float | None],
    *,
    utilization: float = 0.5,
    stranded: dict[str, float] | None = None,
    idle: float = 100.0,
    rerun: float = 0.0,
    price: float = 2.0,
    baseline: bool = False,
    index: int = 0,
    all_jobs: float | None = None,
) -> RunColumn:
    """A run's metrics: ``waits`` the p95 wait of each share in hours (None: no job finished),
    stranded and idle in GPU-hours, rerun in GPU-hours; $ at ``price`` per GPU-hour."""
    stranded = stranded or {}
    shares = []
    for share, p95 in waits.items():
        gpu_hours = stranded.get(share, 0.0)
        shares.append(
            {
                "name": share,
                "wait_seconds": None if p95 is None else {"p50": 0.0, "p95": p95 * H, "p99": p95 * H},
                "stranded_gpu_hours": gpu_hours,
                "stranded_usd": gpu_hours * price,
            }
        )
    metrics = {
        "summary": {
            "utilization": utilization,
            "rerun_gpu_hours": rerun,
            "rerun_cost_usd": rerun * price,
            "wait_seconds": None if all_jobs is None else {"p95": all_jobs * H},
        },
        "shares": shares,
        "pool": {"idle_gpu_hours": idle, "idle_usd": idle * price},
        "types": {"gpu": {"gpus": 1, "hourly_price": price}},
    }
    return RunColumn(run_id=index + 1, name=name, index=index, is_baseline=baseline, metrics=metrics)


def study(*runs: RunColumn) -> list[RunColumn]:
    return [RunColumn(r.run_id, r.name, i, r.is_baseline, r.metrics) for i, r in enumerate(runs)]


def test_the_best_alternative_against_the_baseline_and_the_one_that_changes_nothing():
    runs = study(
        run("split", {"a": 10.0, "c3": 131.8}, utilization=0.651, stranded={"c3": 500.0}, baseline=True),
        run("pooling", {"a": 2.0, "c3": 3.6}, utilization=0.6514, idle=90.0, rerun=1200.0),
        run("no-preemption", {"a": 10.0, "c3": 131.8}, utilization=0.651, stranded={"c3": 500.0}),
    )
    decision = decide(runs)
    # c3 waits longest under the baseline (131.8 h > 10 h); 65.14% prints as 65.1%, the same.
    assert decision.share == "c3" and decision.best == "pooling" and decision.unchanged == ("no-preemption",)
    assert decision.text == (
        "pooling cuts the longest-waiting share's p95 wait from 131.8 h to 3.6 h (c3) at the same 65.1% "
        "utilization; stranded down from 500 to 0 GPU-hours, idle down from 100 to 90 GPU-hours, rerun cost "
        "up from 0 to 1,200 GPU-hours. no-preemption changes nothing."
    )
    # finance reads the same in $ (2 $ a GPU-hour)
    assert decide(runs, money=True).text == (
        "pooling cuts the longest-waiting share's p95 wait from 131.8 h to 3.6 h (c3) at the same 65.1% "
        "utilization; stranded down from $1,000 to $0, idle down from $200 to $180, rerun cost up from $0 "
        "to $2,400. no-preemption changes nothing."
    )


def test_the_ranking_goes_measure_by_measure_and_names_the_others():
    runs = study(
        run("base", {"a": 20.0}, utilization=0.70, baseline=True),
        run("x", {"a": 5.0}, utilization=0.60),  # the shortest wait wins, whatever its utilization
        run("y", {"a": 5.04}, utilization=0.80),  # prints as 5.0 h: a tie on the wait, better utilization
        run("z", {"a": 30.0}),
    )
    decision = decide(runs)
    assert decision.best == "y"
    assert decision.text == (
        "y cuts the longest-waiting share's p95 wait from 20.0 h to 5.0 h (a), with utilization up from "
        "70.0% to 80.0%. Under x, a's p95 wait is 5.0 h; under z, a's p95 wait is 30.0 h."
    )


def test_ties_take_the_first_share_and_the_first_policy_in_the_study():
    runs = study(
        run("base", {"b": 8.0, "a": 8.0, "c": 1.0}, baseline=True),
        run("first", {"b": 4.0, "a": 8.0, "c": 1.0}),
        run("second", {"b": 4.0, "a": 8.0, "c": 1.0}),
    )
    assert longest_waiting_share(runs[0]) == "b"  # b and a both wait 8 h: b comes first
    decision = decide(runs)
    assert decision.best == "first"
    assert decision.text == (
        "first cuts the longest-waiting share's p95 wait from 8.0 h to 4.0 h (b) at the same 50.0% "
        "utilization. Under second, b's p95 wait is 4.0 h."
    )


def test_a_study_of_one_policy():
    decision = decide([run("only", {"a": 3.25, "b": 1.0}, utilization=0.421, baseline=True)])
    assert decision.best is None and decision.unchanged == ()
    assert decision.text == (
        "Only only was replayed: its longest-waiting share, a, waits 3.2 h at p95, at 42.1% utilization; "
        "launch a study with other policies to compare."
    )


def test_every_alternative_the_same():
    runs = study(
        run("base", {"a": 2.0}, baseline=True),
        run("v1", {"a": 2.0}),
        run("v2", {"a": 2.04}, idle=100.4),  # prints the same: 2.0 h, 100 GPU-hours
    )
    decision = decide(runs)
    assert decision.best is None and decision.unchanged == ("v1", "v2")
    assert decision.text == (
        "No alternative changes anything: v1 and v2 give the same p95 wait of the longest-waiting share "
        "(2.0 h, a), utilization, stranded, idle and rerun cost as base."
    )


def test_failed_runs_are_named_and_not_compared():
    runs = study(run("base", {"a": 2.0}, baseline=True), run("v1", {"a": 1.0}))
    decision = decide(runs, failed=["broken", "crashed"])
    assert decision.text == (
        "v1 cuts the longest-waiting share's p95 wait from 2.0 h to 1.0 h (a) at the same 50.0% "
        "utilization. broken and crashed failed and were not compared."
    )


def test_a_baseline_that_failed_leaves_the_first_policy_as_reference():
    runs = study(run("v1", {"a": 2.0}), run("v2", {"a": 2.0}, rerun=3.0))
    decision = decide(runs, failed=["base"])
    assert decision.text == (
        "No alternative does better than v1: v2 leaves the longest-waiting share's p95 wait at 2.0 h (a) at "
        "the same 50.0% utilization; rerun cost up from 0 to 3 GPU-hours. Compared with v1, the first "
        "policy that succeeded: the baseline run did not. base failed and was not compared."
    )


def test_missing_prices_fall_back_to_gpu_hours_and_say_so():
    runs = study(
        run("base", {"a": 2.0}, stranded={"a": 40.0}, price=0.0, baseline=True),
        run("v1", {"a": 1.0}, price=0.0),
    )
    decision = decide(runs, money=True)
    assert decision.unit == "GPU-hours"
    assert decision.text == (
        "v1 cuts the longest-waiting share's p95 wait from 2.0 h to 1.0 h (a) at the same 50.0% "
        "utilization; stranded down from 40 to 0 GPU-hours. No instance type of the pool has an hourly "
        "price, so the figures are in GPU-hours, not $."
    )


def test_a_viewer_reads_gpu_hours_only():
    runs = [
        RunColumn(r.run_id, r.name, r.index, r.is_baseline, strip_money(r.metrics))
        for r in study(
            run("base", {"a": 2.0}, stranded={"a": 40.0}, rerun=5.0, baseline=True),
            run("v1", {"a": 2.0}, rerun=1.0),
        )
    ]
    decision = decide(runs, money=False)
    assert "$" not in decision.text
    assert decision.text == (
        "v1 leaves the longest-waiting share's p95 wait at 2.0 h (a) at the same 50.0% utilization; "
        "stranded down from 40 to 0 GPU-hours, rerun cost down from 5 to 1 GPU-hours."
    )


def test_short_waits_in_minutes_and_no_share_wait_uses_every_job():
    runs = study(
        run("base", {"a": 0.3}, baseline=True),
        run("v1", {"a": 0.004}),  # 0.24 min prints as 0 min
    )
    assert decide(runs).text.startswith(
        "v1 cuts the longest-waiting share's p95 wait from 18 min to 0 min (a)"
    )
    runs = study(
        run("base", {"a": None}, all_jobs=4.0, baseline=True),
        run("v1", {"a": None}, all_jobs=6.0),
    )
    decision = decide(runs)
    assert decision.share is None
    assert decision.text == (
        "No alternative does better than base: v1 raises the p95 wait of all jobs from 4.0 h to 6.0 h at "
        "the same 50.0% utilization."
    )


def test_no_run_no_sentence():
    assert decide([]) is None
