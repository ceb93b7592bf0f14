from django.apps import AppConfig


class CalibrationConfig(AppConfig):
    name = "planner.calibration"
    label = "calibration"
    verbose_name = "Calibration"
