"""The demo's worked calibration: the openb pods under the policy assumed in force on the cluster,
loaded once (a second load duplicates nothing), with its figures per QoS class."""

from io import StringIO

import pytest
from django.core.management import call_command

from planner.calibration.demo import OPENB_POLICY, OPENB_TRACE
from planner.calibration.models import Calibration
from planner.capacity.models import Policy, Pool
from planner.demo.loader import data_dir
from planner.traces.models import Trace

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        not (data_dir() / "alibaba-openb-2023").exists(), reason="the shared openb data is not here"
    ),
]


def test_the_openb_calibration_loads_once():
    out = StringIO()
    call_command("load_demo_calibration", stdout=out)
    call_command("load_demo_calibration", stdout=out)
    assert (Trace.objects.count(), Pool.objects.count(), Policy.objects.count()) == (1, 1, 1)
    calibration = Calibration.objects.get()
    assert calibration.status == "succeeded"
    assert calibration.trace.name == OPENB_TRACE and calibration.policy_name == OPENB_POLICY
    assert "6,212 GPUs" in calibration.note
    assert "demo calibration ready" in out.getvalue()


def test_the_openb_figures():
    call_command("load_demo_calibration", stdout=StringIO())
    metrics = Calibration.objects.get().metrics
    assert metrics["all"]["compared"] == 6203  # every pod that ran on a GPU
    shares = {block["name"]: block for block in metrics["shares"]}
    assert set(shares) == {"LS", "Burstable", "BE", "Guaranteed"}
    # The cluster is far from full in the replay, so no pod waits; most latency-sensitive pods did.
    assert shares["LS"]["p95"]["simulated"] == 0.0
    assert shares["LS"]["p95"]["recorded"] > 60
    assert shares["LS"]["ks"]["distance"] > 0.5
    assert shares["LS"]["verdict"].startswith("simulated waits are shorter")
