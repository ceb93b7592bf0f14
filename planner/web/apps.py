from django.apps import AppConfig


class WebConfig(AppConfig):
    name = "planner.web"
    label = "web"
    verbose_name = "Browser pages"

    def ready(self) -> None:
        from planner.web import palette

        palette.connect()  # the share colours are re-read when shares or traces change
