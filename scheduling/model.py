"""The entities a replay is about: instance types, the pool, quota shares and the policy.

Policies are frozen dataclasses built and validated from the JSON of SEMANTICS.md section 7
(``Policy.from_dict``); the one validator here serves the command line and the Django shell.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from enum import Enum, IntEnum
from typing import Any, TypeVar

from scheduling.cohorts import ROOT, Node, tree_problems
from scheduling.errors import InputError

UNLIMITED = math.inf
EnumT = TypeVar("EnumT", bound=Enum)


class Strategy(str, Enum):
    RESERVE = "RESERVE"  # never lends, never borrows
    LEND = "LEND"  # lends idle quota, never borrows
    LEND_AND_BORROW = "LEND_AND_BORROW"

    @property
    def lends(self) -> bool:
        return self is not Strategy.RESERVE

    @property
    def borrows(self) -> bool:
        return self is Strategy.LEND_AND_BORROW


class InSharePreemption(str, Enum):
    NEVER = "never"
    LOWER_PRIORITY = "lower_priority"
    LOWER_OR_NEWER_EQUAL_PRIORITY = "lower_or_newer_equal_priority"


class Reclaim(str, Enum):
    ANY = "any"
    LOWER_PRIORITY = "lower_priority"
    NEVER = "never"


class Queueing(str, Enum):
    BEST_EFFORT_FIFO = "best_effort_fifo"
    STRICT_FIFO = "strict_fifo"


class JobState(str, Enum):
    RUNNABLE = "RUNNABLE"
    STARTING = "STARTING"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    UNSCHEDULABLE = "UNSCHEDULABLE"
    CANCELLED = "CANCELLED"  # RUNNABLE longer than the policy's runnable_timeout_seconds (section 10)


class Cause(str, Enum):
    CROSS_SHARE = "cross_share"
    IN_SHARE = "in_share"
    FAIR_SHARING = "fair_sharing"  # another share's borrower taken by fair sharing (section 8)
    CAPACITY = "capacity"  # capacity or a quota went down (section 9)


class FairStrategy(str, Enum):
    """Kueue's fairSharing preemption strategies (section 8)."""

    LESS_THAN_OR_EQUAL_TO_FINAL_SHARE = "LessThanOrEqualToFinalShare"
    LESS_THAN_INITIAL_SHARE = "LessThanInitialShare"


# The only lists Kueue's configuration accepts, in their order.
FAIR_STRATEGY_LISTS: tuple[tuple[FairStrategy, ...], ...] = (
    (FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE,),
    (FairStrategy.LESS_THAN_INITIAL_SHARE,),
    (FairStrategy.LESS_THAN_OR_EQUAL_TO_FINAL_SHARE, FairStrategy.LESS_THAN_INITIAL_SHARE),
)


class WhenCan(str, Enum):
    """Kueue flavorFungibility whenCanBorrow / whenCanPreempt (section 12)."""

    MAY_STOP_SEARCH = "MayStopSearch"
    TRY_NEXT_FLAVOR = "TryNextFlavor"


class FlavorPreference(str, Enum):
    """Kueue flavorFungibility preference: which remembered type wins (section 12)."""

    BORROWING_OVER_PREEMPTION = "BorrowingOverPreemption"
    PREEMPTION_OVER_BORROWING = "PreemptionOverBorrowing"


class WaitReason(IntEnum):
    """Why a pending job is not running, as found the last time the scheduler looked at it."""

    POOL_FULL = 0  # the pool's instances of its type are all in use, and it may preempt none of them
    NOTHING_LENDABLE = 1  # there is idle capacity, but it is quota its owners may not lend (RESERVE...)
    BORROW_LIMIT = 2  # its share would go over quota + borrow limit
    OVER_QUOTA_NO_BORROWING = 3  # its share would go over quota and may not borrow (RESERVE, LEND)
    BEHIND_QUEUE_HEAD = 4  # strict_fifo: behind the first job of its share's queue


class UnschedulableReason(str, Enum):
    SERVICE_ENVIRONMENT_MAX_RESOURCE = "SERVICE_ENVIRONMENT_MAX_RESOURCE"
    QUOTA_MANAGEMENT_LIMIT_EXCEEDED = "QUOTA_MANAGEMENT_LIMIT_EXCEEDED"


MAX_PRIORITY = 9999

# Domain maxima, checked by the one validator below (``check_name``, ``_parse_number``). Each is far
# above any real pool and far below what the databases store (PostgreSQL integer: 2**31 - 1), so an
# absurd value is a clear error on SQLite and PostgreSQL alike, never an overflow at the database.
MAX_NAME_LENGTH = 100  # policies, shares, pools, instance types, studies (the database columns)
MAX_INSTANCES = 1_000_000  # instances of one type: pool capacity, a quota, a borrowing or lending limit
MAX_GPUS_PER_INSTANCE = 1_024
MAX_HOURLY_PRICE = 100_000.0  # $ per instance-hour
MAX_STARTUP_SECONDS = 7 * 86_400.0  # a week: longer is no start-up, and a replay would idle for ever
MAX_BORROW_LIMIT_PERCENT = 100_000.0  # 1,000 times the share's own quota
MAX_SHARES = 500  # per policy (AWS Batch allows 20 quota shares per job queue)
MAX_RUNNABLE_TIMEOUT_SECONDS = 365 * 86_400.0  # a year in RUNNABLE: any real limit is far shorter
MAX_FAIR_WEIGHT = 1_000_000.0  # Kueue weights are small numbers; 0 already means "never favoured"
# Kueue's weight is a resource.Quantity: 1m (0.001) is the smallest positive one it writes. A
# smaller positive weight (1e-320, subnormal) turns a share's value (borrowed / weight) into
# infinity; 0 is the weight that never favours a share.
MIN_FAIR_WEIGHT = 0.001
# A calendar of ten thousand dated changes is a change every hour for over a year: a real plan has
# tens. Past it, a page, an export and every replay would spend seconds on the calendar alone.
MAX_CHANGES = 10_000


@dataclass(frozen=True)
class InstanceType:
    name: str
    gpus: float = 1
    hourly_price: float = 0.0


@dataclass(frozen=True)
class FlavorFungibility:
    """How a job that accepts several types picks one (section 12); Kueue's defaults."""

    when_can_borrow: WhenCan = WhenCan.MAY_STOP_SEARCH
    when_can_preempt: WhenCan = WhenCan.TRY_NEXT_FLAVOR
    preference: FlavorPreference = FlavorPreference.BORROWING_OVER_PREEMPTION


DEFAULT_FUNGIBILITY = FlavorFungibility()


@dataclass(frozen=True)
class Share:
    """A quota share (AWS) / ClusterQueue in a cohort (Kueue). Limits are per instance type."""

    name: str
    capacity: Mapping[str, int]
    strategy: Strategy = Strategy.LEND_AND_BORROW
    borrow_limit_percent: float | None = None  # AWS borrowLimit; None or -1 = unlimited
    borrowing_limit: Mapping[str, int] | None = None  # Kueue, absolute instances per type
    lending_limit: Mapping[str, int] | None = None  # Kueue; None = all idle quota
    in_share_preemption: InSharePreemption = InSharePreemption.NEVER
    reclaim: Reclaim = Reclaim.ANY
    fair_weight: float = 1.0  # Kueue spec.fairSharing.weight; only used with fair sharing on
    # Section 12: the order its jobs' accepted types are tried in (None: the policy's order), and
    # how the scan stops.
    flavor_order: tuple[str, ...] | None = None
    flavor_fungibility: FlavorFungibility = DEFAULT_FUNGIBILITY
    cohort: str | None = None  # section 13: the cohort it is in (None: the root)

    def quota(self, instance_type: str) -> int:
        return self.capacity.get(instance_type, 0)

    def borrow_limit(self, instance_type: str, quota: int | None = None) -> float:
        """Instances of a type this share may hold above its quota (``inf`` = unlimited); with
        ``quota``, under that quota instead of its own (a quota changed by the calendar: a
        percentage follows it, an absolute limit does not)."""
        if not self.strategy.borrows:
            return 0
        if self.borrowing_limit is not None:
            return self.borrowing_limit.get(instance_type, UNLIMITED)
        own = self.quota(instance_type) if quota is None else quota
        return borrow_limit_from_percent(own, self.borrow_limit_percent)

    def lend_limit(self, instance_type: str) -> float:
        """At most this many idle quota instances may be lent (``inf`` = all of them)."""
        if not self.strategy.lends:
            return 0
        if self.lending_limit is None:
            return UNLIMITED
        return self.lending_limit.get(instance_type, UNLIMITED)


def borrow_limit_from_percent(quota: int, percent: float | None) -> float:
    """AWS borrowLimit: a percentage of the share's own capacity, rounded down **(choice)**."""
    if percent is None or percent < 0:
        return UNLIMITED
    return math.floor(quota * percent / 100 + 1e-9)


@dataclass(frozen=True)
class FairSharing:
    """Kueue fairSharing (section 8); a policy without one schedules by section 4 alone."""

    preemption_strategies: tuple[FairStrategy, ...] = FAIR_STRATEGY_LISTS[2]


@dataclass(frozen=True)
class Change:
    """From ``time`` on, the pool's capacity (``share`` None) or a share's quota of each type
    named in ``capacity`` is the given number of instances (section 9)."""

    time: float
    capacity: Mapping[str, int]
    share: str | None = None


@dataclass(frozen=True)
class Cohort:
    """A Kueue Cohort in a tree of cohorts (section 13): its own nominal quota per type, limits per
    type on what its subtree may borrow from its parent and lend to it, and its fair weight."""

    name: str
    parent: str | None = None  # None: the root
    capacity: Mapping[str, int] = field(default_factory=dict)
    borrowing_limit: Mapping[str, int] | None = None  # None: no limit
    lending_limit: Mapping[str, int] | None = None  # None: all of its subtree's quota is lendable
    fair_weight: float = 1.0


@dataclass(frozen=True)
class Policy:
    name: str
    instance_types: Mapping[str, InstanceType]
    capacity: Mapping[str, int]
    shares: tuple[Share, ...]
    queueing: Queueing = Queueing.BEST_EFFORT_FIFO
    startup_seconds: float = 0.0
    fair_sharing: FairSharing | None = None
    changes: tuple[Change, ...] = ()  # sorted by time; changes at one time apply together
    runnable_timeout_seconds: float | None = None
    description: str = field(default="", compare=False)
    cohorts: tuple[Cohort, ...] = ()  # section 13; empty: one root cohort (sections 3-4 and 8)

    def capacity_at(self, time: float) -> dict[str, int]:
        """The pool's capacity per type in force at ``time`` (a change at T applies from T on)."""
        capacity = dict(self.capacity)
        for change in self.changes:
            if change.time > time:
                break
            if change.share is None:
                capacity.update(change.capacity)
        return capacity

    def quota_at(self, share_name: str, time: float) -> dict[str, int]:
        """A share's quota per type in force at ``time``."""
        quota = dict(self.share(share_name).capacity)
        for change in self.changes:
            if change.time > time:
                break
            if change.share == share_name:
                quota.update(change.capacity)
        return quota

    def share(self, name: str) -> Share:
        for share in self.shares:
            if share.name == name:
                return share
        raise KeyError(name)

    def share_index(self) -> dict[str, int]:
        return {share.name: i for i, share in enumerate(self.shares)}

    def types_in_order(self, share_name: str) -> list[str]:
        """The share's types in the order its jobs try them (section 12): its ``flavor_order``,
        then **(choice)** the types it leaves out, in the policy's order."""
        listed = self.share(share_name).flavor_order or ()
        return list(listed) + [t for t in self.instance_types if t not in listed]

    def unassigned(self, instance_type: str) -> int:
        """Pool capacity of a type that no share holds as quota: always lendable."""
        return self.capacity.get(instance_type, 0) - sum(s.quota(instance_type) for s in self.shares)

    def cohort_nodes(self) -> list[Node]:
        """Section 13's tree: every cohort and share as a node (``scheduling.cohorts``). A share's
        strategy becomes its limits, as AWS quota shares are the one-level case: RESERVE lends and
        borrows nothing, LEND borrows nothing, a borrow limit (percent or absolute) is the node's
        borrowing limit."""
        nodes = [
            Node(
                c.name,
                c.parent or ROOT,
                False,
                dict(c.capacity),
                dict(c.borrowing_limit or {}),
                dict(c.lending_limit or {}),
                c.fair_weight,
            )
            for c in self.cohorts
        ]
        for share in self.shares:
            borrowing = {
                t: int(limit) for t in self.instance_types if not math.isinf(limit := share.borrow_limit(t))
            }
            lending = {
                t: int(limit) for t in self.instance_types if not math.isinf(limit := share.lend_limit(t))
            }
            nodes.append(
                Node(
                    share.name,
                    share.cohort or ROOT,
                    True,
                    dict(share.capacity),
                    borrowing,
                    lending,
                    share.fair_weight,
                )  # fmt: skip
            )
        return nodes

    def with_shares(self, shares: tuple[Share, ...], name: str | None = None) -> Policy:
        return replace(self, shares=shares, name=name or self.name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Policy:
        return parse_policy(data)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "instance_types": {
                t.name: {"gpus": t.gpus, "hourly_price": t.hourly_price} for t in self.instance_types.values()
            },
            "capacity": dict(self.capacity),
            "queueing": self.queueing.value,
            "startup_seconds": self.startup_seconds,
            "shares": [_share_to_dict(s) for s in self.shares],
            **self._optional_dict(),
        }

    def _optional_dict(self) -> dict[str, Any]:
        """Sections 8-10's keys, written only when they are not the default."""
        out: dict[str, Any] = {}
        if self.fair_sharing is not None:
            out["fair_sharing"] = {
                "preemption_strategies": [s.value for s in self.fair_sharing.preemption_strategies]
            }
        if self.changes:
            out["changes"] = [_change_to_dict(c) for c in self.changes]
        if self.runnable_timeout_seconds is not None:
            out["runnable_timeout_seconds"] = self.runnable_timeout_seconds
        if self.cohorts:
            out["cohorts"] = [_cohort_to_dict(c) for c in self.cohorts]
        return out


def _cohort_to_dict(cohort: Cohort) -> dict[str, Any]:
    out: dict[str, Any] = {"name": cohort.name}
    if cohort.parent is not None:
        out["parent"] = cohort.parent
    out["capacity"] = dict(cohort.capacity)
    if cohort.borrowing_limit is not None:
        out["borrowing_limit"] = dict(cohort.borrowing_limit)
    if cohort.lending_limit is not None:
        out["lending_limit"] = dict(cohort.lending_limit)
    if cohort.fair_weight != 1:
        out["fair_weight"] = cohort.fair_weight
    return out


def _change_to_dict(change: Change) -> dict[str, Any]:
    out: dict[str, Any] = {"time": change.time}
    if change.share is not None:
        out["share"] = change.share
    out["capacity"] = dict(change.capacity)
    return out


def share_dict(share: Share) -> dict[str, Any]:
    """A share as the policy JSON writes it (section 7; the optional keys only when set)."""
    return _share_to_dict(share)


def _share_to_dict(share: Share) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": share.name,
        "capacity": dict(share.capacity),
        "strategy": share.strategy.value,
        "in_share_preemption": share.in_share_preemption.value,
        "reclaim": share.reclaim.value,
    }
    if share.borrow_limit_percent is not None:
        out["borrow_limit_percent"] = share.borrow_limit_percent
    if share.borrowing_limit is not None:
        out["borrowing_limit"] = dict(share.borrowing_limit)
    if share.lending_limit is not None:
        out["lending_limit"] = dict(share.lending_limit)
    if share.fair_weight != 1:
        out["fair_weight"] = share.fair_weight
    if share.flavor_order is not None:
        out["flavor_order"] = list(share.flavor_order)
    if share.flavor_fungibility != DEFAULT_FUNGIBILITY:
        f = share.flavor_fungibility
        out["flavor_fungibility"] = {
            "when_can_borrow": f.when_can_borrow.value,
            "when_can_preempt": f.when_can_preempt.value,
            "preference": f.preference.value,
        }
    if share.cohort is not None:
        out["cohort"] = share.cohort
    return out


# ---------------------------------------------------------------------------------------
# Parsing and validation: the one place that decides what a valid policy is.


def parse_policy(data: Mapping[str, Any]) -> Policy:
    if not isinstance(data, Mapping):
        raise InputError("a policy must be a JSON object")
    name = check_name(data.get("name") or "policy", "name")
    instance_types = _parse_instance_types(data.get("instance_types"))
    capacity = _parse_counts(data.get("capacity"), "capacity", instance_types, required=True)
    if not any(capacity.values()):
        raise InputError("the pool has no capacity", field="capacity")
    shares_raw = data.get("shares")
    if not isinstance(shares_raw, list) or not shares_raw:
        raise InputError("a policy needs a non-empty list of shares", field="shares")
    if len(shares_raw) > MAX_SHARES:
        raise InputError(f"{len(shares_raw)} shares: a policy has at most {MAX_SHARES}", field="shares")
    shares = tuple(_parse_share(raw, i, instance_types) for i, raw in enumerate(shares_raw))
    names = [s.name for s in shares]
    for i, share_name in enumerate(names):
        if share_name in names[:i]:
            raise InputError(f"duplicate share name {share_name!r}", field=f"shares[{i}].name")
    queueing = parse_enum(Queueing, data.get("queueing", Queueing.BEST_EFFORT_FIFO.value), "queueing")
    startup = _parse_number(
        data.get("startup_seconds", 0), "startup_seconds", minimum=0, maximum=MAX_STARTUP_SECONDS
    )
    timeout = data.get("runnable_timeout_seconds")
    if timeout is not None:
        timeout = _parse_number(
            timeout,
            "runnable_timeout_seconds",
            minimum=0,
            strictly_positive=True,
            maximum=MAX_RUNNABLE_TIMEOUT_SECONDS,
        )
    policy = Policy(
        name=name,
        instance_types=instance_types,
        capacity=capacity,
        shares=shares,
        queueing=queueing,
        startup_seconds=startup,
        fair_sharing=_parse_fair_sharing(data.get("fair_sharing")),
        changes=_parse_changes(data.get("changes"), instance_types),
        runnable_timeout_seconds=timeout,
        description=str(data.get("description", "")),
        cohorts=_parse_cohorts(data.get("cohorts"), instance_types),
    )
    validate_policy(policy)
    return policy


def validate_policy(policy: Policy) -> None:
    """Rules that involve several fields: quotas within the pool at every instant, limits that
    make sense, a tree of cohorts without cycles or unknown parents."""
    if policy.cohorts or any(s.cohort is not None for s in policy.shares):
        _validate_tree(policy)
    for type_name, pool_capacity in policy.capacity.items():
        total = sum(s.quota(type_name) for s in policy.shares)
        if total > pool_capacity:
            raise InputError(
                f"share quotas of {type_name} add up to {total}, more than the pool's {pool_capacity}",
                field=f"capacity.{type_name}",
            )
    _validate_changes(policy)
    for i, share in enumerate(policy.shares):
        for type_name in share.capacity:
            if type_name not in policy.capacity:
                raise InputError(
                    f"the pool has no capacity of {type_name}", field=f"shares[{i}].capacity.{type_name}"
                )
        if share.borrow_limit_percent is not None and share.borrowing_limit is not None:
            raise InputError(
                "give borrow_limit_percent or borrowing_limit, not both", field=f"shares[{i}].borrowing_limit"
            )
        if not share.strategy.borrows and (
            (share.borrow_limit_percent is not None and share.borrow_limit_percent != -1)
            or share.borrowing_limit is not None
        ):
            raise InputError(
                f"a borrow limit only applies to LEND_AND_BORROW, not {share.strategy.value}",
                field=f"shares[{i}].borrow_limit_percent",
            )
        if share.strategy is Strategy.RESERVE and share.lending_limit is not None:
            raise InputError(
                "a RESERVE share lends nothing: remove lending_limit", field=f"shares[{i}].lending_limit"
            )


def _validate_tree(policy: Policy) -> None:
    """Section 13: the first problem of the tree of cohorts, naming the cohort or share and its
    field (``cohorts[2].parent``); a name used twice among shares and cohorts is refused first."""
    where = {c.name: f"cohorts[{i}]" for i, c in reversed(list(enumerate(policy.cohorts)))}
    shares = {s.name: i for i, s in enumerate(policy.shares)}
    for i, cohort in enumerate(policy.cohorts):
        if where[cohort.name] != f"cohorts[{i}]":
            raise InputError(f"duplicate cohort name {cohort.name!r}", field=f"cohorts[{i}].name")
        if cohort.name in shares:
            raise InputError(
                f"{cohort.name!r} names both a cohort and a share (Kueue keeps them apart; here they "
                "share one tree)",
                field=f"cohorts[{i}].name",
            )
    where.update((name, f"shares[{i}]") for name, i in shares.items())
    problems = tree_problems(policy.cohort_nodes(), policy.capacity)
    if problems:
        first = problems[0]
        if first.node is None:
            raise InputError(first.message, field=first.field)
        kind = "share" if first.is_share else "cohort"
        raise InputError(f"{kind} {first.node}: {first.message}", field=f"{where[first.node]}.{first.field}")


def _parse_instance_types(raw: Any) -> dict[str, InstanceType]:
    if raw is None:
        return {"gpu": InstanceType("gpu", 1, 0.0)}
    if not isinstance(raw, Mapping) or not raw:
        raise InputError("must be an object of instance type names", field="instance_types")
    types = {}
    for type_name, spec in raw.items():
        where = f"instance_types.{type_name}"
        if not isinstance(type_name, str) or not type_name.strip():
            raise InputError("an instance type needs a name", field="instance_types")
        check_name(type_name, where)
        spec = spec if spec is not None else {}
        if not isinstance(spec, Mapping):
            raise InputError("must be an object with gpus and hourly_price", field=where)
        gpus = _parse_number(
            spec.get("gpus", 1),
            f"{where}.gpus",
            minimum=0,
            strictly_positive=True,
            maximum=MAX_GPUS_PER_INSTANCE,
        )
        price = _parse_number(
            spec.get("hourly_price", 0), f"{where}.hourly_price", minimum=0, maximum=MAX_HOURLY_PRICE
        )
        types[type_name] = InstanceType(type_name, gpus, price)
    return types


def _parse_share(raw: Any, index: int, instance_types: Mapping[str, InstanceType]) -> Share:
    where = f"shares[{index}]"
    if not isinstance(raw, Mapping):
        raise InputError("must be an object", field=where)
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError("a share needs a name", field=f"{where}.name")
    check_name(name, f"{where}.name")
    known = {
        "name",
        "capacity",
        "strategy",
        "borrow_limit_percent",
        "borrowing_limit",
        "lending_limit",
        "in_share_preemption",
        "reclaim",
        "fair_weight",
        "flavor_order",
        "flavor_fungibility",
        "cohort",
    }
    _reject_unknown_settings(raw, known, where)
    capacity = _parse_counts(raw.get("capacity", {}), f"{where}.capacity", instance_types)
    strategy = parse_enum(Strategy, raw.get("strategy", Strategy.LEND_AND_BORROW.value), f"{where}.strategy")
    percent = raw.get("borrow_limit_percent")
    if percent is not None:
        percent = _parse_number(
            percent, f"{where}.borrow_limit_percent", minimum=-1, maximum=MAX_BORROW_LIMIT_PERCENT
        )
        if -1 < percent < 0:
            raise InputError("must be -1 (unlimited) or at least 0", field=f"{where}.borrow_limit_percent")
    borrowing = _parse_limit(raw.get("borrowing_limit"), f"{where}.borrowing_limit", instance_types)
    lending = _parse_limit(raw.get("lending_limit"), f"{where}.lending_limit", instance_types)
    return Share(
        name=name,
        capacity=capacity,
        strategy=strategy,
        borrow_limit_percent=percent,
        borrowing_limit=borrowing,
        lending_limit=lending,
        in_share_preemption=parse_enum(
            InSharePreemption, raw.get("in_share_preemption", "never"), f"{where}.in_share_preemption"
        ),
        reclaim=parse_enum(Reclaim, raw.get("reclaim", "any"), f"{where}.reclaim"),
        fair_weight=parse_fair_weight(raw.get("fair_weight", 1), f"{where}.fair_weight"),
        flavor_order=_parse_flavor_order(
            raw.get("flavor_order"), f"{where}.flavor_order", instance_types, name
        ),
        flavor_fungibility=_parse_fungibility(
            raw.get("flavor_fungibility"), f"{where}.flavor_fungibility", name
        ),
        cohort=_parse_parent(raw.get("cohort"), f"{where}.cohort"),
    )


def _parse_parent(raw: Any, where: str) -> str | None:
    """A cohort's name (a share's ``cohort``, a cohort's ``parent``); absent or null: the root."""
    if raw is None:
        return None
    if not isinstance(raw, str) or not raw.strip():
        raise InputError("must be a cohort's name (or absent: the root)", field=where)
    return check_name(raw, where)


def _parse_cohorts(raw: Any, instance_types: Mapping[str, InstanceType]) -> tuple[Cohort, ...]:
    """Section 13's ``cohorts``: each with a name, optionally a parent, its own quota, limits and
    fair weight. The tree as a whole is checked by ``validate_policy``."""
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("must be a list of cohorts, each {name, parent, capacity, ...}", field="cohorts")
    if len(raw) > MAX_SHARES:
        raise InputError(f"{len(raw)} cohorts: a policy has at most {MAX_SHARES}", field="cohorts")
    known = {"name", "parent", "capacity", "borrowing_limit", "lending_limit", "fair_weight"}
    cohorts = []
    for i, item in enumerate(raw):
        where = f"cohorts[{i}]"
        if not isinstance(item, Mapping):
            raise InputError("must be an object", field=where)
        _reject_unknown_settings(item, known, where)
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise InputError("a cohort needs a name", field=f"{where}.name")
        check_name(name, f"{where}.name")
        cohorts.append(
            Cohort(
                name=name,
                parent=_parse_parent(item.get("parent"), f"{where}.parent"),
                capacity=_parse_counts(item.get("capacity", {}), f"{where}.capacity", instance_types),
                # An empty table limits nothing, as an absent one: one spelling, so that a policy
                # written back (``to_dict``) and read again is the same policy.
                borrowing_limit=_parse_limit(
                    item.get("borrowing_limit"), f"{where}.borrowing_limit", instance_types
                )
                or None,
                lending_limit=_parse_limit(
                    item.get("lending_limit"), f"{where}.lending_limit", instance_types
                )
                or None,
                fair_weight=parse_fair_weight(item.get("fair_weight", 1), f"{where}.fair_weight"),
            )
        )
    return tuple(cohorts)


def _parse_flavor_order(
    raw: Any, where: str, instance_types: Mapping[str, InstanceType], share: str
) -> tuple[str, ...] | None:
    """Section 12: instance types in the order a share's jobs try them, each once."""
    if raw is None:
        return None
    if not isinstance(raw, list):
        raise InputError(f"share {share!r}: must be a list of instance type names", field=where)
    order: list[str] = []
    for i, name in enumerate(raw):
        if not isinstance(name, str) or name not in instance_types:
            known = ", ".join(instance_types)
            raise InputError(
                f"share {share!r}: unknown instance type {name!r} (the policy has {known})",
                field=f"{where}[{i}]",
            )
        if name in order:
            raise InputError(f"share {share!r}: {name!r} is listed twice", field=f"{where}[{i}]")
        order.append(name)
    return canonical_flavor_order(order, list(instance_types))


def canonical_flavor_order(listed: list[str], type_order: list[str]) -> tuple[str, ...] | None:
    """A flavor order as it is kept: every type, the listed ones first (**choice**: the others after,
    in the policy's order), or None when that is the policy's order (the default): so that two orders
    that scan alike compare equal, and an import reads back what an export wrote."""
    full = list(listed) + [t for t in type_order if t not in listed]
    return None if full == type_order else tuple(full)


def _parse_fungibility(raw: Any, where: str, share: str) -> FlavorFungibility:
    """Section 12's flavor_fungibility, Kueue's defaults for what is left out. PreemptionOverBorrowing
    only with both TryNextFlavor: with a MayStopSearch the scan stops before the preference decides."""
    if raw is None:
        return DEFAULT_FUNGIBILITY
    if not isinstance(raw, Mapping):
        raise InputError(
            f"share {share!r}: must be an object with when_can_borrow, when_can_preempt, preference",
            field=where,
        )
    _reject_unknown_settings(
        raw, ("when_can_borrow", "when_can_preempt", "preference"), where, prefix=f"share {share!r}: "
    )
    default = DEFAULT_FUNGIBILITY

    def parsed(enum: type[Enum], key: str, fallback: str):
        try:
            return enum(raw.get(key, fallback))
        except ValueError:
            allowed = ", ".join(member.value for member in enum)
            raise InputError(
                f"share {share!r}: {raw.get(key)!r} is not one of {allowed}", field=f"{where}.{key}"
            ) from None

    borrow = parsed(WhenCan, "when_can_borrow", default.when_can_borrow.value)
    preempt = parsed(WhenCan, "when_can_preempt", default.when_can_preempt.value)
    preference = parsed(FlavorPreference, "preference", default.preference.value)
    both_try = borrow is WhenCan.TRY_NEXT_FLAVOR and preempt is WhenCan.TRY_NEXT_FLAVOR
    if preference is FlavorPreference.PREEMPTION_OVER_BORROWING and not both_try:
        raise InputError(
            f"share {share!r}: PreemptionOverBorrowing needs when_can_borrow and when_can_preempt "
            "both TryNextFlavor",
            field=f"{where}.preference",
        )
    return FlavorFungibility(borrow, preempt, preference)


def _parse_fair_sharing(raw: Any) -> FairSharing | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping):
        raise InputError("must be an object (or null: off)", field="fair_sharing")
    _reject_unknown_settings(raw, ("preemption_strategies",), "fair_sharing")
    listed = raw.get("preemption_strategies")
    if listed is None:
        return FairSharing()
    allowed = "; ".join(str([s.value for s in strategies]) for strategies in FAIR_STRATEGY_LISTS)
    if not isinstance(listed, list):
        raise InputError(f"must be one of the lists {allowed}", field="fair_sharing.preemption_strategies")
    strategies = tuple(
        parse_enum(FairStrategy, value, f"fair_sharing.preemption_strategies[{i}]")
        for i, value in enumerate(listed)
    )
    if strategies not in FAIR_STRATEGY_LISTS:
        raise InputError(
            f"{listed!r} is not a list Kueue accepts: {allowed}", field="fair_sharing.preemption_strategies"
        )
    return FairSharing(strategies)


def _parse_changes(raw: Any, instance_types: Mapping[str, InstanceType]) -> tuple[Change, ...]:
    # Imported here: scheduling.traces imports this module (MAX_PRIORITY).
    from scheduling.traces.fields import parse_time

    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InputError("must be a list of {time, capacity} or {time, share, capacity}", field="changes")
    if len(raw) > MAX_CHANGES:
        raise InputError(
            f"{len(raw):,} changes: a policy's calendar holds at most {MAX_CHANGES:,}", field="changes"
        )
    changes = []
    # (time, target, type) -> the change that set it: one instant sets a target's type once.
    setters: dict[tuple[float, str | None, str], int] = {}
    for i, item in enumerate(raw):
        where = f"changes[{i}]"
        if not isinstance(item, Mapping):
            raise InputError("must be an object with time, capacity and optionally share", field=where)
        _reject_unknown_settings(item, ("time", "share", "capacity"), where)
        time, _ = parse_time(item.get("time"), None, f"{where}.time")
        share = item.get("share")
        if share is not None and (not isinstance(share, str) or not share.strip()):
            raise InputError("must be a share's name (or absent: the pool)", field=f"{where}.share")
        capacity = _parse_counts(item.get("capacity"), f"{where}.capacity", instance_types, required=True)
        if not capacity:
            raise InputError("names no instance type", field=f"{where}.capacity")
        for type_name in capacity:
            earlier = setters.setdefault((time, share, type_name), i)
            if earlier != i:
                target = "the pool" if share is None else f"share {share}"
                raise InputError(
                    f"changes[{earlier}] already sets {type_name} of {target} at {time:g} s: "
                    "two changes cannot set one target and type at one instant",
                    field=f"{where}.capacity.{type_name}",
                )
        changes.append(Change(time=time, capacity=capacity, share=share))
    # Stable: changes at one time keep the order they were written in (a later one wins).
    return tuple(sorted(changes, key=lambda c: c.time))


def _validate_changes(policy: Policy) -> None:
    """Section 9: every change names a known share and type, and section 1 holds at every instant
    of the calendar (share quotas of a type add up to at most the pool's capacity then)."""
    names = {s.name for s in policy.shares}
    capacity = dict(policy.capacity)
    quotas = {s.name: dict(s.capacity) for s in policy.shares}
    cohort_quota = {t: sum(c.capacity.get(t, 0) for c in policy.cohorts) for t in policy.instance_types}
    # The change that last set each (share or pool, type): the one an error names.
    setter: dict[tuple[str | None, str], int] = {}
    changes = policy.changes
    i = 0
    while i < len(changes):
        time = changes[i].time
        touched: set[str] = set()
        while i < len(changes) and changes[i].time == time:
            change = changes[i]
            if change.share is not None and change.share not in names:
                raise InputError(f"unknown share {change.share!r}", field=f"changes[{i}].share")
            target = capacity if change.share is None else quotas[change.share]
            for type_name, count in change.capacity.items():
                target[type_name] = count
                setter[(change.share, type_name)] = i
                touched.add(type_name)
            i += 1
        for type_name in sorted(touched):
            # Section 13: cohorts' own quotas claim the pool too (the calendar changes only shares').
            total = sum(q.get(type_name, 0) for q in quotas.values()) + cohort_quota.get(type_name, 0)
            pool = capacity.get(type_name, 0)
            if total > pool:
                culprits = [setter[k] for k in setter if k[1] == type_name]
                index = max(culprits)
                raise InputError(
                    f"at {time:g} s share quotas of {type_name} add up to {total}, "
                    f"more than the pool's {pool}",
                    field=f"changes[{index}].capacity.{type_name}",
                )


def _parse_limit(raw: Any, where: str, instance_types: Mapping[str, InstanceType]) -> dict[str, int] | None:
    """A per-type limit; a bare number applies to every instance type."""
    if raw is None:
        return None
    if isinstance(raw, (int, float)) and not isinstance(raw, bool):
        count = _parse_count(raw, where)
        return dict.fromkeys(instance_types, count)
    return _parse_counts(raw, where, instance_types)


def _parse_counts(
    raw: Any, where: str, instance_types: Mapping[str, InstanceType], required: bool = False
) -> dict[str, int]:
    if raw is None and not required:
        return {}
    if not isinstance(raw, Mapping):
        raise InputError("must be an object of instance type -> count", field=where)
    counts = {}
    for type_name, value in raw.items():
        if type_name not in instance_types:
            raise InputError(f"unknown instance type {type_name!r}", field=f"{where}.{type_name}")
        counts[type_name] = _parse_count(value, f"{where}.{type_name}")
    return counts


def _parse_count(value: Any, where: str) -> int:
    return parse_instance_count(value, where)


def parse_instance_count(value: Any, where: str) -> int:
    """A whole number of instances from 0 to MAX_INSTANCES (pool capacity, quotas, limits)."""
    number = _parse_number(value, where, minimum=0, maximum=MAX_INSTANCES)
    if number != int(number):
        raise InputError(f"{value!r} is not a whole number of instances", field=where)
    return int(number)


def parse_fair_weight(value: Any, where: str) -> float:
    """A Kueue fairSharing weight: 0, or from MIN_FAIR_WEIGHT to MAX_FAIR_WEIGHT. Not a boolean
    (JSON ``true`` is not 1) and not -0 (a sign no weight has)."""
    if isinstance(value, bool):
        raise InputError(f"{str(value).lower()} is not a number", field=where)
    weight = _parse_number(value, where, minimum=0, maximum=MAX_FAIR_WEIGHT)
    if weight == 0 and str(value).strip().startswith("-"):  # -0.0, "-0": the sign is lost past here
        raise InputError("-0 is not a weight: give 0 (never favoured) or a positive number", field=where)
    if 0 < weight < MIN_FAIR_WEIGHT:
        raise InputError(
            f"{weight:g} is below the smallest positive weight {MIN_FAIR_WEIGHT:g} (Kueue's 1m): "
            "give 0 or at least that",
            field=where,
        )
    return weight


def parse_bounded_number(value: Any, where: str, minimum: float, maximum: float) -> float:
    """A finite number within [minimum, maximum] (GPUs per instance, prices, start-up seconds)."""
    return _parse_number(value, where, minimum=minimum, maximum=maximum)


# Characters that end a line or reorder text where a name is shown: refused in every name so that a
# name can never start a new line of a script, a YAML document or a log, nor hide what follows it.
_NAME_BREAKERS = {"Cc", "Cs", "Zl", "Zp"}
_BIDI_CONTROLS = set("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f")
_CONTROL_NAMES = {"\n": "line feed", "\r": "carriage return", "\t": "tab", "\x00": "NUL", "\x1b": "escape"}


def check_name(value: Any, where: str, max_length: int = MAX_NAME_LENGTH) -> str:
    """The one rule for names (policies, shares, pools, instance types, studies): one line of printable
    text, 1 to MAX_NAME_LENGTH characters, not blank. Returns the name; raises InputError saying which
    character is refused and where."""
    if not isinstance(value, str):
        raise InputError(f"{value!r} is not a name (a string)", field=where)
    if not value.strip():
        raise InputError("a name cannot be empty", field=where)
    if len(value) > max_length:
        raise InputError(f"a name has at most {max_length} characters, this one {len(value)}", field=where)
    for position, char in enumerate(value, 1):
        if unicodedata.category(char) in _NAME_BREAKERS or char in _BIDI_CONTROLS:
            label = _CONTROL_NAMES.get(char) or unicodedata.name(char, "control character")
            raise InputError(
                f"character {position} is U+{ord(char):04X} ({label.lower()}): names cannot hold control "
                "characters (line breaks, tabs, escapes, text-direction marks)",
                field=where,
            )
    return value


def _parse_number(
    value: Any,
    where: str,
    minimum: float | None = None,
    strictly_positive: bool = False,
    maximum: float | None = None,
) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        try:
            value = float(str(value).strip())
        except ValueError:
            raise InputError(f"{value!r} is not a number", field=where) from None
    if not math.isfinite(value):
        raise InputError(f"{value!r} is not a finite number", field=where)
    if minimum is not None and value < minimum:
        raise InputError(f"{value:g} is below the minimum {minimum:g}", field=where)
    if strictly_positive and value <= 0:
        raise InputError(f"{value:g} must be positive", field=where)
    if maximum is not None and value > maximum:
        limit = f"{int(maximum):,}" if float(maximum).is_integer() else f"{maximum:,g}"
        raise InputError(f"{value:g} is above the maximum {limit}", field=where)
    return int(value) if float(value).is_integer() else float(value)


def _reject_unknown_settings(
    raw: Mapping[str, Any], known: Collection[str], where: str, prefix: str = ""
) -> None:
    """An InputError naming the first key of ``raw`` (an object at ``where``) that is not one of
    ``known``: a misspelt setting is refused rather than silently left at its default."""
    for key in raw:
        if key not in known:
            raise InputError(f"{prefix}unknown setting {key!r}", field=f"{where}.{key}")


def parse_enum(enum: type[EnumT], value: Any, where: str) -> EnumT:
    """``value`` as a member of ``enum``, or an InputError at ``where`` listing the values it may
    take (every setting of a policy, a trace mapping or a sizing that names one of a few choices)."""
    try:
        return enum(value)
    except ValueError:
        allowed = ", ".join(member.value for member in enum)
        raise InputError(f"{value!r} is not one of {allowed}", field=where) from None
