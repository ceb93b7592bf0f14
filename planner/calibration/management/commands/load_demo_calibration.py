"""``manage.py load_demo_calibration``: the openb trace calibrated under the policy assumed in force
(replayed here, in-process). Safe to run again: nothing is duplicated."""

from django.core.management.base import BaseCommand

from planner.calibration.demo import load_openb_calibration


class Command(BaseCommand):
    help = "Load the demo calibration: Alibaba openb 2023 pods, recorded against replayed waits."

    def handle(self, *args, **options) -> None:
        calibration = load_openb_calibration(say=self.stdout.write)
        if calibration is not None:
            self.stdout.write(f"demo calibration ready: /calibration/{calibration.pk}/")
