"""The chart helpers every page uses: share colours that are stable and distinct within a set,
policy line styles, and figure defaults (titles, units, thousands separators)."""

import pytest

from planner.web import charts, palette


@pytest.mark.django_db
def test_a_share_gets_the_same_colour_whatever_else_is_drawn():
    assert charts.share_color("research") == charts.share_color("research")
    assert charts.share_color("research") in charts.PALETTE
    one = charts.share_colors(["research", "vision", "nlp"])
    other = charts.share_colors(["nlp", "research", "vision"])
    assert one == other  # the order they come in does not matter


@pytest.mark.django_db
def test_shares_of_one_set_get_different_colours_while_the_palette_lasts():
    names = [f"cluster{i:02d}" for i in range(1, len(charts.PALETTE) + 1)]
    colors = charts.share_colors(names)
    assert len(set(colors.values())) == len(charts.PALETTE)
    many = charts.share_colors(names + ["one-more"])
    assert set(many.values()) == set(charts.PALETTE)  # then colours repeat


def test_the_site_palette_colours_names_drawn_together_apart_and_keeps_older_ones():
    ten = tuple(f"cluster{i:02d}" for i in range(1, 11))
    # By their hash alone cluster02, 04 and 06 share one colour (the issue's #332288).
    assert len({charts.PALETTE[charts.name_slot(n)] for n in ("cluster02", "cluster04", "cluster06")}) == 1
    colors = palette.assign((ten,))
    assert len(set(colors.values())) == 10
    # A later group (a new policy) with new names and two of the old ones: the old keep theirs.
    later = palette.assign((ten, ("cluster01", "cluster02", "zeta")))
    assert {name: later[name] for name in ten} == colors
    assert later["zeta"] not in {colors["cluster01"], colors["cluster02"]}
    # Names never drawn together may share a colour: 'a' and 'b' both prefer the same slot.
    a, b = "a", next(n for n in (f"b{i}" for i in range(100)) if charts.name_slot(n) == charts.name_slot("a"))
    apart = palette.assign(((a,), (b,)))
    assert apart[a] == apart[b]
    together = palette.assign(((a, b),))
    assert together[a] != together[b]


def test_policies_get_distinct_dashes_and_markers():
    assert len({charts.policy_dash(i) for i in range(4)}) == 4
    assert len({charts.policy_marker(i) for i in range(4)}) == 4
    assert charts.policy_dash(0) == charts.policy_dash(len(charts.DASHES))


def test_figures_state_their_subject_and_units():
    fig = charts.figure(
        [charts.bar(["a", "b"], [1200, 3400], name="GPU-hours", color="#4477AA", unit="GPU-hours")],
        title="Idle capacity by share",
        x_title="share",
        y_title="GPU-hours",
    )
    layout = fig["layout"]
    assert layout["title"]["text"] == "Idle capacity by share"
    assert layout["yaxis"]["title"]["text"] == "GPU-hours"
    assert layout["separators"] == ".," and layout["yaxis"]["tickformat"] == ",~r"
    assert fig["data"][0]["hovertemplate"] == "GPU-hours<br>%{x}: %{y:,.4~r} GPU-hours<extra></extra>"
    assert not charts.is_empty(fig)
    assert charts.is_empty(charts.figure([], title="t", x_title="x", y_title="y"))


def test_time_axes_are_dates_for_real_times_and_hours_otherwise():
    dates, title = charts.time_axis([1711843200.0, 1711846800.0], epoch_times=True)
    assert dates == ["2024-03-31 00:00:00", "2024-03-31 01:00:00"] and title == "time (UTC)"
    hours, title = charts.time_axis([100.0, 3700.0, 7300.0], epoch_times=False)
    assert hours == [0.0, 1.0, 2.0] and title == "hours since the trace's start"
    assert charts.gpus_text(1) == "1 GPU" and charts.gpus_text(1560) == "1,560 GPUs"


def test_a_request_that_forgets_the_colours_meanwhile_leaves_none_to_another(monkeypatch):
    """Every request forgets the site's groups as it begins, without the lock. A thread that had just
    read them returned what the other had forgotten: None, and the job finder answered 500 under the
    load test (50 users)."""
    import time

    real = time.monotonic

    def another_request_begins() -> float:  # called between storing the groups and returning them
        palette.forget()
        return real()

    palette.forget()
    monkeypatch.setattr(palette, "_read_groups", lambda: (("a", "b"),))
    monkeypatch.setattr(time, "monotonic", another_request_begins)
    assert palette.site_groups() == (("a", "b"),)
    assert palette.share_color("a") != palette.share_color("b")
    monkeypatch.setattr(time, "monotonic", real)
    palette.forget()
