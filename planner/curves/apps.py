from django.apps import AppConfig


class CurvesConfig(AppConfig):
    name = "planner.curves"
    label = "curves"
    verbose_name = "Capacity curves and what a policy is worth"
