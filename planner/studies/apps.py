from django.apps import AppConfig


class StudiesConfig(AppConfig):
    name = "planner.studies"
    label = "studies"
    verbose_name = "Studies and runs"

    def ready(self) -> None:
        # The job finder's indexes go with their run and trace (post_delete receivers).
        from planner.studies import jobs  # noqa: F401
