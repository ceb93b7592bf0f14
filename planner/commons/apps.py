from django.apps import AppConfig


class CommonsConfig(AppConfig):
    name = "planner.commons"
    label = "commons"
    verbose_name = "Commons games"
