"""``manage.py api_token USERNAME [--revoke]``: print a new API token for a user, or revoke it."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from rest_framework.authtoken.models import Token


class Command(BaseCommand):
    help = "Create (replacing any previous one) or revoke a user's API token."

    def add_arguments(self, parser) -> None:
        parser.add_argument("username")
        parser.add_argument("--revoke", action="store_true", help="delete the user's token")

    def handle(self, *args, username: str, revoke: bool, **options) -> None:
        user = get_user_model().objects.filter(username=username).first()
        if user is None:
            raise CommandError(f"no user named {username!r}")
        Token.objects.filter(user=user).delete()
        if revoke:
            self.stdout.write(f"revoked the API token of {username}")
            return
        self.stdout.write(Token.objects.create(user=user).key)
