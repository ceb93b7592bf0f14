"""The replay engine compiled to native code with mypyc: the same source, about seven times as fast.

``python -m scheduling.build`` compiles the modules in ``COMPILED`` (all of them in the
``scheduling.replay`` package, so that what is compiled stands apart from the rest) into
``build/compiled/`` and stamps the build with their sources' hashes. Importing
``scheduling.replay`` puts that directory first on the package's path only when the stamp
matches every source, so an edited engine is never shadowed by a stale build: it runs as pure
Python until it is rebuilt.

``SCHEDULING_ENGINE`` chooses: ``auto`` (the default: compiled when a fresh build exists),
``python`` (always the source) or ``compiled`` (fail at import when there is no fresh build;
the test command sets it so that a failed build cannot pass unnoticed).

Writing for the compiler: the engine modules are plain typed Python, and a few habits keep the
compiled code fast without changing what it computes (the comments in the modules do not repeat
them):

- C functions of the hot loop (``heapq.heappush``, ``bisect.insort``...) are bound once as
  ``Final`` module names, so the compiled code keeps them in C variables instead of looking them
  up on every call.
- Enum members used in the loop become native ints or bools once (job states, wait reasons,
  the fair-sharing strategies as ``final_first`` / ``initial_second``): comparing an enum member
  is a lookup on every use.
- The state is ``__slots__`` classes (``scheduling.replay.state``, ``Group``): fields are C struct
  fields, unboxed; per-round marks live on the groups (``asleep_at``, ``valued_at``) rather than
  in lists or sets, and waiting time is a float field until it is settled.
- Queue keys are ``i64`` (priorities 0-9999 keep them in range) and multiply natively; a
  multiplication by a negative ``sign`` is written as a branch (negative ints take a slow path).
- Share values are compared field by field (``value_below``), not as tuples; ``headroom`` is two
  two-argument ``min()``s (plain comparisons); candidate cursors are classes rather than
  generators (a generator resumes through Python's iterator protocol), except where they run
  once per calendar change.
- The logs append to ``librt.vecs.vec[float]`` (``scheduling.replay.records``): no float object per
  value, and the writers pass plain numbers, not tuples.
- The quota tree's numbers are ``vec[i64]`` (``scheduling.replay.quota_tree``); where they meet ints,
  locals are typed ``i64`` (a conditional expression mixing the two boxes an int). Values and queue
  keys kept per node or group are fields of small native classes (``fair_tree.Seat``,
  ``state.KeptValue``), never lists of tuples or ints, which box at every write. Sentinels stay
  short ints (below 2**62: ``rules.NO_KEY`` is ``1 << 61``); a larger one takes Python's slow path
  at every comparison.
- The loop never releases the GIL, so a worker's liveness is the progress callback every few
  hundred steps (``PROGRESS_TICK_STEPS``).
- ``COMPILED`` is ordered leaves first, so that the side-by-side test can load every source
  after the ones it imports.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent
REPLAY = PACKAGE / "replay"
BUILD_DIR = PACKAGE.parent / "build" / "compiled"
STAMP = BUILD_DIR / "scheduling" / "STAMP.json"
# The hot loop and the logs it writes, in scheduling/replay/; everything else is numpy or runs once
# per replay. Leaves first: each module after those it imports (the side-by-side test loads the
# sources in this order).
COMPILED = (
    "rules.py", "quota_tree.py", "state.py", "records.py", "victims.py", "fair.py", "fair_tree.py",
    "fair_search.py", "calendar.py", "refusals.py", "queues.py", "preemption_loops.py", "rounds.py",
    "fair_round.py", "engine.py",
)  # fmt: skip
# The Python modules (in scheduling/) whose classes the compiled ones use: compiled code checks the
# declared types of their attributes at run time, so a build is stale when one of them changes too
# (a Trace whose job ids stopped being a list failed inside a stale engine).
INTERFACES = (
    "binding.py", "cohorts.py", "errors.py", "job_ids.py", "metrics.py", "model.py", "outcomes.py",
    "result.py", "trace.py",
)  # fmt: skip
CHOICES = ("auto", "python", "compiled")


def _wanted() -> str:
    wanted = os.environ.get("SCHEDULING_ENGINE", "auto") or "auto"
    if wanted not in CHOICES:
        raise RuntimeError(f"SCHEDULING_ENGINE={wanted!r}: choose one of {', '.join(CHOICES)}")
    return wanted


def current_stamp() -> dict:
    """What a build must match: this interpreter and the hash of every compiled source and of
    the modules they take types from."""
    paths = {f"replay/{name}": REPLAY / name for name in COMPILED}
    paths.update({name: PACKAGE / name for name in INTERFACES})
    sources = {name: hashlib.sha256(path.read_bytes()).hexdigest() for name, path in paths.items()}
    return {"python": sys.implementation.cache_tag, "platform": sys.platform, "sources": sources}


def stale_reason() -> str | None:
    """Why the compiled build cannot be used, or None when it is fresh."""
    try:
        built = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return f"no build in {BUILD_DIR} (python -m scheduling.build)"
    if built != current_stamp():
        return "the build is older than the source or for another Python (python -m scheduling.build)"
    return None


def use_compiled(package_path: list[str], package: str = "scheduling") -> None:
    """Called by ``scheduling/__init__.py`` (the modules' shared library lies there) and by
    ``scheduling/replay/__init__.py`` (the compiled modules): search the build directory first
    when it is fresh."""
    wanted = _wanted()
    if wanted == "python":
        return
    reason = stale_reason()
    if reason is None:
        package_path.insert(0, str(BUILD_DIR.joinpath(*package.split("."))))
    elif wanted == "compiled":
        raise RuntimeError(f"SCHEDULING_ENGINE=compiled, but {reason}")
