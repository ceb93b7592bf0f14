from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "planner.studies"
    label = "studies"
    verbose_name = "Studies and runs"
