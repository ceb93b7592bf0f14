"""``manage.py setup_roles``: (re)create the admin, finance and viewer groups; idempotent."""

from django.contrib.auth.models import Group, Permission
from django.core.management.base import BaseCommand

from planner.accounts.roles import ROLES, apply_roles


class Command(BaseCommand):
    help = "Create or repair the role groups admin, finance and viewer and their permissions."

    def handle(self, *args, **options) -> None:
        apply_roles(Group, Permission)
        self.stdout.write(f"roles ready: {', '.join(ROLES)}")
