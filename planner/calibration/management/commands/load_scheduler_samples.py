"""``manage.py load_scheduler_samples [--scheduler aws-batch|kueue]``: the committed AWS Batch and Kueue
sample pairs imported (policy, history) and calibrated in-process. Safe to run again."""

from django.core.management.base import BaseCommand

from planner.calibration.scheduler_samples import PAIRS, load_scheduler_sample


class Command(BaseCommand):
    help = "Load the Bring-your-scheduler samples: AWS Batch and Kueue configuration + history, calibrated."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--scheduler", choices=sorted(PAIRS), action="append", help="default: both")

    def handle(self, *args, **options) -> None:
        for scheduler in options["scheduler"] or sorted(PAIRS):
            calibration = load_scheduler_sample(scheduler, say=self.stdout.write)
            self.stdout.write(f"{scheduler} sample calibration ready: /calibration/{calibration.pk}/")
