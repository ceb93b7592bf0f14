from django.apps import AppConfig, apps
from django.db.models.signals import post_migrate


def ensure_roles(sender, using="default", **kwargs) -> None:
    """After every migrate (and every test-database flush), the role groups exist with their
    permissions, even when a flush removed what the data migration made."""
    from django.contrib.auth.management import create_permissions
    from django.contrib.auth.models import Group, Permission

    from planner.accounts.roles import PLANNER_MODELS, apply_roles

    for label in PLANNER_MODELS:
        create_permissions(apps.get_app_config(label), verbosity=0, using=using)
    apply_roles(Group, Permission)


class AccountsConfig(AppConfig):
    name = "planner.accounts"
    label = "accounts"
    verbose_name = "Accounts and roles"

    def ready(self) -> None:
        # post_migrate is sent per app with models; this app has none, so listen for the
        # studies app (the last one whose permissions the roles hold).
        post_migrate.connect(
            ensure_roles, sender=apps.get_app_config("studies"), dispatch_uid="planner-roles"
        )
