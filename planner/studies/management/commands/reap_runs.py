"""``manage.py reap_runs``: re-enqueue (or fail) runs and calibrations whose worker stopped
sending heartbeats."""

from django.core.management.base import BaseCommand

from planner.calibration.launch import reap_stale_calibrations
from planner.studies.reaper import reap_stale_runs


class Command(BaseCommand):
    help = (
        "Re-enqueue running runs and calibrations whose heartbeat is stale, "
        "or fail them after their last attempt."
    )

    def handle(self, *args, **options) -> None:
        outcome = reap_stale_runs()
        self.stdout.write(
            f"re-enqueued {len(outcome['requeued'])} run(s), failed {len(outcome['failed'])} run(s)"
        )
        calibrations = reap_stale_calibrations()
        self.stdout.write(
            f"re-enqueued {len(calibrations['requeued'])} calibration(s), "
            f"failed {len(calibrations['failed'])} calibration(s)"
        )
