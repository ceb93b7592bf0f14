"""The Bring-your-scheduler samples loaded as a worked example: for AWS Batch and for Kueue, the
committed configuration export imported as a policy (on a pool of its own), the job history as a
trace, and their calibration computed here (in-process). Needs nothing outside the repository, so a
demo without ../shared still has calibrations to read. Loading twice changes nothing: everything is
looked up by name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from planner.calibration.demo import calibrate_here
from planner.calibration.launch import CalibrationLaunch, start_calibration
from planner.calibration.models import Calibration
from planner.capacity.models import Policy
from planner.exports.importing import store_imported_policy
from planner.traces.models import Trace, read_upload
from scheduling.export.configuration import read_configuration_files

SAMPLES = Path(settings.BASE_DIR) / "samples"
# scheduler -> (configuration files, history file, history format)
PAIRS = {
    "aws-batch": (["aws-batch/configuration.json"], "aws-batch/describe-service-jobs.json", "aws-batch-jobs"),
    "kueue": (
        ["kueue/configuration.yaml", "kueue/kueue-manager-config.yaml"],
        "kueue/workloads.json",
        "kueue-workloads",
    ),
}
NOTE = (
    "The {label} sample's own configuration, imported from its export (samples/{scheduler}/): the "
    "history was recorded under it, so this is the policy in force."
)
LABELS = {"aws-batch": "AWS Batch", "kueue": "Kueue"}


def load_scheduler_sample(scheduler: str, say: Callable[[str], None] = lambda line: None) -> Calibration:
    """The sample pair of ``scheduler`` ("aws-batch" or "kueue"), imported and calibrated."""
    configuration, history, fmt = PAIRS[scheduler]
    name = f"{scheduler}-sample"
    say(f"{LABELS[scheduler]} sample: configuration, history, calibration")
    policy = Policy.objects.filter(name=name).first()
    if policy is None:
        files = [(Path(path).name, (SAMPLES / path).read_bytes()) for path in configuration]
        policy = store_imported_policy(read_configuration_files(scheduler, files), pool_name=name, name=name)
        say(f"  policy {policy.name} on pool {policy.pool.name}")
    trace = Trace.objects.filter(name=f"{name}-history").first()
    if trace is None:
        trace = Trace.store(
            read_upload(SAMPLES / history, format=fmt),
            name=f"{name}-history",
            format=fmt,
            source_name=Path(history).name,
            description=f"The {LABELS[scheduler]} sample history (samples/{history}), "
            "written by samples/generate.py.",
        )
        say(f"  trace {trace.name}: {trace.job_count:,} jobs")
    calibration = Calibration.objects.filter(trace=trace, policy=policy).order_by("-id").first()
    if calibration is None:
        calibration = start_calibration(
            CalibrationLaunch(
                trace=trace,
                policy=policy,
                note=NOTE.format(label=LABELS[scheduler], scheduler=scheduler),
            ),
            enqueue=False,
        )
    calibrate_here(calibration, say, "sample")
    for block in [calibration.metrics["all"], *calibration.metrics["shares"]]:
        say(f"  {block['name']}: {block['verdict']}; {block['preemptions']['verdict']}")
    return calibration
