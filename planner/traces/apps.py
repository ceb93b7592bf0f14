from django.apps import AppConfig


class TracesConfig(AppConfig):
    name = "planner.traces"
    label = "traces"
    verbose_name = "Traces"
