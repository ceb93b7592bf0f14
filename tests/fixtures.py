"""What the Django test folders (service, pages, security, fuzz, faults) share: media in a temporary
folder for every test, and Celery tasks run inline when sent. A conftest imports the fixtures it uses."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

import pytest
from django.test import TestCase

from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.celery import app as celery_app


@contextmanager
def eager_tasks() -> Iterator[None]:
    """Tasks run inline when sent (real workers are in tests/service/test_workers.py)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    try:
        yield
    finally:
        celery_app.conf.task_always_eager = previous


@contextmanager
def eager_worker() -> Iterator[None]:
    """Tasks run inline, when the transaction that sent them commits."""
    with eager_tasks(), TestCase.captureOnCommitCallbacks(execute=True):
        yield


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def eager_celery():
    """Tasks run inline when sent, for the whole test."""
    with eager_tasks():
        yield


def raise_on_every_call(
    monkeypatch: pytest.MonkeyPatch, target: Any, name: str, error: Exception
) -> list[int]:
    """Replace ``target.name`` by a stand-in that raises ``error`` whenever it is called; the list it
    returns grows by one a call, for tests that count how often a failing step was tried (retries)."""
    calls: list[int] = []

    def raising(*args: Any, **kwargs: Any) -> NoReturn:
        calls.append(1)
        raise error

    monkeypatch.setattr(target, name, raising)
    return calls


def one_type_pool(
    name: str, instance_type: str, count: int, *, gpus: int = 1, hourly_price: float = 0.0
) -> Pool:
    """A pool of ``count`` instances of one type: the setting most tests replay on. The type is made
    with ``gpus`` and ``hourly_price`` unless the database has it already (it then stays as it is)."""
    InstanceType.objects.get_or_create(
        name=instance_type, defaults={"gpus": gpus, "hourly_price": hourly_price}
    )
    pool = Pool.objects.create(name=name)
    pool.set_capacity({instance_type: count})
    return pool


def policy_with_shares(name: str, pool: Pool, shares: list[ShareSpec]) -> Policy:
    """A stored policy on ``pool`` with these shares (a policy is made empty, then given its shares)."""
    policy = Policy.objects.create(name=name, pool=pool)
    policy.replace_shares(shares)
    return policy
