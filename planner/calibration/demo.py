"""The demo's worked calibration: the Alibaba openb 2023 pods (real scheduled times) replayed under
the policy assumed in force on that cluster (``scheduling.calibration.OPENB_ASSUMPTION``). Loading
twice changes nothing: the trace, pool, policy and calibration are looked up by name."""

from __future__ import annotations

from collections.abc import Callable

from planner.calibration.launch import CalibrationLaunch, start_calibration
from planner.calibration.models import Calibration
from planner.calibration.quota_import import store_policy_with_pool
from planner.calibration.tasks import calibrate_trace
from planner.capacity.models import Policy
from planner.demo.loader import DemoLoader, data_dir
from planner.studies.models import RunStatus
from planner.traces.models import read_upload
from scheduling.calibration import openb_cluster_gpus, openb_policy_dict

OPENB_PODS = "alibaba-openb-2023/openb_pod_list_default.csv"
OPENB_NODES = "alibaba-openb-2023/openb_node_list_gpu_node.csv"
OPENB_TRACE = "alibaba-openb-2023"
OPENB_POLICY = "openb-in-force"


def calibrate_here(calibration: Calibration, say: Callable[[str], None], kind: str) -> None:
    """Compute ``calibration`` in this process unless it has succeeded (a failed one again from
    scratch); raises RuntimeError, naming the ``kind`` of calibration, when it fails."""
    if calibration.status == RunStatus.SUCCEEDED:
        return
    if calibration.status == RunStatus.FAILED:
        Calibration.objects.filter(pk=calibration.pk).update(status=RunStatus.QUEUED, attempts=0, error="")
    say(f"  replaying {calibration.trace.name} under {calibration.policy.name} and comparing...")
    calibrate_trace.apply(args=[calibration.pk])
    calibration.refresh_from_db()
    if calibration.status != RunStatus.SUCCEEDED:
        raise RuntimeError(f"the {kind} calibration failed: {calibration.error}")


def load_openb_calibration(say: Callable[[str], None] = lambda line: None) -> Calibration | None:
    """The openb trace, its policy in force and their calibration, computed here (in-process)."""
    pods, nodes = data_dir() / OPENB_PODS, data_dir() / OPENB_NODES
    if not pods.exists() or not nodes.exists():
        say(f"openb calibration: {pods.parent} not found, skipped")
        return None
    say("Alibaba openb 2023 (real trace): calibration")
    trace = DemoLoader(say).trace(
        OPENB_TRACE,
        lambda: read_upload(pods, format="alibaba-openb-2023"),
        format="alibaba-openb-2023",
        source_name=pods.name,
        description="Alibaba GPU cluster pods, 2023 (cluster-trace-gpu-v2023): QoS classes as shares, "
        "with the times each pod was created and scheduled.",
    )
    policy = Policy.objects.filter(name=OPENB_POLICY).first()
    if policy is None:
        policy = store_policy_with_pool(
            openb_policy_dict(trace.load_jobs(), openb_cluster_gpus(nodes), name=OPENB_POLICY)
        )
        say(f"  policy {policy.name}")
    calibration = Calibration.objects.filter(trace=trace, policy=policy).order_by("-id").first()
    if calibration is None:
        calibration = start_calibration(CalibrationLaunch(trace=trace, policy=policy), enqueue=False)
    calibrate_here(calibration, say, "demo")
    for block in [calibration.metrics["all"], *calibration.metrics["shares"]]:
        say(f"  {block['name']}: {block['verdict']}")
    return calibration
