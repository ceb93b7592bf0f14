"""``manage.py load_demo``: the demo policies, traces and studies (replayed here, in-process).
Safe to run again: nothing is duplicated, unfinished demo runs are completed."""

from django.core.management import call_command
from django.core.management.base import BaseCommand

from planner.demo.loader import DemoLoader


class Command(BaseCommand):
    help = "Load the demo: AWS example, synthetic teams and ITP 2021, each with a study already run."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--skip-itp", action="store_true", help="leave out the real ITP trace (69k jobs)")

    def handle(self, *args, skip_itp: bool, **options) -> None:
        studies = DemoLoader(say=self.stdout.write).load(itp=not skip_itp)
        if not skip_itp:  # with the real traces: openb's worked calibration (planner.calibration)
            call_command("load_demo_calibration", stdout=self.stdout)
        self.stdout.write(f"demo ready: {len(studies)} studies")
