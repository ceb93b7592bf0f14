from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "planner.accounts"
    label = "accounts"
    verbose_name = "Accounts and roles"
