"""A replay's per-job outcomes as columns (``JobOutcomes``), the state codes they use, and the
records a job's wait is rebuilt from (``WaitHistory``): what the engine writes and RESULT.json,
the pages and the job finder read (``scheduling.result`` turns them into RESULT.json).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from scheduling.model import JobState, UnschedulableReason
from scheduling.replay.records import Records


class State(IntEnum):
    """Job states as small integers for the hot loop (STARTING and RUNNING share one code: both
    hold capacity and both can be preempted; progress is derived from the start time)."""

    PENDING_SUBMIT = 0
    RUNNABLE = 1
    RUNNING = 2
    SUCCEEDED = 3
    FAILED = 4
    UNSCHEDULABLE = 5
    CANCELLED = 6  # RUNNABLE past the policy's runnable_timeout_seconds


STATE_NAMES = {
    State.PENDING_SUBMIT: JobState.RUNNABLE.value,
    State.RUNNABLE: JobState.RUNNABLE.value,
    State.RUNNING: JobState.RUNNING.value,
    State.SUCCEEDED: JobState.SUCCEEDED.value,
    State.FAILED: JobState.FAILED.value,
    State.UNSCHEDULABLE: JobState.UNSCHEDULABLE.value,
    State.CANCELLED: JobState.CANCELLED.value,
}
REASONS = [None] + [reason.value for reason in UnschedulableReason]
# RESULT.json's names of the codes of JobOutcomes.state and .reason
STATE_CODE_NAMES = np.array([STATE_NAMES[State(code)] for code in range(len(State))], dtype=object)
REASON_CODE_NAMES = np.array(REASONS, dtype=object)


@dataclass
class WaitHistory:
    """What a job's timeline is rebuilt from (``scheduling.pending``), kept as records:

    - ``starts``: (time, job) of every start;
    - ``preemptions``: (time, victim, preemptor, 1 if cross-share else 0);
    - ``reasons``: best_effort_fifo: (time, group, WaitReason, -1) whenever a queue group's reason
      changes, ``groups`` giving (share, type, instance_count) per group; strict_fifo: (time, share,
      WaitReason, head job) whenever a share's first job is refused.
    """

    starts: Records
    preemptions: Records
    reasons: Records
    groups: Records
    strict: bool = False

    @classmethod
    def empty(cls) -> WaitHistory:
        return cls(Records(2), Records(4), Records(4), Records(3, np.int64))

    def finish(self, strict: bool) -> WaitHistory:
        self.strict = strict
        return self

    def columns(self, name: str, width: int) -> np.ndarray:
        records: Records = getattr(self, name)
        assert records.width == width
        return records.table()

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {
            "history_starts": self.columns("starts", 2),
            "history_preemptions": self.columns("preemptions", 4),
            "history_reasons": self.columns("reasons", 4),
            "history_groups": self.columns("groups", 3),
            "history_strict": np.array([self.strict]),
        }

    @classmethod
    def from_arrays(cls, data) -> WaitHistory:
        if "history_starts" not in data:
            return cls.empty()
        return cls(
            Records.from_table(data["history_starts"], 2),
            Records.from_table(data["history_preemptions"], 4),
            Records.from_table(data["history_reasons"], 4),
            Records.from_table(data["history_groups"], 3, np.int64),
            bool(data["history_strict"][0]),
        )


@dataclass
class JobOutcomes:
    """One entry per job, in the trace's row order. Times are nan where they do not apply."""

    state: np.ndarray  # int8 State
    first_start: np.ndarray  # float64
    end: np.ndarray  # float64
    queued: np.ndarray  # float64 seconds spent RUNNABLE
    preemptions: np.ndarray  # int32
    lost: np.ndarray  # float64 seconds of work lost (not times instance_count)
    reason: np.ndarray  # int8 index into REASONS
    ignored_updates: int = 0
    history: WaitHistory | None = None
    # int16 index into the policy's instance types: the type of the job's last run (section 12);
    # -1 for a job that accepts several types and never ran. None: not recorded (older outcomes).
    instance_type: np.ndarray | None = None

    @classmethod
    def from_columns(
        cls,
        *,
        state,
        first_start,
        end,
        queued,
        preemptions,
        lost,
        reason,
        ignored_updates,
        history=None,
        instance_type=None,
    ):
        """Per-job columns (numpy arrays of any numeric dtype, in trace order); ``reason``:
        {job: UnschedulableReason} for the jobs that have one."""
        reason_codes = np.zeros(len(state), dtype=np.int8)
        for job, r in reason.items():
            reason_codes[job] = REASONS.index(r.value)
        return cls(
            state=np.asarray(state).astype(np.int8),
            first_start=np.asarray(first_start, dtype=np.float64),
            end=np.asarray(end, dtype=np.float64),
            queued=np.asarray(queued, dtype=np.float64),
            preemptions=np.asarray(preemptions).astype(np.int32),
            lost=np.asarray(lost, dtype=np.float64),
            reason=reason_codes,
            ignored_updates=ignored_updates,
            history=history,
            instance_type=None if instance_type is None else np.asarray(instance_type).astype(np.int16),
        )

    def wait(self, submit: np.ndarray) -> np.ndarray:
        return self.first_start - submit

    def jct(self, submit: np.ndarray) -> np.ndarray:
        """End minus submit, for SUCCEEDED jobs only (nan otherwise)."""
        return np.where(self.state == State.SUCCEEDED, self.end - submit, np.nan)
