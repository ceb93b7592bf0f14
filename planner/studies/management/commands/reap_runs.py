"""``manage.py reap_runs``: re-enqueue (or fail) runs and calibrations whose worker stopped
sending heartbeats; ``--queued`` also sends the queued runs again (the broker lost them)."""

from django.core.management.base import BaseCommand

from planner.calibration.launch import reap_stale_calibrations
from planner.curves.launch import (
    enqueue_curve_points,
    enqueue_search_points,
    queued_points,
    reap_curves,
    reap_searches,
)
from planner.forecasts.launch import enqueue_chunks, queued_chunks, reap_forecasts
from planner.studies.launch import enqueue_runs
from planner.studies.models import Run, RunStatus
from planner.studies.reaper import reap_stale_runs
from planner.traces.models import ParseStatus, Trace
from planner.traces.tasks import enqueue_parses, reap_stale_parses


class Command(BaseCommand):
    help = (
        "Re-enqueue running runs and calibrations whose heartbeat is stale, "
        "or fail them after their last attempt."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--queued",
            action="store_true",
            help="also send every queued run again: after the broker lost its messages (a Redis "
            "restarted without its data). A run already taken is not replayed twice.",
        )

    def handle(self, *args, **options) -> None:
        if options["queued"]:
            queued = list(Run.objects.filter(status=RunStatus.QUEUED).values_list("pk", flat=True))
            enqueue_runs(queued)
            self.stdout.write(f"sent {len(queued)} queued run(s) again")
            curve_points, search_points = queued_points()
            enqueue_curve_points(curve_points)
            enqueue_search_points(search_points)
            self.stdout.write(
                f"sent {len(curve_points) + len(search_points)} queued curve and search point(s) again"
            )
            chunks = queued_chunks()
            enqueue_chunks(chunks)
            self.stdout.write(f"sent {len(chunks)} queued forecast chunk(s) again")
            waiting = list(Trace.objects.filter(status=ParseStatus.QUEUED).values_list("pk", flat=True))
            enqueue_parses(waiting)
            self.stdout.write(f"sent {len(waiting)} waiting upload(s) again")
        outcome = reap_stale_runs()
        self.stdout.write(
            f"re-enqueued {len(outcome['requeued'])} run(s), failed {len(outcome['failed'])} run(s)"
        )
        parses = reap_stale_parses()
        self.stdout.write(
            f"re-enqueued {len(parses['requeued'])} upload parse(s), failed {len(parses['failed'])}"
        )
        calibrations = reap_stale_calibrations()
        self.stdout.write(
            f"re-enqueued {len(calibrations['requeued'])} calibration(s), "
            f"failed {len(calibrations['failed'])} calibration(s)"
        )
        points = [reap_curves(), reap_searches()]
        self.stdout.write(
            f"re-enqueued {sum(len(p['requeued']) for p in points)} curve and search point(s), "
            f"failed {sum(len(p['failed']) for p in points)}"
        )
        forecasts = reap_forecasts()
        self.stdout.write(
            f"re-enqueued {len(forecasts['requeued'])} forecast chunk(s), failed {len(forecasts['failed'])}"
        )
