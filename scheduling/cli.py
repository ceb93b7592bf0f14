"""The command line of SEMANTICS.md section 7 (a contract: keep it stable).

    python -m scheduling replay --policy POLICY --trace TRACE --out RESULT.json [--events]
    python -m scheduling synth --jobs N --out TRACE.csv [--seed S] [--policy-out POLICY.json]
    python -m scheduling import-policy --format aws-batch|kueue FILE... --out POLICY.json [--job-queue Q]
    python -m scheduling forecast --policy POLICY --snapshot SNAPSHOT [--history TRACE] [--samples 200]
        [--seed 0] [--arrivals history|none] [--horizon-days 30] --out FORECAST.json

Invalid input exits non-zero with a one-line reason on stderr and writes no result file.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from scheduling.errors import InputError
from scheduling.model import Policy


def read_policy(path: str | Path) -> Policy:
    """A policy from a JSON (or YAML, by extension) file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read policy file {path}: {exc}") from None
    if path.suffix.lower() in (".yaml", ".yml"):
        import yaml

        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise InputError(f"policy file {path} is not valid YAML: {exc}".replace("\n", " ")) from None
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InputError(f"policy file {path} is not valid JSON: {exc}") from None
    return Policy.from_dict(data)


def _replay(args: argparse.Namespace) -> None:
    from scheduling.replay.engine import replay
    from scheduling.traces import read_trace

    one_shot_process()
    policy = read_policy(args.policy)
    options = {"mapping": _mapping(args.mapping)} if args.mapping else {}
    trace = read_trace(args.trace, format=args.format, **options)
    result = replay(policy, trace, record_events=args.events)
    result.write_json(args.out, include_jobs=True, include_events=args.events)


def one_shot_process() -> None:
    """A replay is one process that reads, replays and writes, then exits: memory it frees is
    better kept for its next phase than given back. glibc hands blocks over 128 KB (a numpy
    array of a block of jobs, a chunk of RESULT.json) back to the system when they are freed,
    and every page taken again costs a fault and the kernel zeroing it: a fifth of a million-job
    replay on a virtual machine whose host backs its memory on first touch. So blocks up to 32 MB
    come from the heap, which is not trimmed; and the cycle collector stays off (the objects
    are columns and the engine's own, freed by reference counts)."""
    gc.disable()
    try:
        mallopt = ctypes.CDLL(None).mallopt  # glibc (elsewhere: nothing to tune)
    except (OSError, AttributeError):
        return
    m_trim_threshold, m_top_pad, m_mmap_threshold = -1, -2, -3
    mallopt(m_mmap_threshold, 32 << 20)  # glibc's largest
    mallopt(m_trim_threshold, 1 << 30)
    mallopt(m_top_pad, 64 << 20)


def _mapping(text: str) -> dict:
    """A trace mapping from ``--mapping``: inline JSON, or ``@FILE`` holding it."""
    if text.startswith("@"):
        try:
            text = Path(text[1:]).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(f"cannot read the mapping file {text[1:]}: {exc}", field="mapping") from None
    try:
        mapping = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"is not JSON: {exc}", field="mapping") from None
    if not isinstance(mapping, dict):
        raise InputError("must be a JSON object", field="mapping")
    return mapping


def _import_policy(args: argparse.Namespace) -> None:
    from scheduling.export.configuration import read_configuration_files

    files = []
    for name in args.files:
        try:
            files.append((Path(name).name, Path(name).read_bytes()))
        except OSError as exc:
            raise InputError(f"cannot read {name}: {exc}", field="file") from None
    data = read_configuration_files(args.format, files, job_queue=args.job_queue)
    Path(args.out).write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    if data.get("description"):
        print(data["description"], file=sys.stderr)


def _synth(args: argparse.Namespace) -> None:
    from scheduling.synthetic import demo_policy_dict, generate
    from scheduling.traces.planner import write_planner_csv

    trace = generate(args.jobs, seed=args.seed)
    write_planner_csv(trace, args.out)
    if args.policy_out:
        Path(args.policy_out).write_text(json.dumps(demo_policy_dict(args.gpus), indent=1))


def _forecast(args: argparse.Namespace) -> None:
    """Section 11: a forecast from a queue snapshot (docs/forecast.md)."""
    from scheduling.forecast import ForecastInputs, forecast, read_snapshot
    from scheduling.traces import read_trace

    one_shot_process()
    policy = read_policy(args.policy)
    try:
        data = Path(args.snapshot).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read the snapshot {args.snapshot}: {exc}", field="snapshot") from None
    snapshot = read_snapshot(data, fmt=args.snapshot_format, policy=policy)
    history = read_trace(args.history, format=args.format) if args.history else None
    inputs = ForecastInputs(
        policy, snapshot, history, samples=args.samples, seed=args.seed, arrivals=args.arrivals,
        horizon_days=args.horizon_days, duration_window_days=args.duration_window_days,
    )  # fmt: skip
    result = forecast(inputs)
    Path(args.out).write_text(json.dumps(result, indent=1, allow_nan=False) + "\n", encoding="utf-8")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m scheduling", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    rep = commands.add_parser("replay", help="replay a trace under a policy")
    rep.add_argument("--policy", required=True, help="policy JSON (or YAML)")
    rep.add_argument("--trace", required=True, help="trace CSV or JSON (optionally gzipped)")
    rep.add_argument("--out", required=True, help="where to write RESULT.json")
    rep.add_argument("--events", action="store_true", help="include the event list")
    rep.add_argument("--format", default="auto", help="trace format (default: by extension)")
    rep.add_argument("--mapping", help="trace mapping, JSON or @FILE (share column, priorities...)")
    rep.set_defaults(run=_replay)
    imp = commands.add_parser("import-policy", help="a scheduler's configuration as a policy JSON")
    imp.add_argument("--format", required=True, choices=["aws-batch", "kueue"])
    imp.add_argument("files", nargs="+", metavar="FILE", help="describe outputs / kubectl YAML / export")
    imp.add_argument("--out", required=True, help="where to write POLICY.json")
    imp.add_argument("--job-queue", help="aws-batch: the job queue, when several are described")
    imp.set_defaults(run=_import_policy)
    fc = commands.add_parser("forecast", help="when will the snapshot's jobs start (SEMANTICS.md section 11)")
    fc.add_argument("--policy", required=True, help="policy JSON (or YAML)")
    fc.add_argument("--snapshot", required=True, help="snapshot JSON (planner, kubectl, AWS Batch)")
    snapshot_formats = ["auto", "planner", "kueue-workloads", "aws-batch"]
    fc.add_argument("--snapshot-format", default="auto", choices=snapshot_formats, help="default: by keys")
    fc.add_argument("--history", help="a trace of past jobs (durations, arrivals, waits)")
    fc.add_argument("--format", default="auto", help="history trace format (default: by extension)")
    fc.add_argument("--samples", type=int, default=200)
    fc.add_argument("--seed", type=int, default=0)
    fc.add_argument("--arrivals", choices=["history", "none"], help="default: history with --history")
    fc.add_argument("--horizon-days", type=float, default=30.0)
    fc.add_argument(
        "--duration-window-days",
        type=float,
        help="beyond section 11: draw a sample's durations from one period (docs/forecast.md)",
    )
    fc.add_argument("--out", required=True, help="where to write FORECAST.json")
    fc.set_defaults(run=_forecast)
    syn = commands.add_parser("synth", help="generate a synthetic multi-team trace")
    syn.add_argument("--jobs", type=int, default=10000)
    syn.add_argument("--seed", type=int, default=0)
    syn.add_argument("--out", required=True, help="trace CSV to write")
    syn.add_argument("--policy-out", help="also write the matching 4-share demo policy")
    syn.add_argument("--gpus", type=int, default=256, help="pool size of the demo policy")
    syn.set_defaults(run=_synth)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except InputError as exc:
        print(f"error: {exc.describe()}".replace("\n", " "), file=sys.stderr)
        return 2
    except OSError as exc:
        print(f"error: {exc}".replace("\n", " "), file=sys.stderr)
        return 1
    return 0
