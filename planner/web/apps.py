from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "planner.web"
    label = "web"
    verbose_name = "Browser pages"
