from django.apps import AppConfig


class AdvisorConfig(AppConfig):
    name = "planner.advisor"
    label = "advisor"
    verbose_name = "Policy advisor"
