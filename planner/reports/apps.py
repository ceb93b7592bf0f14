from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "planner.reports"
    label = "reports"
    verbose_name = "Study comparison and finance reports"
