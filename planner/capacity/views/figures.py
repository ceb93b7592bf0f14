"""The policy page's charts: quota per share (and cohort) in GPUs, and the calendar's steps."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db.models import Max, Min

from planner.capacity.models import Cohort, InstanceType, Policy, Share
from planner.web import charts
from scheduling.capacity_plans import capacity_steps

# The step chart draws its first instants (a calendar of 10,000 changes took 30 s to render whole).
CALENDAR_CHART_INSTANTS = 2_000


def quota_figure(
    shares: list[Share], types: list[InstanceType], capacity: dict[str, int], cohorts: list[Cohort] = ()
) -> dict:
    """Quota per share in GPUs (instances x GPUs per instance), then each cohort's own quota
    (section 13: a cohort's to lend within its subtree first), then the unassigned rest."""
    gpus = {t.name: t.gpus for t in types}

    def in_gpus(quota: dict[str, int]) -> float:
        return sum(count * gpus.get(t, 1) for t, count in quota.items())

    values = {share.name: in_gpus(share.spec().capacity) for share in shares}
    pool_gpus = in_gpus(capacity)
    colors = charts.share_colors(list(values))
    traces = [
        charts.bar(
            [value],
            [name],
            name=name,
            color=colors[name],
            unit="GPUs",
            text=[charts.gpus_text(value)],
            orientation="h",
        )
        for name, value in values.items()
    ]
    held = sum(values.values())
    for cohort in cohorts:
        own = in_gpus(cohort.spec().capacity)
        held += own
        if own > 0:
            label = f"cohort {cohort.name}"
            traces.append(
                charts.bar(
                    [own],
                    [label],
                    name=f"{label} (its own quota)",
                    color="#8a9bb0",
                    unit="GPUs",
                    text=[charts.gpus_text(own)],
                    orientation="h",
                )  # fmt: skip
            )
    unassigned = pool_gpus - held
    if unassigned > 0:
        traces.append(
            charts.bar(
                [unassigned],
                ["unassigned"],
                name="unassigned (lent to anyone)",
                color="#bbbbbb",
                unit="GPUs",
                text=[charts.gpus_text(unassigned)],
                pattern=charts.state_pattern("unassigned"),
                orientation="h",
            )
        )
    fig = charts.figure(
        traces,
        title=f"Quota per share (pool: {charts.gpus_text(pool_gpus)})",
        x_title="quota (GPUs)",
        y_title="",
        height=max(160, 60 + 34 * len(traces)),
        show_legend=False,
    )
    fig["layout"]["yaxis"]["autorange"] = "reversed"
    fig["layout"]["yaxis"].pop("tickformat")
    return fig


def calendar_figure(policy: Policy, calendar_count: int) -> dict:
    """The pool's capacity and each share's quota in GPUs as step lines over the calendar (from an
    hour before its first change to an hour after its last, so that both ends show; a calendar of
    more than CALENDAR_CHART_INSTANTS instants is drawn up to that instant and the title says so)."""
    empty = charts.figure([], title="Capacity and quotas over time", x_title="", y_title="GPUs")
    if not calendar_count:
        return empty
    try:
        engine = policy.engine_policy()
    except ValidationError:
        return empty
    bounds = policy.changes.aggregate(first=Min("time"), last=Max("time"))
    first, last = bounds["first"], bounds["last"]
    title = "Capacity and quotas over time (GPUs)"
    instants = sorted({change.time for change in engine.changes})
    if len(instants) > CALENDAR_CHART_INSTANTS:
        last = instants[CALENDAR_CHART_INSTANTS - 1]
        title += f": the first {CALENDAR_CHART_INSTANTS:,} of {len(instants):,} instants"
    margin = max(3600.0, (last - first) * 0.1)
    start, end = max(0.0, first - margin), last + margin
    steps = capacity_steps(engine, start, end)
    return charts.capacity_steps_figure(steps, title=title, epoch=first >= 1e9)
