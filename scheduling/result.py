"""What a replay returns: per-job outcomes as columns, bounded metrics, and the event list.

``ReplayResult.to_dict()`` is the RESULT.json of SEMANTICS.md section 7; ``metrics`` is what
pages and the database keep (its size does not grow with the number of jobs).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from enum import Enum
from pathlib import Path
from typing import IO, Any

import numpy as np
import orjson

from scheduling.jobs_json import encoded_jobs
from scheduling.model import Cause, Policy
from scheduling.outcomes import REASON_CODE_NAMES, STATE_CODE_NAMES, JobOutcomes, WaitHistory
from scheduling.trace import Trace
from scheduling.write_behind import WriteBehind

# Jobs (or events) encoded at a time when RESULT.json is written. Small on purpose: a chunk is a
# list of dicts (about 600 bytes a job) and its encoded bytes; 65,536 jobs made 40 MB that the
# allocator gave back to the system after each chunk and faulted in again for the next (a third
# of the write), where a few thousand are reused in place, in the processor's cache.
JSON_CHUNK = 4_096


class EventKind(str, Enum):
    START = "start"
    PREEMPT = "preempt"
    FINISH = "finish"
    FAIL = "fail"
    UNSCHEDULABLE = "unschedulable"
    CANCEL = "cancel"


class ReplayResult:
    def __init__(
        self,
        policy: Policy,
        trace: Trace,
        outcomes: JobOutcomes,
        metrics: dict[str, Any],
        events: list[tuple] | None,
    ):
        self.policy = policy
        self.trace = trace
        self.outcomes = outcomes
        self.metrics = metrics
        self.events = events

    @property
    def summary(self) -> dict[str, Any]:
        return self.metrics["summary"]

    @property
    def shares(self) -> list[dict[str, Any]]:
        return self.metrics["shares"]

    def to_dict(self, include_jobs: bool = True, include_events: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "policy": self.policy.name,
            "summary": self.metrics["summary"],
            "shares": self.metrics["shares"],
            "types": self.metrics["types"],
            "pool": self.metrics["pool"],
        }
        if include_jobs:
            out["jobs"] = list(self.iter_jobs())
        if include_events and self.events is not None:
            out["events"] = list(self.iter_events())
        return out

    def iter_jobs(self):
        for chunk in self.job_chunks():
            yield from chunk

    def job_chunks(self, size: int | None = None) -> Iterator[list[dict[str, Any]]]:
        """The jobs of RESULT.json as dicts, ``size`` (default JSON_CHUNK) at a time."""
        size = size or JSON_CHUNK
        for low in range(0, len(self.trace), size):
            yield self._job_dicts(low, min(low + size, len(self.trace)))

    def _job_dicts(self, low: int, high: int) -> list[dict[str, Any]]:
        """Jobs low to high - 1 as dicts: each column converted once (numpy to Python lists,
        names looked up by code) rather than value by value."""
        trace, o = self.trace, self.outcomes
        share_names = np.array(trace.share_names, dtype=object)
        part = slice(low, high)
        submit = trace.submit_time[part]
        start = o.first_start[part]
        end = o.end[part]
        started = ~np.isnan(start)
        rows = zip(
            trace.job_id[part],
            share_names[trace.share[part]].tolist(),
            self._type_names()[self._run_types()[part]].tolist(),
            STATE_CODE_NAMES[o.state[part]].tolist(),
            submit.tolist(),
            start.tolist(),
            end.tolist(),
            (start - submit).tolist(),
            o.queued[part].tolist(),
            o.preemptions[part].tolist(),
            o.lost[part].tolist(),
            REASON_CODE_NAMES[o.reason[part]].tolist(),
            started.tolist(),
            strict=True,
        )
        return [
            {
                "job_id": job_id,
                "share": share,
                "instance_type": instance_type,
                "state": state,
                "submit_time": submitted,
                "first_start": first if was_started else None,
                "end": None if finish != finish else finish,  # nan: not ended
                "wait": wait if was_started else None,
                "queued": queued,
                "preemptions": preemptions,
                "lost_seconds": lost,
                "reason": reason,
            }
            for (
                job_id,
                share,
                instance_type,
                state,
                submitted,
                first,
                finish,
                wait,
                queued,
                preemptions,
                lost,
                reason,
                was_started,
            ) in rows  # fmt: skip
        ]

    def _type_names(self) -> np.ndarray:
        """The policy's type names by index, then None (index -1: no run of a job of several types)."""
        return np.array([*self.policy.instance_types, None], dtype=object)

    def _run_types(self) -> np.ndarray:
        types = self.outcomes.instance_type
        if types is None:  # (outcomes saved before section 12: the bound type)
            from scheduling.binding import bind

            types = bind(self.policy, self.trace).instance_type
        return types

    def iter_events(self):
        job_ids = self.trace.job_id.to_list()  # each event names one or two jobs: Python strings, once
        for time, job, kind, cause, by in self.events or ():
            yield {
                "time": time,
                "job_id": job_ids[job],
                "event": kind.value,
                "cause": cause.value if isinstance(cause, Cause) else None,
                "by": job_ids[by] if by >= 0 else None,
            }

    def write_json(self, path: str | Path, include_jobs: bool = True, include_events: bool = True) -> None:
        """Write RESULT.json atomically: a reader never sees half a file. The small part goes
        through the json module as before; the jobs and events, streamed a chunk at a time
        through orjson, never as one string."""
        path = Path(path)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as opened:
                f = WriteBehind(opened)
                head = json.dumps(self.to_dict(False, False), separators=(",", ":"))
                f.write(head[:-1].encode())
                if include_jobs:
                    f.write(b',"jobs":')
                    names = STATE_CODE_NAMES.tolist(), REASON_CODE_NAMES.tolist()
                    jobs = encoded_jobs(
                        self.trace, self.outcomes, *names, self._encoded_job_dicts,
                        type_names=self._type_names().tolist(), run_types=self._run_types(),
                    )  # fmt: skip
                    _write_list(f, jobs)
                if include_events and self.events is not None:
                    f.write(b',"events":')
                    _write_list(f, (_encoded(chunk) for chunk in _chunked(self.iter_events(), JSON_CHUNK)))
                f.write(b"}")
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise

    def _encoded_job_dicts(self, low: int, high: int) -> memoryview:
        return _encoded(self._job_dicts(low, high))

    def save_outcomes(self, target) -> None:
        o = self.outcomes
        np.savez_compressed(
            target,
            state=o.state,
            first_start=o.first_start,
            end=o.end,
            queued=o.queued,
            preemptions=o.preemptions,
            lost=o.lost,
            reason=o.reason,
            ignored_updates=np.array([o.ignored_updates]),
            **({"instance_type": o.instance_type} if o.instance_type is not None else {}),
            **(o.history.to_arrays() if o.history is not None else {}),
        )

    @staticmethod
    def load_outcomes(source) -> JobOutcomes:
        with np.load(source, allow_pickle=False) as data:
            return JobOutcomes(
                state=data["state"],
                first_start=data["first_start"],
                end=data["end"],
                queued=data["queued"],
                preemptions=data["preemptions"],
                lost=data["lost"],
                reason=data["reason"],
                ignored_updates=int(data["ignored_updates"][0]),
                history=WaitHistory.from_arrays(data),
                instance_type=data.get("instance_type"),
            )


def _write_list(out: IO[bytes] | WriteBehind, chunks: Iterable[bytes | memoryview]) -> None:
    """A JSON list written a chunk at a time, each chunk its items joined by commas."""
    out.write(b"[")
    first = True
    for chunk in chunks:
        if not len(chunk):
            continue
        if not first:
            out.write(b",")
        out.write(chunk)
        first = False
    out.write(b"]")


def _encoded(items: list) -> memoryview:
    """Items as JSON joined by commas (orjson: NaN would be null, as strict JSON has it)."""
    return memoryview(orjson.dumps(items))[1:-1]  # (the list's brackets cut without a copy)


def _chunked(items: Iterable, size: int) -> Iterator[list]:
    chunk: list = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
