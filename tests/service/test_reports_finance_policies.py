"""Finance's policies side by side (planner.reports.finance_policies) on hand-made pool totals."""

from __future__ import annotations

from planner.reports.finance_policies import COLUMNS, PolicyTotals, policy_rows, switch_sentence


def totals(name: str, *, idle: float, stranded: float, lent: float = 0.0, rerun: float = 0.0,
           baseline: bool = False, run_id: int = 1) -> PolicyTotals:  # fmt: skip
    """$ at 2 a GPU-hour; the pool costs $1,000 under every policy."""
    usd = {"capacity": 1000.0, "idle": idle, "stranded": stranded, "lent": lent, "rerun": rerun}
    return PolicyTotals(run_id, name, baseline, usd, {c: usd[c] / 2 for c in COLUMNS})


BASE = totals("split", idle=400.0, stranded=300.0, baseline=True)
POOLED = totals("pooled", idle=390.0, stranded=0.0, lent=120.0, rerun=25.0, run_id=2)
NO_PREEMPTION = totals("no-preemption", idle=400.0, stranded=300.0, run_id=3)


def test_rows_carry_the_difference_from_the_baseline_with_a_verdict():
    rows = policy_rows([BASE, POOLED, NO_PREEMPTION])
    assert [r["name"] for r in rows] == ["split", "pooled", "no-preemption"]
    assert rows[0]["is_baseline"] and all(c["delta"] is None for c in rows[0]["cells"])
    pooled = {c["column"]: c for c in rows[1]["cells"]}
    assert (pooled["idle"]["delta"], pooled["idle"]["verdict"]) == (-10.0, "better")
    assert (pooled["stranded"]["delta"], pooled["stranded"]["verdict"]) == (-300.0, "better")
    assert (pooled["rerun"]["delta"], pooled["rerun"]["verdict"]) == (25.0, "worse")
    assert (pooled["lent"]["delta"], pooled["lent"]["verdict"]) == (120.0, "")  # lending is no verdict
    assert (pooled["capacity"]["delta"], pooled["capacity"]["verdict"]) == (0.0, "same")
    assert pooled["idle"]["hours"] == 195.0
    assert {c["verdict"] for c in rows[2]["cells"]} == {"same"}


def test_the_switch_sentence_names_the_policy_that_leaves_the_least_idle():
    assert switch_sentence([BASE, NO_PREEMPTION, POOLED]) == (
        "Switching from split to pooled would leave $10 less idle ($400 → $390), $300 less stranded "
        "($300 → $0) and $25 more rerun cost ($0 → $25)."
    )


def test_the_baseline_comes_from_the_flag_and_a_tie_keeps_the_study_order():
    first = totals("a", idle=100.0, stranded=10.0, run_id=2)
    second = totals("b", idle=100.0, stranded=10.0, run_id=3)
    base = totals("base", idle=150.0, stranded=10.0, baseline=True)
    assert switch_sentence([first, base, second]) == (
        "Switching from base to a would leave $50 less idle ($150 → $100), the same stranded ($10) "
        "and the same rerun cost ($0)."
    )


def test_nothing_to_switch_to():
    assert switch_sentence([BASE]) == ""
    assert switch_sentence([BASE, NO_PREEMPTION]) == (
        "Switching from split to no-preemption changes no idle, stranded, lent or rerun $."
    )


def test_a_pool_without_prices_speaks_in_gpu_hours():
    free = [
        totals("split", idle=0.0, stranded=0.0, baseline=True),
        totals("pooled", idle=0.0, stranded=0.0, run_id=2),
    ]
    free = [PolicyTotals(p.run_id, p.name, p.is_baseline, dict.fromkeys(COLUMNS, 0.0), h)
            for p, h in zip(free, [BASE.hours, POOLED.hours], strict=True)]  # fmt: skip
    assert switch_sentence(free, priced=False) == (
        "Switching from split to pooled would leave 5 GPU-hours less idle (200 GPU-hours → 195 GPU-hours), "
        "150 GPU-hours less stranded (150 GPU-hours → 0 GPU-hours) and 12 GPU-hours more rerun cost "
        "(0 GPU-hours → 12 GPU-hours)."
    )


def test_finance_opens_on_the_newest_priced_study_whose_runs_all_succeeded():
    from types import SimpleNamespace

    from planner.reports.views import default_study, types_priced

    def study(pk: int, runs: int, succeeded: int):
        return SimpleNamespace(pk=pk, run_count=runs, succeeded_count=succeeded)

    newest_first = [study(5, 3, 3), study(4, 3, 2), study(3, 2, 2), study(2, 2, 2)]
    assert default_study(newest_first, priced={2, 3, 4}).pk == 3  # 5 has no prices, 4 a failed run
    assert default_study(newest_first, priced={4}).pk == 4  # priced beats complete
    assert default_study(newest_first, priced=set()).pk == 5  # nothing priced: the newest complete
    assert default_study([study(1, 2, 1)], priced=set()).pk == 1
    assert default_study([], priced=set()) is None
    assert types_priced({"gpu": {"gpus": 1, "hourly_price": 2.5}, "cpu": {"gpus": 0, "hourly_price": 0}})
    assert not types_priced({"gpu": {"gpus": 1, "hourly_price": 0}}) and not types_priced(None)
