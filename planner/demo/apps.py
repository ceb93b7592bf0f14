from django.apps import AppConfig


class DemoConfig(AppConfig):
    name = "planner.demo"
    label = "demo"
    verbose_name = "Demo data"
