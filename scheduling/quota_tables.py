"""Policies built from real per-team quota tables (Helios GPUs per VC per day, Venus and Philly nodes
per VC) and from the ITP clusters' assumed sizes: one share per team, one strategy for all of them
or one per share, validated as SEMANTICS.md section 7 policy JSON.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from scheduling.errors import InputError
from scheduling.model import Policy, Strategy
from scheduling.traces.mapping import CsvTable, text_stream

DEFAULT_GPUS_PER_NODE = 8
GPU_TYPE = "gpu"

# The ITP trace publishes no cluster sizes (see /work/shared/data/README.md).
ITP_CLUSTER_GPUS = {
    "cluster01": 64,
    "cluster02": 112,
    "cluster03": 176,
    "cluster04": 616,
    "cluster05": 16,
    "cluster06": 112,
    "cluster07": 320,
    "cluster08": 88,
    "cluster09": 40,
    "cluster10": 16,
}
ITP_ASSUMPTION = (
    "The ITP trace publishes no cluster sizes. Assumed: GPUs per cluster = "
    "8 x ceil(max(largest job / 8, mean GPU demand / (8 x 0.8))), about 80% average load: "
    "cluster01 64, cluster02 112, cluster03 176, cluster04 616, cluster05 16, cluster06 112, "
    "cluster07 320, cluster08 88, cluster09 40, cluster10 16 (1,560 GPUs in one pool)."
)
NODES_ASSUMPTION = "Nodes are counted as {gpus_per_node} GPUs each (the tables give nodes, not GPUs)."

StrategyChoice = str | Strategy | Mapping[str, "str | Strategy"]


def gpus_per_vc_on_day(source: Any, day: str | None = None) -> tuple[str, dict[str, int]]:
    """``(day, {vc: GPUs})`` from a ``cluster_gpu_number.csv`` table (``date``, one column per VC,
    ``total``); ``day`` (``2020-09-01``) defaults to the last one. The ``total`` column, when
    present, must equal the sum of the VCs."""
    with text_stream(source) as lines:
        table = CsvTable(lines)
        table.require("date")
        vcs = [name for name in table.columns if name and name not in ("date", "total")]
        if not vcs:
            raise InputError("the table has no VC columns", field="date")
        chosen: tuple[int, list[str]] | None = None
        days = []
        for row, cells in table.rows():
            date = cells[table.index["date"]].strip()
            days.append(date)
            if day is None or date == day:
                chosen = (row, cells)
                if day is not None:
                    break
    if chosen is None:
        shown = f"{days[0]} to {days[-1]}" if days else "none"
        raise InputError(f"{day!r} is not a day of the table (it has {shown})", field="day")
    row, cells = chosen
    quotas = {vc: _whole(cells[table.index[vc]], row, vc) for vc in vcs}
    if "total" in table.index:
        total = _whole(cells[table.index["total"]], row, "total")
        if total != sum(quotas.values()):
            message = f"{total} is not the sum of the VCs ({sum(quotas.values())})"
            raise InputError(message, row=row, field="total")
    return cells[table.index["date"]].strip(), quotas


def gpus_per_vc_from_nodes(source: Any, gpus_per_node: int = DEFAULT_GPUS_PER_NODE) -> dict[str, int]:
    """``{vc: GPUs}`` from a two-column nodes-per-VC table (``vc,node num`` or ``,num``)."""
    if isinstance(gpus_per_node, bool) or not isinstance(gpus_per_node, int) or gpus_per_node < 1:
        raise InputError(f"{gpus_per_node!r} is not a whole number of 1 or more", field="gpus_per_node")
    quotas: dict[str, int] = {}
    with text_stream(source) as lines:
        table = CsvTable(lines)
        _require_nodes_header(table.columns)
        nodes_field = table.columns[1] or "nodes"
        for row, cells in table.rows():
            vc = cells[0].strip()
            if not vc:
                raise InputError("is empty: every row names a VC", row=row, field=table.columns[0] or "vc")
            if vc in quotas:
                raise InputError(f"{vc!r} is listed twice", row=row, field=table.columns[0] or "vc")
            quotas[vc] = _whole(cells[1], row, nodes_field) * gpus_per_node
    if not quotas:
        raise InputError("the table lists no VC")
    return quotas


# Headers a nodes-per-VC table has (``vc,node num``, ``,num``): the team column, then a count.
VC_HEADERS = ("", "vc", "virtual_cluster", "virtual cluster", "team", "queue", "cluster")
COUNT_WORDS = ("num", "node", "count")


def _require_nodes_header(columns: list[str]) -> None:
    """Refuse a table that is not VC -> nodes (a trace uploaded by mistake would otherwise be read
    with its first column as teams and its second as node counts), naming the columns found."""
    found = ", ".join(repr(c) for c in columns[:8]) + (", ..." if len(columns) > 8 else "")
    expected = "two columns, a VC and its number of nodes (like 'vc,node num' or ',num')"
    if len(columns) != 2:
        raise InputError(f"expected {expected}; the file has {len(columns)}: {found}", field="header")
    team, count = (c.strip().casefold() for c in columns)
    if team not in VC_HEADERS or not any(word in count for word in COUNT_WORDS):
        raise InputError(f"expected {expected}; the file has {found}", field="header")


def policy_dict(
    quotas: Mapping[str, int],
    *,
    name: str,
    strategy: StrategyChoice = Strategy.RESERVE,
    unassigned_gpus: int = 0,
    gpus_per_instance: int = 1,
    instance_type: str = GPU_TYPE,
    hourly_price: float = 0.0,
    borrow_limit_percent: float | None = None,
    in_share_preemption: str | None = None,
    reclaim: str | None = None,
    description: str = "",
) -> dict[str, Any]:
    """A validated policy dict: one share per entry of ``quotas`` (GPUs), a pool of their sum plus
    ``unassigned_gpus``. ``strategy`` is one for all shares or ``{share: strategy}`` for each;
    ``borrow_limit_percent`` applies to the LEND_AND_BORROW shares."""
    shares = []
    for share_name, gpus in quotas.items():
        share_strategy = _strategy_for(strategy, share_name)
        share: dict[str, Any] = {
            "name": share_name,
            "capacity": {instance_type: _instances(gpus, gpus_per_instance, f"quotas.{share_name}")},
            "strategy": share_strategy.value,
        }
        if borrow_limit_percent is not None and share_strategy is Strategy.LEND_AND_BORROW:
            share["borrow_limit_percent"] = borrow_limit_percent
        if in_share_preemption is not None:
            share["in_share_preemption"] = in_share_preemption
        if reclaim is not None:
            share["reclaim"] = reclaim
        shares.append(share)
    if isinstance(strategy, Mapping):
        for share_name in strategy:
            if share_name not in quotas:
                message = f"{share_name!r} is not a share of this table"
                raise InputError(message, field=f"strategy.{share_name}")
    pool = sum(quotas.values()) + unassigned_gpus
    data = {
        "name": name,
        "description": description,
        "instance_types": {instance_type: {"gpus": gpus_per_instance, "hourly_price": hourly_price}},
        "capacity": {instance_type: _instances(pool, gpus_per_instance, "unassigned_gpus")},
        "queueing": "best_effort_fifo",
        "startup_seconds": 0,
        "shares": shares,
    }
    Policy.from_dict(data)  # the one validator: raises InputError naming the field
    return data


def helios_policy_dict(
    source: Any, *, day: str | None = None, strategy: StrategyChoice = Strategy.RESERVE, **settings: Any
) -> dict[str, Any]:
    """The Helios VCs of one day of ``helios-venus-gpus-per-vc-per-day.csv`` as shares."""
    date, quotas = gpus_per_vc_on_day(source, day)
    settings.setdefault("name", f"helios-{date}-{_strategy_label(strategy)}")
    settings.setdefault("description", f"GPUs per virtual cluster on {date} (SenseTime Helios, Venus).")
    return policy_dict(quotas, strategy=strategy, **settings)


def nodes_policy_dict(
    source: Any,
    *,
    gpus_per_node: int = DEFAULT_GPUS_PER_NODE,
    strategy: StrategyChoice = Strategy.RESERVE,
    **settings: Any,
) -> dict[str, Any]:
    """The VCs of a nodes-per-VC table (``venus-nodes-per-vc.csv``, ``philly-nodes-per-vc.csv``)
    as shares of nodes x ``gpus_per_node`` GPUs (Philly also had 2- and 4-GPU machines: the
    default 8 is an assumption the description states)."""
    quotas = gpus_per_vc_from_nodes(source, gpus_per_node)
    settings.setdefault("name", f"nodes-per-vc-{_strategy_label(strategy)}")
    settings.setdefault("description", NODES_ASSUMPTION.format(gpus_per_node=gpus_per_node))
    return policy_dict(quotas, strategy=strategy, **settings)


def itp_policy_dict(strategy: StrategyChoice = Strategy.RESERVE, **settings: Any) -> dict[str, Any]:
    """The ten ITP clusters as shares of one 1,560-GPU pool (ITP_ASSUMPTION), type ``gpu``."""
    settings.setdefault("name", f"itp-2021-{_strategy_label(strategy)}")
    settings.setdefault("description", ITP_ASSUMPTION)
    return policy_dict(ITP_CLUSTER_GPUS, strategy=strategy, **settings)


def _strategy_for(strategy: StrategyChoice, share_name: str) -> Strategy:
    if isinstance(strategy, Mapping):
        if share_name not in strategy:
            raise InputError(f"no strategy given for share {share_name!r}", field=f"strategy.{share_name}")
        return _strategy(strategy[share_name], f"strategy.{share_name}")
    return _strategy(strategy, "strategy")


def _strategy(value: Any, where: str) -> Strategy:
    try:
        return Strategy(value.value if isinstance(value, Strategy) else str(value).upper())
    except ValueError:
        choices = ", ".join(member.value for member in Strategy)
        raise InputError(f"{value!r} is not one of {choices}", field=where) from None


def _strategy_label(strategy: StrategyChoice) -> str:
    if isinstance(strategy, Mapping):
        return "mixed"
    return _strategy(strategy, "strategy").value.lower().replace("_", "-")


def _instances(gpus: int, gpus_per_instance: int, where: str) -> int:
    if gpus % gpus_per_instance:
        message = f"{gpus} GPUs is not a whole number of {gpus_per_instance}-GPU instances"
        raise InputError(message, field=where)
    return gpus // gpus_per_instance


def _whole(cell: str, row: int, field: str) -> int:
    text = cell.strip()
    try:
        number = float(text)
    except ValueError:
        raise InputError(f"{text!r} is not a whole number", row=row, field=field) from None
    if number < 0 or not number.is_integer():
        raise InputError(f"{text!r} is not a whole number of 0 or more", row=row, field=field)
    return int(number)
