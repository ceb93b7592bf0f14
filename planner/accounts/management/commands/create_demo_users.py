"""``manage.py create_demo_users``: an admin, a finance and a viewer login for a first look.

Passwords come from ``PLANNER_DEMO_PASSWORD`` or are generated; existing users are kept
(their password is reset only with ``--reset``). Prints every login it made.
"""

import os
import secrets

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand

from planner.accounts.roles import ADMIN, FINANCE, VIEWER

DEMO_USERS = (("admin", ADMIN, True), ("finance", FINANCE, False), ("viewer", VIEWER, False))


class Command(BaseCommand):
    help = "Create the demo users admin, finance and viewer and print their logins."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--reset", action="store_true", help="set new passwords for existing demo users")
        parser.add_argument("--credentials-file", help="also write the logins to this file (mode 600)")

    def handle(self, *args, reset: bool, credentials_file: str | None, **options) -> None:
        users = get_user_model()
        lines = []
        for username, role, staff in DEMO_USERS:
            user, created = users.objects.get_or_create(username=username, defaults={"is_staff": staff})
            if created or reset:
                password = os.environ.get("PLANNER_DEMO_PASSWORD") or secrets.token_urlsafe(9)
                user.set_password(password)
                user.is_staff = staff
                user.is_superuser = False
                user.save()
                lines.append(f"{role:8} login: {username:8} password: {password}")
            user.groups.add(Group.objects.get(name=role))
        if not lines:
            self.stdout.write("demo users already exist (use --reset for new passwords)")
            return
        for line in lines:
            self.stdout.write(line)
        if credentials_file:
            with open(credentials_file, "w") as out:
                os.chmod(credentials_file, 0o600)
                out.write("\n".join(lines) + "\n")
