"""How long a policy calendar of N changes takes where a request reads it: the engine's parser
(every API write and read), ``capacity_steps`` (the policy page's step chart and each study run),
and the Kueue export. ``python -m benchmarks.calendar_benchmark 1000 4000 16000 100000``.

The calendar alternates the pool's capacity and share a's quota at distinct instants, so every
change is an instant of its own (the worst case for the step chart). Past ``MAX_CHANGES`` the
parser refuses the calendar (timed too: the refusal must be quick); the step chart and the
export are then timed on the same changes built directly, to show how they grow."""

from __future__ import annotations

import sys
import time
from dataclasses import replace

from scheduling.capacity_plans import capacity_steps
from scheduling.errors import InputError
from scheduling.export.kueue import to_kueue_yaml
from scheduling.model import MAX_CHANGES, Change, parse_policy


def calendar_policy(n: int) -> dict:
    changes = []
    for i in range(n):
        if i % 2:
            changes.append({"time": 60 * i, "share": "a", "capacity": {"gpu": 10 + i % 5}})
        else:
            changes.append({"time": 60 * i, "capacity": {"gpu": 100 + i % 7}})
    return {
        "name": f"calendar-{n}",
        "capacity": {"gpu": 100},
        "shares": [{"name": "a", "capacity": {"gpu": 10}}, {"name": "b", "capacity": {"gpu": 10}}],
        "changes": changes,
    }


def refused(data: dict) -> str:
    try:
        parse_policy(data)
    except InputError as error:
        return str(error)
    raise AssertionError("a calendar past MAX_CHANGES was accepted")


def timed(label: str, work) -> object:
    started = time.perf_counter()
    out = work()
    print(f"  {label}: {time.perf_counter() - started:.3f} s", flush=True)
    return out


def main(sizes: list[int]) -> None:
    for n in sizes:
        print(f"{n:,} changes")
        data = calendar_policy(n)
        if n <= MAX_CHANGES:
            policy = timed("parse_policy", lambda data=data: parse_policy(data))
        else:
            timed("parse_policy (refused)", lambda data=data: refused(data))
            bare = parse_policy({**data, "changes": []})
            changes = tuple(Change(float(c["time"]), c["capacity"], c.get("share")) for c in data["changes"])
            policy = replace(bare, changes=changes)
        end = 60.0 * n + 60
        timed("capacity_steps", lambda policy=policy, end=end: capacity_steps(policy, 0.0, end))
        timed("to_kueue_yaml", lambda policy=policy: to_kueue_yaml(policy))


if __name__ == "__main__":
    main([int(arg) for arg in sys.argv[1:]] or [1000, 4000])
