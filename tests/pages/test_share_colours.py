"""One colour per share everywhere (planner/web/palette.py): the study page's swatches and every
Plotly figure on it, the job finder's rows, the policy and trace pages. cluster02, 04 and 06 hash
to one colour: they used to share it on the picker and the job finder, and the charts used others."""

import io

import pytest

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.studies.launch import StudyLaunch, launch_study
from planner.traces.models import Trace, read_upload
from planner.web.charts import PALETTE
from tests.pages.conftest import GPU_TYPE, look_at

pytestmark = pytest.mark.django_db(transaction=True)

SHARES = [f"cluster{i:02d}" for i in range(1, 7)]


@pytest.fixture
def study(roles, eager_celery):
    gpu = InstanceType.objects.create(name=GPU_TYPE, gpus=1, hourly_price=1.5)
    pool = Pool.objects.create(name="six")
    pool.set_capacity({gpu.name: 6})
    policy = Policy.objects.create(name="six-teams", pool=pool)
    policy.replace_shares(
        [ShareSpec(name, "LEND_AND_BORROW", None, "never", "any", {GPU_TYPE: 1}) for name in SHARES]
    )
    rows = ["job_id,submit_time,share,priority,instance_count,duration"]
    for index, name in enumerate(SHARES):
        rows += [f"{name}-a,{index * 60},{name},1,2,3600", f"{name}-b,{index * 60 + 30},{name},1,1,1800"]
    columns = read_upload(io.BytesIO("\n".join(rows).encode() + b"\n"), format="planner-csv")
    trace = Trace.store(columns, name="six-week", format="planner-csv")
    return launch_study(StudyLaunch(name="six", trace=trace, policies=[policy]))


SWATCHES = """() => Array.from(document.querySelectorAll('.swatch')).map(s => [
    (s.parentElement.textContent || '').trim(), getComputedStyle(s).getPropertyValue('--swatch').trim()])"""

# Every figure's series named for a share (its legend group, or "share: state"), with its colour.
# The study page's folded charts come from their section's URL (data-plotly-url): fetched here too.
FIGURE_COLOURS = """async () => {
    const figures = [];
    for (const el of document.querySelectorAll('[data-plotly]')) {
        const inline = document.getElementById(el.dataset.plotly);
        if (inline) { figures.push(JSON.parse(inline.textContent)); continue; }
        if (!el.dataset.plotlyUrl) continue;
        const body = await (await fetch(el.dataset.plotlyUrl)).json();
        const chart = body.charts[el.id];
        if (chart) figures.push(chart.figure);
    }
    return figures.flatMap(figure => figure.data.map(t => [
        t.legendgroup || (t.name || '').split(':')[0].split(' (')[0],
        (t.line && t.line.color) || (t.marker && typeof t.marker.color === 'string' && t.marker.color) || ''
    ]));
}"""


def _by_share(pairs, shares):
    colours: dict[str, set[str]] = {}
    for label, colour in pairs:
        name = next((s for s in shares if label.startswith(s)), None)
        if name and colour:
            colours.setdefault(name, set()).add(colour.upper())
    return colours


def test_every_page_gives_a_share_one_colour_and_the_shares_different_ones(page_as, study):
    page = page_as("viewer")
    page.goto(f"/studies/{study.pk}/")
    swatches = _by_share(page.evaluate(SWATCHES), SHARES)
    figures = _by_share(page.evaluate(FIGURE_COLOURS), SHARES)
    look_at(page, "share-colours-study")
    page.goto(f"/studies/{study.pk}/jobs/")
    jobs = _by_share(page.evaluate(SWATCHES), SHARES)
    page.goto(f"/policies/{study.baseline_id}/")
    policy = _by_share(page.evaluate(SWATCHES), SHARES)
    page.goto(f"/traces/{study.trace_id}/")
    trace = _by_share(page.evaluate(SWATCHES), SHARES)

    assert set(jobs) == set(policy) == set(trace) == set(SHARES)
    assert set(figures) == set(SHARES)
    colour = {}
    for name in SHARES:
        seen = jobs[name] | policy[name] | trace[name] | figures[name] | swatches.get(name, set())
        assert len(seen) == 1, f"{name} has several colours: {seen}"
        colour[name] = seen.pop()
    assert len(set(colour.values())) == len(SHARES), colour
    assert set(colour.values()) <= {c.upper() for c in PALETTE}


def test_the_api_and_pages_agree_with_the_figure_json(client_as, study):
    page = client_as("viewer").get(f"/studies/{study.pk}/jobs/").content.decode()
    # the job rows' swatches use the same function as the figures (one source, not two)
    from planner.web.palette import share_colors

    colours = share_colors(SHARES)
    for name in SHARES:
        assert f"--swatch: {colours[name]}" in page
    assert len(set(colours.values())) == len(SHARES)
