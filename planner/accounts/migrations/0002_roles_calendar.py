"""The roles again, now that capacity.CalendarChange exists (admins edit it, every role views it)."""

from importlib import import_module

from django.db import migrations

create_roles = import_module("planner.accounts.migrations.0001_roles").create_roles


class Migration(migrations.Migration):
    dependencies = [("accounts", "0001_roles"), ("capacity", "0002_calendar_fair_sharing_runnable_limit")]

    operations = [migrations.RunPython(create_roles, migrations.RunPython.noop)]
