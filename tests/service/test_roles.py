"""The three roles exist after migrate, setup_roles is idempotent, and each role may do what
ARCHITECTURE.md says: read (any role), edit (admin), finance reports (finance and admin)."""

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command

from planner.accounts.permissions import can_edit, can_read, can_read_finance, role_of

pytestmark = pytest.mark.django_db


def test_migrate_creates_the_three_roles():
    assert set(Group.objects.values_list("name", flat=True)) >= {"admin", "finance", "viewer"}


def test_setup_roles_twice_changes_nothing():
    before = {g.name: set(g.permissions.values_list("codename", flat=True)) for g in Group.objects.all()}
    call_command("setup_roles")
    call_command("setup_roles")
    after = {g.name: set(g.permissions.values_list("codename", flat=True)) for g in Group.objects.all()}
    assert after == before
    assert Group.objects.filter(name="admin").count() == 1


def test_setup_roles_repairs_a_role_stripped_of_its_permissions(user_with_role):
    Group.objects.get(name="viewer").permissions.clear()
    call_command("setup_roles")
    assert can_read(user_with_role("v", "viewer"))


@pytest.mark.parametrize(
    "role, read, edit, finance",
    [
        ("admin", True, True, True),
        ("finance", True, False, True),
        ("viewer", True, False, False),
        (None, False, False, False),
    ],
)
def test_each_role_may_do_what_it_should(role, read, edit, finance, user_with_role):
    user = user_with_role(f"someone-{role}", role)
    assert (can_read(user), can_edit(user), can_read_finance(user)) == (read, edit, finance)
    assert role_of(user) == (role or "")


@pytest.mark.django_db(transaction=True)
def test_roles_come_back_after_a_database_flush():
    call_command("flush", "--noinput")
    assert set(Group.objects.values_list("name", flat=True)) >= {"admin", "finance", "viewer"}
    assert Group.objects.get(name="viewer").permissions.filter(codename="view_policy").exists()
