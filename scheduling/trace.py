"""A workload trace held as columns (numpy arrays), the form every reader produces.

One array per field and one row per job, never one object per job: a million-job trace
loads from its ``.npz`` file in well under a second and replays without conversion.
Shares and instance types are stored as codes into name lists, because a trace is
replayed under several policies and only bound to one at replay time.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

import numpy as np

from scheduling.job_ids import JobIds

NO_TYPE = -1  # instance_type omitted: the policy must have a single type
UNLIMITED_RETRIES = -1
# Section 12: a job that accepts several instance types names them joined by this, in the trace's
# type names as in CSV ("h100|a100"); a JSON list is joined the same way when it is read.
TYPE_SEPARATOR = "|"


def accepted_types(type_name: str) -> list[str]:
    """The types a trace's instance type name stands for: one, or the parts of a list."""
    if TYPE_SEPARATOR not in type_name:
        return [type_name]
    return [part.strip() for part in type_name.split(TYPE_SEPARATOR)]


@dataclass
class PriorityUpdates:
    """UpdateServiceJob calls: at ``time`` job ``job_id`` gets ``priority``."""

    time: np.ndarray  # float64 seconds
    job_id: list[str]
    priority: np.ndarray  # int32

    @classmethod
    def empty(cls) -> PriorityUpdates:
        return cls(np.zeros(0, dtype=np.float64), [], np.zeros(0, dtype=np.int32))

    def __len__(self) -> int:
        return len(self.job_id)


@dataclass
class Trace:
    """Jobs as columns. Times are seconds; ``epoch_times`` says they are Unix seconds (from
    ISO-8601 input) rather than seconds from an arbitrary origin."""

    job_id: JobIds  # a list of strings given here becomes one
    submit_time: np.ndarray  # float64
    share: np.ndarray  # int32 codes into share_names
    share_names: list[str]
    priority: np.ndarray  # int32, 0..9999
    instance_type: np.ndarray  # int32 codes into type_names, NO_TYPE when omitted
    type_names: list[str]
    instance_count: np.ndarray  # int32 >= 1
    duration: np.ndarray  # float64 seconds of work
    checkpoint_interval: np.ndarray  # float64, nan = no checkpoints
    preemption_retries: np.ndarray  # int32, UNLIMITED_RETRIES = unlimited
    user: list[str] | None = None
    name: list[str] | None = None
    recorded_start: np.ndarray | None = None  # float64, nan = unknown (for calibration)
    # int32, -1 = unknown: how often the real scheduler preempted the job (for calibration)
    recorded_preemptions: np.ndarray | None = None
    updates: PriorityUpdates = field(default_factory=PriorityUpdates.empty)
    epoch_times: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.job_id, JobIds):
            self.job_id = JobIds(self.job_id)

    def __len__(self) -> int:
        return len(self.job_id)

    # -- storage ------------------------------------------------------------------------

    def save(self, target: str | Path | BinaryIO) -> None:
        """Write the trace as one compressed ``.npz`` file."""
        ids, id_offsets = self.job_id.to_arrays()
        arrays = {
            "job_id_utf8": ids,
            "job_id_offsets": id_offsets,
            "submit_time": self.submit_time,
            "share": self.share,
            "share_names": _strings(self.share_names),
            "priority": self.priority,
            "instance_type": self.instance_type,
            "type_names": _strings(self.type_names),
            "instance_count": self.instance_count,
            "duration": self.duration,
            "checkpoint_interval": self.checkpoint_interval,
            "preemption_retries": self.preemption_retries,
            "update_time": self.updates.time,
            "update_job_id": _strings(self.updates.job_id),
            "update_priority": self.updates.priority,
            "meta": np.frombuffer(json.dumps({"epoch_times": self.epoch_times}).encode(), dtype=np.uint8),
        }
        if self.user is not None:
            arrays["user"] = _strings(self.user)
        if self.name is not None:
            arrays["name"] = _strings(self.name)
        if self.recorded_start is not None:
            arrays["recorded_start"] = self.recorded_start
        if self.recorded_preemptions is not None:
            arrays["recorded_preemptions"] = self.recorded_preemptions
        _write_npz(target, arrays)

    @classmethod
    def load(cls, source: str | Path | BinaryIO | bytes) -> Trace:
        if isinstance(source, bytes):
            source = io.BytesIO(source)
        with np.load(source, allow_pickle=False) as data:
            meta = json.loads(bytes(data["meta"]).decode())
            return cls(
                job_id=_job_ids(data),
                submit_time=data["submit_time"],
                share=data["share"],
                share_names=_from_strings(data["share_names"]),
                priority=data["priority"],
                instance_type=data["instance_type"],
                type_names=_from_strings(data["type_names"]),
                instance_count=data["instance_count"],
                duration=data["duration"],
                checkpoint_interval=data["checkpoint_interval"],
                preemption_retries=data["preemption_retries"],
                user=_from_strings(data["user"]) if "user" in data else None,
                name=_from_strings(data["name"]) if "name" in data else None,
                recorded_start=data.get("recorded_start"),
                recorded_preemptions=data.get("recorded_preemptions"),
                updates=PriorityUpdates(
                    data["update_time"], _from_strings(data["update_job_id"]), data["update_priority"]
                ),
                epoch_times=bool(meta.get("epoch_times", False)),
            )


def _write_npz(target: str | Path | BinaryIO, arrays: dict[str, np.ndarray]) -> None:
    """``np.savez_compressed`` at zlib's fastest level: numpy's level 6 took 2.5 s for a million-job
    trace (most of a worker's parse) for a file 5% smaller than level 1's 0.6 s; np.load reads both."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for name, values in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(values), allow_pickle=False)


def _job_ids(data) -> JobIds:
    if "job_id_utf8" in data:
        return JobIds.from_arrays(data["job_id_utf8"], data["job_id_offsets"])
    return JobIds.from_fixed_width(data["job_id"])  # a file written before job ids were one column


def _strings(values: list[str]) -> np.ndarray:
    # UTF-8 bytes in an object-free array: np.load(allow_pickle=False) can read it back.
    encoded = [v.encode("utf-8") for v in values]
    return np.array(encoded, dtype=np.bytes_) if encoded else np.zeros(0, dtype="S1")


def _from_strings(array: np.ndarray) -> list[str]:
    return [v.decode("utf-8") for v in array.tolist()]
