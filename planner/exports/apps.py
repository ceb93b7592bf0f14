from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "planner.exports"
    label = "exports"
    verbose_name = "Export to AWS Batch and Kueue"
