"""Create the admin, finance and viewer groups with their permissions (same as setup_roles)."""

from django.contrib.auth.management import create_permissions
from django.db import migrations

from planner.accounts.roles import apply_roles


def create_roles(apps, schema_editor):
    # Permissions are normally created after all migrations ran; make them now.
    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    apply_roles(apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"))


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("capacity", "0001_initial"),
        ("traces", "0001_initial"),
        ("studies", "0001_initial"),
    ]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
