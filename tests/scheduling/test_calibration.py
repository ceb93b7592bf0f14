"""Calibration: recorded against replayed waits, the KS distance and p-value, p50/p95 ratios and the
verdict, on tiny hand-computed inputs; and the policy assumed in force on the openb cluster."""

from __future__ import annotations

import io
import math
from pathlib import Path

import numpy as np
import pytest
from gpu_policies import policy, priced, share

from scheduling.calibration import (
    calibrate,
    compare_waits,
    kolmogorov_survival,
    ks_distance,
    ks_p_value,
    openb_cluster_gpus,
    openb_policy_dict,
    percentile_comparison,
    verdict,
    wait_direction,
    wait_text,
)
from scheduling.errors import InputError
from scheduling.model import Policy
from scheduling.replay.engine import replay
from scheduling.traces import read_trace

OPENB = Path(__file__).resolve().parents[3] / "shared" / "data" / "alibaba-openb-2023"

# Two shares of one GPU each, both RESERVE. Times in seconds.
POLICY = policy(
    2, share("A", 1, "RESERVE"), share("B", 1, "RESERVE"), name="in-force", instance_types=priced(1.0)
)
# a1 and a2 both arrive at 0: a1 runs, a2 waits 10,000 s for it (recorded: 5,000 s). a3 has no
# recorded start; a4 asks for 2 GPUs of a 1-GPU RESERVE share (never starts in the replay). b1
# starts at once in the replay (recorded: 3,000 s); b2's recorded start is before its submit.
TRACE_CSV = b"""job_id,submit_time,share,duration,instance_count,recorded_start
a1,0,A,10000,1,0
a2,0,A,10000,1,5000
a3,1000,A,10000,1,
a4,0,A,10000,2,0
b1,0,B,10000,1,3000
b2,500,B,10000,1,300
"""


def small_calibration() -> dict:
    trace = read_trace(io.BytesIO(TRACE_CSV), format="planner-csv")
    return calibrate(trace, replay(Policy.from_dict(POLICY), trace))


# -- KS ------------------------------------------------------------------------------------------


def test_ks_distance_is_the_largest_gap_between_the_two_cdfs():
    # At 3: F1 = 3/3, F2 = 1/2 (only the 2 is <= 3): the gap is 1/2; elsewhere 1/3, 1/6 and 0.
    assert ks_distance(np.array([1.0, 2.0, 3.0]), np.array([2.0, 4.0])) == pytest.approx(0.5)


def test_ks_distance_of_equal_samples_is_zero_and_of_disjoint_samples_one():
    assert ks_distance(np.array([5.0, 1.0, 5.0]), np.array([1.0, 5.0, 5.0])) == 0.0
    assert ks_distance(np.array([1.0, 2.0]), np.array([3.0, 4.0])) == 1.0


def test_ks_distance_with_an_empty_sample_is_zero():
    assert ks_distance(np.array([]), np.array([1.0])) == 0.0


def test_ks_p_value_by_hand():
    # n=3, m=2: sqrt(6/5) x 0.5 = 0.5477; 2 (e^-0.6 - e^-2.4 + e^-5.4 - e^-9.6 + e^-15) = 0.92509
    assert ks_p_value(0.5, 3, 2) == pytest.approx(0.92509, abs=1e-4)
    # n=m=1, D=1: sqrt(1/2); 2 (e^-1 - e^-4 + e^-9 - e^-16) = 0.69937
    assert ks_p_value(1.0, 1, 1) == pytest.approx(0.69937, abs=1e-4)
    assert ks_p_value(0.0, 10, 10) == 1.0
    assert ks_p_value(0.5, 0, 3) is None


def test_kolmogorov_tail_at_its_five_percent_point_and_both_forms_agree_at_one():
    assert kolmogorov_survival(1.3581) == pytest.approx(0.05, abs=1e-4)
    assert kolmogorov_survival(0.9999999) == pytest.approx(kolmogorov_survival(1.0), abs=1e-6)
    assert kolmogorov_survival(0.2) == pytest.approx(1.0, abs=1e-6)


# -- percentiles and ratios -------------------------------------------------------------------


def test_ratio_is_simulated_over_recorded_with_the_difference():
    assert percentile_comparison(100.0, 40.0) == {
        "recorded": 100.0,
        "simulated": 40.0,
        "ratio": 0.4,
        "difference": -60.0,
    }


def test_recorded_zero_gives_no_ratio_unless_both_are_zero():
    assert percentile_comparison(0.0, 30.0)["ratio"] is None
    assert percentile_comparison(0.0, 30.0)["difference"] == 30.0
    assert percentile_comparison(0.0, 0.0)["ratio"] == 1.0


def test_compare_waits_percentiles_and_cdfs():
    # recorded 0, 100, 200, 300: p50 150, p95 285 (linear); simulated all 0.
    result = compare_waits(np.array([0.0, 100.0, 200.0, 300.0]), np.zeros(4))
    assert result["p50"]["recorded"] == 150.0 and result["p50"]["simulated"] == 0.0
    assert result["p95"]["recorded"] == pytest.approx(285.0)
    assert result["p95"]["ratio"] == 0.0
    assert result["ks"]["distance"] == 0.75  # at 0: F_sim = 1, F_rec = 1/4
    assert result["cdfs"]["recorded"] == {
        "x": [0.0, 100.0, 200.0, 300.0],
        "y": [0.25, 0.5, 0.75, 1.0],
        "n": 4,
    }
    assert result["cdfs"]["simulated"] == {"x": [0.0], "y": [1.0], "n": 4}


def test_cdfs_are_downsampled_to_500_points():
    result = compare_waits(np.arange(5000.0), np.arange(5000.0) * 2)
    assert len(result["cdfs"]["recorded"]["x"]) <= 500
    assert result["cdfs"]["recorded"]["x"][-1] == 4999.0  # the max is kept
    assert result["ks"]["distance"] == pytest.approx(0.5, abs=1e-3)


# -- words --------------------------------------------------------------------------------------


def test_wait_text_picks_a_readable_unit():
    assert [wait_text(s) for s in (0, 0.5, 45, 246, 3 * 3600 + 720, 3 * 86400)] == [
        "0 s",
        "0.5 s",
        "45 s",
        "4.1 min",
        "3.2 h",
        "3.0 d",
    ]


def test_direction_allows_a_minute_or_a_quarter_either_way():
    assert wait_direction(3600, 4400) == "close"  # 1.22x
    assert wait_direction(3600, 4600) == "longer"
    assert wait_direction(3600, 1440) == "shorter"  # 0.4x
    assert wait_direction(5, 50) == "close"  # 45 s apart
    assert wait_direction(0, 61) == "longer"


def test_verdict_reads_as_a_sentence():
    comparison = compare_waits(
        np.array([0.0, 3600.0, 7200.0, 12000.0]), np.array([0.0, 1440.0, 2880.0, 4800.0])
    )
    # p95: recorded 7,200 + 0.85 x 4,800 = 11,280 s (3.1 h), simulated 4,512 s (1.3 h) = 0.4x;
    # KS at 2,880: 3/4 - 1/4.
    assert verdict(comparison, 4) == (
        "simulated waits are shorter: p95 0.4x recorded (1.3 h against 3.1 h); "
        "the distributions differ (KS 0.50)"
    )
    assert verdict(compare_waits(np.array([]), np.array([])), 0).startswith("nothing to compare")


# -- a trace and its replay -------------------------------------------------------------------


def test_calibrate_compares_per_share_and_counts_what_it_leaves_out():
    result = small_calibration()
    a, b = result["shares"]
    assert (a["name"], a["jobs"], a["compared"]) == ("A", 4, 2)
    assert a["excluded"] == {"no_recorded_start": 1, "recorded_before_submit": 0, "not_started_in_replay": 1}
    # A: recorded 0 and 5,000 s; simulated 0 and 10,000 s (a2 waits for a1).
    assert a["p50"] == {"recorded": 2500.0, "simulated": 5000.0, "ratio": 2.0, "difference": 2500.0}
    assert a["p95"]["ratio"] == pytest.approx(2.0)
    assert a["ks"]["distance"] == 0.5  # at 5,000: F_rec = 1, F_sim = 1/2
    assert a["verdict"] == (
        "simulated waits are longer: p95 2.0x recorded (2.6 h against 1.3 h); "
        "the distributions differ (KS 0.50)"
    )
    # B: b1 recorded 3,000 s and simulated 0; b2 left out (recorded start before its submit).
    assert (b["jobs"], b["compared"]) == (2, 1)
    assert b["excluded"]["recorded_before_submit"] == 1
    assert b["ks"] == {"distance": 1.0, "p_value": pytest.approx(0.69937, abs=1e-4)}
    assert b["p95"]["ratio"] == 0.0
    assert b["verdict"] == (
        "simulated waits are shorter: p95 0 s against 50.0 min recorded; the distributions differ (KS 1.00)"
    )


def test_calibrate_over_all_jobs():
    overall = small_calibration()["all"]
    assert (overall["jobs"], overall["compared"]) == (6, 3)
    assert overall["excluded"] == {
        "no_recorded_start": 1,
        "recorded_before_submit": 1,
        "not_started_in_replay": 1,
    }
    # recorded 0, 5,000, 3,000 against simulated 0, 10,000, 0: at 0, 2/3 - 1/3.
    assert overall["ks"]["distance"] == pytest.approx(1 / 3)
    assert overall["cdfs"]["recorded"]["n"] == 3
    assert overall["p50"]["recorded"] == 3000.0 and overall["p50"]["simulated"] == 0.0


def test_calibrate_needs_recorded_starts():
    trace = read_trace(io.BytesIO(b"job_id,submit_time,share,duration\nj1,0,A,10\n"), format="planner-csv")
    with pytest.raises(InputError) as caught:
        calibrate(trace, replay(Policy.from_dict(POLICY), trace))
    assert caught.value.field == "recorded_start"
    assert "records no start times" in str(caught.value)


def test_calibrate_refuses_the_replay_of_another_trace():
    trace = read_trace(io.BytesIO(TRACE_CSV), format="planner-csv")
    other = read_trace(io.BytesIO(b"job_id,submit_time,share,duration\nj1,0,A,10\n"), format="planner-csv")
    with pytest.raises(InputError):
        calibrate(trace, replay(Policy.from_dict(POLICY), other))


# -- openb ------------------------------------------------------------------------------------


def test_openb_quotas_follow_gpu_hours_and_fill_the_pool():
    # LS asks 3 GPU-hours for every BE one: 7.5 and 2.5 of 10 GPUs; the half GPU left goes to LS (first).
    trace = read_trace(
        io.BytesIO(b"job_id,submit_time,share,duration,instance_count\nl,0,LS,3600,3\nb,0,BE,3600,1\n"),
        format="planner-csv",
    )
    policy = openb_policy_dict(trace, 10)
    assert [(s["name"], s["capacity"]["gpu"]) for s in policy["shares"]] == [("LS", 8), ("BE", 2)]
    assert {s["strategy"] for s in policy["shares"]} == {"LEND_AND_BORROW"}
    assert {s["reclaim"] for s in policy["shares"]} == {"never"}
    assert "10 GPUs" in policy["description"]


def test_openb_node_list_bad_gpu_names_the_row():
    with pytest.raises(InputError) as caught:
        openb_cluster_gpus(io.BytesIO(b"sn,gpu\nn1,8\nn2,eight\n"))
    assert (caught.value.row, caught.value.field) == (2, "gpu")


@pytest.mark.skipif(not OPENB.exists(), reason="the shared openb data is not here")
def test_openb_real_trace_calibrates():
    assert openb_cluster_gpus(OPENB / "openb_node_list_gpu_node.csv") == 6212
    trace = read_trace(OPENB / "openb_pod_list_default.csv", format="alibaba-openb-2023")
    result = calibrate(trace, replay(Policy.from_dict(openb_policy_dict(trace, 6212)), trace))
    assert result["all"]["compared"] == len(trace)
    assert {s["name"] for s in result["shares"]} == {"LS", "BE", "Burstable", "Guaranteed"}
    for block in [result["all"], *result["shares"]]:
        assert 0 <= block["ks"]["distance"] <= 1
        assert math.isfinite(block["p95"]["recorded"])
