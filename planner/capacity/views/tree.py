"""The shares table as the tree of cohorts reads (SEMANTICS.md section 13): the root's shares, then
each cohort followed by its shares and its own cohorts, each row with its level for the indent."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from planner.capacity.models import Cohort, CohortSpec, Share, ShareSpec

UNLIMITED = "unlimited"


def limit_text(values: dict | None, type_names: Sequence[str], empty: str) -> str:
    if not values:
        return empty
    return ", ".join(f"{values[t]:,} {t}" for t in type_names if t in values)


def share_borrow_text(spec: ShareSpec, type_names: Sequence[str]) -> str:
    if spec.strategy != "LEND_AND_BORROW":
        return "—"
    if spec.borrowing_limit:
        return "at most " + limit_text(spec.borrowing_limit, type_names, "")
    if spec.borrow_limit_percent is not None and spec.borrow_limit_percent >= 0:
        return f"{spec.borrow_limit_percent:,g} % of quota"
    return UNLIMITED


def share_lend_text(spec: ShareSpec, type_names: Sequence[str]) -> str:
    return "—" if spec.strategy == "RESERVE" else limit_text(spec.lending_limit, type_names, "all idle quota")


def flavor_text(spec: ShareSpec) -> str:
    """A share's section 12 settings in a few words: its order, and how its scan stops."""
    order = " → ".join(spec.flavor_order) if spec.flavor_order else "the policy's order"
    fungibility = spec.flavor_fungibility or {}
    borrow = fungibility.get("when_can_borrow", "MayStopSearch")
    preempt = fungibility.get("when_can_preempt", "TryNextFlavor")
    text = f"{order}; could borrow: {borrow}, could preempt: {preempt}"
    if fungibility.get("preference") == "PreemptionOverBorrowing":
        text += "; prefers preempting"
    return text


@dataclass
class TreeRow:
    """One row of the table: a cohort or a share, at ``level`` (0: directly under the root)."""

    kind: str  # "cohort" or "share"
    level: int
    name: str
    pk: int
    quotas: list[int]
    borrow: str
    lend: str
    fair_weight: float
    share: Share | None = None
    spec: ShareSpec | CohortSpec | None = None
    flavors: str = ""
    extra: dict = field(default_factory=dict)


def _node_row(
    kind: str,
    node: Share | Cohort,
    spec: ShareSpec | CohortSpec,
    level: int,
    type_names: Sequence[str],
    **own,
) -> TreeRow:
    """What a share's and a cohort's rows both show (the node, its own quotas, its fair weight),
    with ``own``: the kind's borrow and lend texts and the rest."""
    return TreeRow(
        kind=kind,
        level=level,
        name=node.name,
        pk=node.pk,
        quotas=[spec.capacity.get(t, 0) for t in type_names],
        fair_weight=spec.fair_weight,
        spec=spec,
        **own,
    )


def share_row(share: Share, spec: ShareSpec, level: int, type_names: Sequence[str]) -> TreeRow:
    return _node_row(
        "share",
        share,
        spec,
        level,
        type_names,
        borrow=share_borrow_text(spec, type_names),
        lend=share_lend_text(spec, type_names),
        share=share,
        flavors=flavor_text(spec),
    )


def cohort_row(cohort: Cohort, spec: CohortSpec, level: int, type_names: Sequence[str]) -> TreeRow:
    borrowing = limit_text(spec.borrowing_limit, type_names, "")
    lending = limit_text(spec.lending_limit, type_names, "")
    return _node_row(
        "cohort",
        cohort,
        spec,
        level,
        type_names,
        borrow=f"at most {borrowing}" if borrowing else UNLIMITED,
        lend=f"at most {lending}" if lending else "all",
    )


def tree_rows(shares: Iterable[Share], cohorts: Iterable[Cohort], type_names: Sequence[str]) -> list[TreeRow]:
    """Depth first from the root: at each node its shares (in their order), then its cohorts (in
    theirs), each cohort's subtree under it. A cohort no walk reaches (a stored tree the engine now
    refuses) is listed last, at the root's level, so that nothing is hidden."""
    share_list, cohort_list = list(shares), list(cohorts)
    shares_in: dict[int | None, list[Share]] = {}
    for share in share_list:
        shares_in.setdefault(share.cohort_id, []).append(share)
    cohorts_in: dict[int | None, list[Cohort]] = {}
    for cohort in cohort_list:
        cohorts_in.setdefault(cohort.parent_id, []).append(cohort)
    rows: list[TreeRow] = []
    seen: set[int] = set()

    def walk(node: int | None, level: int) -> None:
        for share in shares_in.get(node, []):
            rows.append(share_row(share, share.spec(), level, type_names))
        for cohort in cohorts_in.get(node, []):
            if cohort.pk in seen:
                continue
            seen.add(cohort.pk)
            rows.append(cohort_row(cohort, cohort.spec(), level, type_names))
            walk(cohort.pk, level + 1)

    walk(None, 0)
    for cohort in cohort_list:
        if cohort.pk not in seen:
            seen.add(cohort.pk)
            rows.append(cohort_row(cohort, cohort.spec(), 0, type_names))
            walk(cohort.pk, 1)
    return rows
