"""A study's runs are measured over one common window once they have all finished (SEMANTICS.md
section 5): the policy that ends its last job first is counted idle until the other's last end,
on the page, in the API and in the finance figures alike."""

import pytest

from planner.studies.models import Run
from planner.studies.window import apply_study_window, needs_window

pytestmark = pytest.mark.django_db


def test_both_runs_count_the_same_hours(admin_api, study):
    lend, reserve = Run.objects.filter(study=study).order_by("id")
    # AWS example: lending ends its last job at 220 s; all-reserve queues QS1's three jobs on its
    # one instance (p3 0-100, p1 100-200, p2 200-300) and ends at 300 s
    assert lend.metrics["summary"]["span"]["end"] == pytest.approx(220)
    assert reserve.metrics["summary"]["span"]["end"] == pytest.approx(300)
    for run in (lend, reserve):
        assert run.metrics["summary"]["horizon"] == {"start": 0.0, "end": 300.0, "seconds": 300.0}
        # 3 instances of 1 GPU x 300 s = 0.25 GPU-hours at $1.41 an hour
        assert run.metrics["pool"]["capacity_gpu_hours"] == pytest.approx(0.25)
        assert run.metrics["pool"]["capacity_usd"] == pytest.approx(0.25 * 1.41)
    # the lending run's busy time is unchanged; its idle grows by 3 instances x 80 s
    pool = lend.metrics["pool"]
    assert pool["idle_gpu_hours"] == pytest.approx(0.25 - pool["busy_gpu_hours"])
    assert lend.summary["horizon"]["end"] == 300.0
    body = admin_api.get(f"/api/studies/{study.pk}/").json()
    assert body["window"] == {"start": 0.0, "end": 300.0, "seconds": 300.0}
    assert not needs_window(list(Run.objects.filter(study=study)))


def test_a_page_read_puts_a_finished_study_on_its_window(client_for, study):
    # as if the worker that recorded the last run died before applying the window
    lend = Run.objects.filter(study=study).order_by("id").first()
    from scheduling.model import Policy
    from scheduling.window import measure_over, span_of

    own = measure_over(lend.metrics, Policy.from_dict(lend.policy_snapshot), span_of(lend.metrics))
    summary = {**lend.summary, "horizon": own["summary"]["horizon"]}
    Run.objects.filter(pk=lend.pk).update(metrics=own, summary=summary)
    assert needs_window(list(Run.objects.filter(study=study)))
    client_for("viewer").get(f"/api/studies/{study.pk}/")
    lend.refresh_from_db()
    assert lend.metrics["summary"]["horizon"]["end"] == 300.0
    assert apply_study_window(study.pk) == (0.0, 300.0)  # nothing left to change


def test_the_study_page_says_the_window(study, client):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("v", password="pw")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    html = client.get(f"/studies/{study.pk}/").content.decode()
    assert "Every figure here is measured over one window" in html
    assert "0 s to 300 s (5 min)" in html
    assert "Idle after their last job: aws-example (ends 220 s)." in html
