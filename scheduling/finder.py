"""Finding jobs in a replayed trace without reading a million of them: indexes written once (when a
run is recorded) as plain ``.npy`` files, opened memory-mapped, so a search is a few binary
searches and a result row a few reads, whatever the trace's size.

- The trace's part (one per trace): job ids, users and names, lower-cased and sorted, each with the
  job numbers in that order (prefix search by ``searchsorted``), and the same strings in job order.
- A run's part (one per run): each job's state, wait and preemptions, and per share the jobs that
  waited longest and those preempted most often.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from scheduling.outcomes import STATE_NAMES, JobOutcomes, State
from scheduling.trace import Trace

FIELDS = ("job_id", "user", "name")  # what a search looks in
TOP = 20  # jobs per share in each "longest waits" / "most preempted" list
HIGHEST_BYTE = b"\xff"  # above every UTF-8 byte a key can continue with


def _encoded(values: Sequence[str]) -> np.ndarray:
    encoded = [v.encode("utf-8") for v in values]
    return np.array(encoded, dtype=np.bytes_) if encoded else np.zeros(0, dtype="S1")


def _write_folder(folder: Path, arrays: dict[str, np.ndarray], extra: dict | None = None) -> None:
    """Write every array as ``<name>.npy`` into a fresh folder, then rename it into place, so a
    reader sees the whole index or none of it."""
    folder.parent.mkdir(parents=True, exist_ok=True)
    temporary = Path(tempfile.mkdtemp(dir=folder.parent, prefix=f".{folder.name}."))
    try:
        for name, values in arrays.items():
            np.save(temporary / f"{name}.npy", values, allow_pickle=False)
        if extra is not None:
            (temporary / "top.json").write_text(json.dumps(extra))
        if folder.exists():
            shutil.rmtree(folder)
        os.replace(temporary, folder)
    except BaseException:
        shutil.rmtree(temporary, ignore_errors=True)
        raise


def write_trace_index(folder: Path, trace: Trace) -> None:
    """The trace's searchable strings (job ids always; users and names when the trace has them)."""
    arrays: dict[str, np.ndarray] = {"share": np.asarray(trace.share, dtype=np.int32)}
    for field in FIELDS:
        values = getattr(trace, field)
        if values is None:
            continue
        arrays[field] = _encoded(values)
        keys = _encoded([v.lower() for v in values])
        order = np.argsort(keys, kind="stable").astype(np.int32)
        arrays[f"{field}_keys"] = keys[order]
        arrays[f"{field}_order"] = order
    _write_folder(folder, arrays, {"share_names": list(trace.share_names)})


def write_run_index(
    folder: Path, trace: Trace, outcomes: JobOutcomes, top: int = TOP, type_names: Sequence[str] = ()
) -> None:
    """A run's per-job figures and, per share, its ``top`` longest waits and most preempted jobs
    (ties by job order). ``type_names``: the policy's instance types, which the outcomes' run types
    index (section 12: the type of each job's last run)."""
    wait = outcomes.wait(trace.submit_time)
    preemptions = np.asarray(outcomes.preemptions, dtype=np.int32)
    share = np.asarray(trace.share)
    lists: dict[str, dict[str, list[int]]] = {}
    for s, name in enumerate(trace.share_names):
        mine = np.flatnonzero(share == s)
        waits = wait[mine]
        started = mine[np.isfinite(waits)]
        by_wait = started[np.lexsort((started, -wait[started]))][:top]
        preempted = mine[preemptions[mine] > 0]
        by_preemptions = preempted[np.lexsort((preempted, -preemptions[preempted]))][:top]
        lists[name] = {"longest_waits": by_wait.tolist(), "most_preempted": by_preemptions.tolist()}
    arrays = {
        "state": np.asarray(outcomes.state, dtype=np.int8),
        "wait": wait.astype(np.float64),
        "queued": np.asarray(outcomes.queued, dtype=np.float64),
        "preemptions": preemptions,
    }
    if outcomes.instance_type is not None and type_names:
        arrays["instance_type"] = np.asarray(outcomes.instance_type, dtype=np.int16)
        arrays["type_names"] = _encoded(list(type_names))
    _write_folder(folder, arrays, lists)


def prefix_range(keys: np.ndarray, key: bytes) -> tuple[int, int]:
    """Where the sorted fixed-width ``keys`` that start with ``key`` lie. numpy cuts a search
    value to the array's width, so a key as wide as the array can only match itself, and a longer
    one nothing."""
    width = keys.dtype.itemsize
    if len(key) > width:
        return 0, 0
    lo = int(np.searchsorted(keys, key, side="left"))
    if len(key) == width:
        return lo, int(np.searchsorted(keys, key, side="right"))
    return lo, int(np.searchsorted(keys, key + HIGHEST_BYTE, side="left"))


@dataclass(frozen=True)
class JobRow:
    index: int
    job_id: str
    share: str
    user: str
    name: str
    state: str
    wait_seconds: float | None
    queued_seconds: float
    preemptions: int
    instance_type: str = ""  # its last run's type; "" when it never ran or the index predates it


class JobFinder:
    """A trace index and a run index, memory-mapped: nothing is read until asked for."""

    def __init__(self, trace_folder: Path, run_folder: Path):
        self.trace_folder, self.run_folder = Path(trace_folder), Path(run_folder)
        self._arrays: dict[Path, np.ndarray] = {}
        self.share_names: list[str] = json.loads((self.trace_folder / "top.json").read_text())["share_names"]
        self.top: dict[str, dict[str, list[int]]] = json.loads((self.run_folder / "top.json").read_text())

    def _array(self, folder: Path, name: str) -> np.ndarray | None:
        path = folder / f"{name}.npy"
        if path not in self._arrays:
            if not path.exists():
                return None
            self._arrays[path] = np.load(path, mmap_mode="r", allow_pickle=False)
        return self._arrays[path]

    def has(self, field: str) -> bool:
        return (self.trace_folder / f"{field}.npy").exists()

    def search(self, query: str, limit: int = 50, share: str | None = None) -> tuple[list[int], bool]:
        """Jobs whose id, user or name starts with ``query`` (case ignored), in job order; an exact
        id first. Returns (job numbers, whether more matched than ``limit``)."""
        key = query.strip().lower().encode("utf-8")
        if not key:
            return [], False
        share_code = self.share_names.index(share) if share in self.share_names else None
        shares = self._array(self.trace_folder, "share")
        found: list[int] = []
        seen: set[int] = set()
        for field in FIELDS:
            keys = self._array(self.trace_folder, f"{field}_keys")
            if keys is None:
                continue
            lo, hi = prefix_range(keys, key)
            order = self._array(self.trace_folder, f"{field}_order")
            # Enough candidates to fill the page after the share filter, read in one slice.
            wanted = limit * 20 if share_code is not None else limit + 1
            window = order[lo : min(hi, lo + wanted)]
            for job in np.sort(np.asarray(window)).tolist():
                if job in seen or (share_code is not None and int(shares[job]) != share_code):
                    continue
                seen.add(job)
                found.append(job)
        exact = [j for j in found if self.string("job_id", j).lower().encode("utf-8") == key]
        rest = [j for j in found if j not in exact]
        ordered = exact + rest
        more = len(ordered) > limit
        return ordered[:limit], more

    def string(self, field: str, job: int) -> str:
        values = self._array(self.trace_folder, field)
        return "" if values is None else bytes(values[job]).decode("utf-8")

    def rows(self, jobs: Sequence[int]) -> list[JobRow]:
        shares = self._array(self.trace_folder, "share")
        state = self._array(self.run_folder, "state")
        wait = self._array(self.run_folder, "wait")
        queued = self._array(self.run_folder, "queued")
        preemptions = self._array(self.run_folder, "preemptions")
        run_types = self._array(self.run_folder, "instance_type")
        type_names = self._array(self.run_folder, "type_names")
        out = []
        for job in jobs:
            w = float(wait[job])
            kind = ""
            if run_types is not None and type_names is not None and run_types[job] >= 0:
                kind = bytes(type_names[int(run_types[job])]).decode("utf-8")
            out.append(
                JobRow(
                    index=int(job),
                    job_id=self.string("job_id", job),
                    share=self.share_names[int(shares[job])],
                    user=self.string("user", job),
                    name=self.string("name", job),
                    state=STATE_NAMES[State(int(state[job]))],
                    wait_seconds=w if np.isfinite(w) else None,
                    queued_seconds=float(queued[job]),
                    preemptions=int(preemptions[job]),
                    instance_type=kind,
                )
            )
        return out
