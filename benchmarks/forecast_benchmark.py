"""Backtest of the forecast (SEMANTICS.md section 11): is "when will my job start" right, and better
than the baselines it is judged by?

    .venv/bin/python benchmarks/forecast_benchmark.py                      # ITP and openb, 4 cuts each
    .venv/bin/python benchmarks/forecast_benchmark.py --cases itp --cuts 6 --samples 100
    .venv/bin/python benchmarks/forecast_benchmark.py --speed              # 200 samples, 1,000-job snapshot

ITP 2021 (ten clusters as ten LEND_AND_BORROW shares of one 1,560-GPU pool, the assumed sizes of
``scheduling.quota_tables``): the full trace is replayed once; at each cut (the instants with the
most pending jobs, at least 3 days apart and a week into the trace) the replay's state is the
snapshot (its running jobs since their current start, its pending jobs since their submit), the
history is the jobs that had *ended* by the cut (what a live system knows: their durations, their
replayed starts as recorded waits), and the forecast is compared with what the full replay did next:
each pending job's next start. openb (Alibaba pods, QoS classes as shares of the node list's GPUs):
the same against the trace's recorded starts (``scheduled_time``), which the replay does not model
exactly (fractional GPUs, node packing, the real scheduler's order).

Printed per cut and pooled: coverage of [p10, p90] (the share of pending jobs whose actual start is
in it; a job not started before the horizon counts as covered by an open band), the median absolute
error of p50 in hours (jobs started before the horizon; a null p50 counts as the horizon's end), and
the same error for the two baselines, requested_time and share_median_wait.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.replay_benchmark import data_dir, openb_pooled_policy  # noqa: E402  (after the path is set)
from scheduling.forecast import ForecastInputs, forecast  # noqa: E402
from scheduling.forecast.snapshot import Snapshot, SnapshotJob  # noqa: E402
from scheduling.model import Policy  # noqa: E402
from scheduling.trace import Trace  # noqa: E402

DAY = 86_400.0
HOUR = 3_600.0


@dataclass
class State:
    """A cut: the snapshot, the history known then, and what happened next (start per pending job)."""

    snapshot: Snapshot
    history: Trace
    truth: dict[str, float]  # pending job -> its next start (inf: none in the data)


def subset(trace: Trace, rows: np.ndarray, recorded_start: np.ndarray) -> Trace:
    return Trace(
        job_id=trace.job_id.take(rows),
        submit_time=trace.submit_time[rows],
        share=trace.share[rows],
        share_names=trace.share_names,
        priority=trace.priority[rows],
        instance_type=trace.instance_type[rows],
        type_names=trace.type_names,
        instance_count=trace.instance_count[rows],
        duration=trace.duration[rows],
        checkpoint_interval=trace.checkpoint_interval[rows],
        preemption_retries=trace.preemption_retries[rows],
        recorded_start=recorded_start,
        epoch_times=trace.epoch_times,
    )


def job(trace: Trace, i: int, *, started_at: float | None = None) -> SnapshotJob:
    t = int(trace.instance_type[i])
    return SnapshotJob(
        job_id=trace.job_id[i],
        share=trace.share_names[int(trace.share[i])],
        instance_type=trace.type_names[t] if t >= 0 else None,
        instance_count=int(trace.instance_count[i]),
        priority=int(trace.priority[i]),
        started_at=started_at,
        submit_time=float(trace.submit_time[i]),
    )


# --- ITP: cuts of the full replay ------------------------------------------------------------------


class ReplayTimeline:
    """The full replay's runs: per job its (start, stop) intervals, from the event list."""

    def __init__(self, policy: Policy, trace: Trace):
        from scheduling.outcomes import State as JobState
        from scheduling.replay.engine import replay
        from scheduling.result import EventKind

        result = replay(policy, trace, record_events=True)
        self.trace = trace
        self.first_start = result.outcomes.first_start
        self.end = result.outcomes.end
        self.unschedulable = result.outcomes.state == int(JobState.UNSCHEDULABLE)
        starts: list[tuple[float, int, int]] = []
        stops: list[tuple[float, int, int]] = []
        assert result.events is not None
        for seq, (time_, index, kind, *_) in enumerate(result.events):
            if kind is EventKind.START:
                starts.append((time_, index, seq))
            elif kind in (EventKind.PREEMPT, EventKind.FINISH, EventKind.FAIL, EventKind.CANCEL):
                stops.append((time_, index, seq))
        self.start_time = np.array([s[0] for s in starts])
        self.start_job = np.array([s[1] for s in starts], dtype=np.int64)
        self.start_seq = np.array([s[2] for s in starts], dtype=np.int64)
        self.stop_time = np.array([s[0] for s in stops])
        self.stop_job = np.array([s[1] for s in stops], dtype=np.int64)
        self.stop_seq = np.array([s[2] for s in stops], dtype=np.int64)

    def pending_counts(self, times: np.ndarray) -> np.ndarray:
        """Jobs submitted and not running nor ended at each time (the queue's length)."""
        submit = np.sort(self.trace.submit_time)
        ended = np.sort(self.end[np.isfinite(self.end)])
        started = np.searchsorted(np.sort(self.start_time), times, side="right")
        stopped = np.searchsorted(np.sort(self.stop_time), times, side="right")
        running = started - stopped
        alive = np.searchsorted(submit, times, side="right") - np.searchsorted(ended, times, side="right")
        return alive - running

    def state_at(self, t: float) -> State:
        trace = self.trace
        # the run holding each job at t: its last start at or before t, unless a stop came after it
        # (in event order: a job preempted and started again at one instant is running)
        n = len(trace)
        last_start = np.full(n, -1, dtype=np.int64)
        early = self.start_time <= t
        np.maximum.at(last_start, self.start_job[early], self.start_seq[early])
        last_stop = np.full(n, -1, dtype=np.int64)
        early = self.stop_time <= t
        np.maximum.at(last_stop, self.stop_job[early], self.stop_seq[early])
        running = (last_start >= 0) & (last_start > last_stop)
        start_of_seq = np.zeros(int(self.start_seq.max()) + 1 if len(self.start_seq) else 1)
        start_of_seq[self.start_seq] = self.start_time
        ended = np.isfinite(self.end) & (self.end <= t)
        pending = (trace.submit_time <= t) & ~running & ~ended & ~self.unschedulable
        next_start = np.full(len(trace), np.inf)
        later = self.start_time > t
        np.minimum.at(next_start, self.start_job[later], self.start_time[later])
        running_jobs = [
            job(trace, i, started_at=float(start_of_seq[last_start[i]])) for i in np.flatnonzero(running)
        ]
        pending_rows = np.flatnonzero(pending)
        pending_jobs = [job(trace, i) for i in pending_rows]
        history_rows = np.flatnonzero(ended & ~np.isnan(self.first_start))
        history = subset(trace, history_rows, self.first_start[history_rows])
        truth = {trace.job_id[i]: float(next_start[i]) for i in pending_rows}
        return State(Snapshot(t, running_jobs, pending_jobs), history, truth)


def busiest(times: np.ndarray, counts: np.ndarray, n: int, earliest: float, gap: float) -> list[float]:
    order = np.argsort(-counts, kind="stable")
    chosen: list[float] = []
    for k in order.tolist():
        t = float(times[k])
        if t < earliest or any(abs(t - c) < gap for c in chosen):
            continue
        chosen.append(t)
        if len(chosen) == n:
            break
    return sorted(chosen)


def itp_states(cuts: int) -> tuple[Policy, list[State]]:
    from scheduling.model import Strategy
    from scheduling.quota_tables import itp_policy_dict
    from scheduling.traces import read_trace

    trace = read_trace(data_dir() / "itp-2021" / "itp_all_clusters.csv", format="itp-2021")
    policy = Policy.from_dict(itp_policy_dict(Strategy.LEND_AND_BORROW))
    timeline = ReplayTimeline(policy, trace)
    start, stop = float(trace.submit_time.min()), float(trace.submit_time.max())
    grid = np.arange(start + 7 * DAY, stop - 3 * DAY, HOUR)
    times = busiest(grid, timeline.pending_counts(grid), cuts, start + 7 * DAY, 3 * DAY)
    return policy, [timeline.state_at(t) for t in times]


# --- openb: cuts of the recorded trace --------------------------------------------------------------


def openb_policy(trace: Trace) -> Policy:
    """The node list's GPUs shared by the QoS classes in proportion to their demand, lending and
    borrowing, in-share preemption by priority: the policy benchmarks/replay_benchmark.py replays
    openb with."""
    return Policy.from_dict(openb_pooled_policy(trace, data_dir()))


def openb_states(cuts: int) -> tuple[Policy, list[State]]:
    from scheduling.traces import read_trace

    path = data_dir() / "alibaba-openb-2023" / "openb_pod_list_default.csv"
    trace = read_trace(path, format="alibaba-openb-2023")
    policy = openb_policy(trace)
    recorded = trace.recorded_start
    assert recorded is not None
    end = recorded + trace.duration
    start, stop = float(trace.submit_time.min()), float(trace.submit_time.max())
    grid = np.arange(start + 7 * DAY, stop - 3 * DAY, HOUR)
    submit = trace.submit_time
    counts = np.array([int(((submit <= t) & ~(recorded <= t)).sum()) for t in grid])
    states = []
    for t in busiest(grid, counts, cuts, start + 7 * DAY, 3 * DAY):
        running = np.flatnonzero((recorded <= t) & (end > t))
        pending = np.flatnonzero((submit <= t) & ~(recorded <= t))
        ended = np.flatnonzero(end <= t)
        snapshot = Snapshot(
            t,
            [job(trace, i, started_at=float(recorded[i])) for i in running],
            [job(trace, i) for i in pending],
        )
        truth = {trace.job_id[i]: float(recorded[i]) for i in pending}  # (nan: never scheduled)
        truth = {k: v if v == v else math.inf for k, v in truth.items()}
        states.append(State(snapshot, subset(trace, ended, recorded[ended]), truth))
    return policy, states


# --- judging -----------------------------------------------------------------------------------------


def judge(result: dict, state: State, horizon_end: float) -> dict[str, float]:
    covered = early = 0
    errors: dict[str, list[float]] = {"p50": [], "requested_time": [], "share_median_wait": []}
    jobs = {j["job_id"]: j for j in result["jobs"]}
    for job_id, truth in state.truth.items():
        forecast_job = jobs[job_id]
        start = forecast_job["start"]
        actual = truth if truth <= horizon_end else math.inf
        low = math.inf if start["p10"] is None else start["p10"]
        high = math.inf if start["p90"] is None else start["p90"]
        covered += low <= actual <= high
        early += actual < low
        if math.isfinite(actual):
            for name, value in (("p50", start["p50"]), *forecast_job["baselines"].items()):
                point = horizon_end if value is None else value
                errors[name].append(abs(point - actual) / HOUR)
    n = len(state.truth)
    return {
        "pending": n,
        "started": len(errors["p50"]),
        "coverage": covered / n if n else math.nan,
        "early": early / n if n else math.nan,  # the actual start before p10 (else after p90)
        **{f"mae_{k}": float(np.median(v)) if v else math.nan for k, v in errors.items()},
        "_covered": covered,
        "_errors": errors,  # type: ignore[dict-item]
    }


def run_case(
    name: str, policy: Policy, states: list[State], samples: int, horizon_days: float, window: float | None
) -> None:
    durations = "section 11" if window is None else f"{window:g}-day windows (beyond section 11)"
    print(f"\n{name}: {len(states)} cuts, {samples} samples, horizon {horizon_days:g} days, arrivals history,"
          f" durations {durations}")  # fmt: skip
    header = f"{'cut (day)':>9} {'running':>7} {'pending':>7} {'started':>7} {'coverage':>8} {'early':>5} " \
             f"{'p50 MAE h':>9} {'requested h':>11} {'share wait h':>12} {'seconds':>7}"  # fmt: skip
    print(header)
    pooled_errors: dict[str, list[float]] = {"p50": [], "requested_time": [], "share_median_wait": []}
    covered = total = early = 0
    for state in states:
        began = time.perf_counter()
        inputs = ForecastInputs(
            policy, state.snapshot, state.history, samples=samples, horizon_days=horizon_days,
            duration_window_days=window,
        )  # fmt: skip
        result = forecast(inputs)
        seconds = time.perf_counter() - began
        scores = judge(result, state, inputs.until)
        covered += scores["_covered"]
        early += round(scores["early"] * scores["pending"])
        total += scores["pending"]
        for k, v in scores["_errors"].items():
            pooled_errors[k].extend(v)
        day = state.snapshot.time / DAY
        print(f"{day:9.2f} {len(state.snapshot.running):7d} {scores['pending']:7d} {scores['started']:7d} "
              f"{scores['coverage']:8.2f} {scores['early']:5.2f} {scores['mae_p50']:9.2f} "
              f"{scores['mae_requested_time']:11.2f} "
              f"{scores['mae_share_median_wait']:12.2f} {seconds:7.1f}")  # fmt: skip
    mae = {k: float(np.median(v)) if v else math.nan for k, v in pooled_errors.items()}
    better = min(mae["requested_time"], mae["share_median_wait"])
    print(f"{'pooled':>9} {'':7} {total:7d} {len(pooled_errors['p50']):7d} {covered / max(total, 1):8.2f} "
          f"{early / max(total, 1):5.2f} "
          f"{mae['p50']:9.2f} {mae['requested_time']:11.2f} {mae['share_median_wait']:12.2f}")  # fmt: skip
    print(f"p50 MAE / better baseline: {mae['p50'] / better:.2f}" if better else "no baseline error")


def speed(samples: int) -> None:
    """200 samples of a 1,000-job snapshot with a week of arrivals, on one core."""
    from scheduling.replay import engine_kind
    from scheduling.synthetic import demo_policy_dict, demo_pool_gpus, generate

    history = generate(20_000, seed=3)  # 40 days of the 4-share demo pool
    span = float(history.submit_time.max() - history.submit_time.min())
    policy = Policy.from_dict(demo_policy_dict(demo_pool_gpus(history)))
    t0 = float(history.submit_time.min()) + span * 0.6
    before = np.flatnonzero(history.submit_time <= t0)
    week = np.flatnonzero((history.submit_time > t0 - 7 * DAY) & (history.submit_time <= t0))
    rows = before[-1000:]
    running = [job(history, i, started_at=max(float(history.submit_time[i]), t0 - HOUR)) for i in rows[:200]]
    pending = [job(history, i) for i in rows[200:]]
    snapshot = Snapshot(t0, running, pending)
    hist = subset(history, before[:-1000], np.full(len(before) - 1000, np.nan))
    inputs = ForecastInputs(policy, snapshot, hist, samples=samples, horizon_days=7)
    began = time.perf_counter()
    result = forecast(inputs)
    seconds = time.perf_counter() - began
    print(f"engine {engine_kind()}: {samples} samples of a {len(snapshot):,}-job snapshot "
          f"({len(running)} running, {len(pending)} pending), {len(week):,} arrivals in the week before T0, "
          f"horizon 7 days: {seconds:.1f} s ({len(result['jobs'])} jobs forecast)")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cases", nargs="*", default=["itp", "openb"], choices=["itp", "openb"])
    parser.add_argument("--cuts", type=int, default=4)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--horizon-days", type=float, default=14.0)
    parser.add_argument("--speed", action="store_true", help="only the speed figure")
    parser.add_argument("--duration-window-days", type=float, help="beyond section 11 (docs/forecast.md)")
    args = parser.parse_args()
    if args.speed:
        speed(200)
        return
    from scheduling.replay import engine_kind

    print(f"engine: {engine_kind()}")
    for case in args.cases:
        policy, states = itp_states(args.cuts) if case == "itp" else openb_states(args.cuts)
        run_case(case, policy, states, args.samples, args.horizon_days, args.duration_window_days)


if __name__ == "__main__":
    main()
