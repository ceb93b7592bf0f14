"""Fixtures for the security tests: one small world (an instance type, a pool, a policy with
shares, a trace, a replayed study, a calibration) and a user per role with a session client and
an API token, plus a user whose token was revoked. Media go to a temporary folder."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest
from django.contrib.auth.models import Group, Permission, User
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from planner.accounts.roles import ADMIN, FINANCE, VIEWER, apply_roles
from planner.calibration.models import Calibration
from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
from planner.studies.launch import StudyLaunch, launch_study
from planner.traces.models import Trace, read_upload
from tests import fixtures
from tests.fixtures import eager_worker

media_root = fixtures.media_root  # a fixture (tests/fixtures.py)

GPU_TYPE = "ml.g5.xlarge"
# The pk put in the URLs of resources the world has no object of (apps added later): still checked
# for who may reach them, with a 404 instead of a 200 for those who may.
MISSING = 999_999
SMALL_TRACE_CSV = b"""job_id,submit_time,share,priority,instance_count,duration
t1,0,train,1,2,3600
t2,1800,train,1,1,7200
i1,600,infer,5,1,900
"""


@dataclass
class World:
    """The objects every URL can point at, by the kind of object its ``pk`` names."""

    instance_type: InstanceType
    pool: Pool
    policy: Policy
    trace: Trace
    study: object
    calibration: Calibration
    users: dict[str, User] = field(default_factory=dict)
    tokens: dict[str, str] = field(default_factory=dict)

    def pk_for(self, path: str) -> int:
        """The primary key to put in a URL, from the resource its path starts with."""
        for prefix, obj in (
            ("/api/instance-types/", self.instance_type),
            ("/api/pools/", self.pool),
            ("/api/policies/", self.policy),
            ("/api/shares/", self.policy.shares.order_by("id").first()),
            ("/api/traces/", self.trace),
            ("/api/studies/", self.study),
            ("/api/runs/", self.study.runs.order_by("id").first()),
            ("/api/calibrations/", self.calibration),
            ("/policies/", self.policy),
            ("/traces/", self.trace),
            ("/studies/", self.study),
            ("/calibration/", self.calibration),
        ):
            if path.startswith(prefix):
                return obj.pk
        return MISSING

    def knows(self, path: str) -> bool:
        """Whether the world has an object for the URL (new resources get MISSING: a 404 to readers)."""
        return self.pk_for(path) != MISSING

    def session(self, identity: str, *, enforce_csrf: bool = False) -> Client:
        client = Client(enforce_csrf_checks=enforce_csrf)
        if identity in self.users and identity != "revoked":
            client.force_login(self.users[identity])
        return client

    def api(self, identity: str) -> APIClient:
        client = APIClient()
        if identity in self.tokens:
            client.credentials(HTTP_AUTHORIZATION=f"Token {self.tokens[identity]}")
        return client


@pytest.fixture
def world(db) -> World:
    apply_roles(Group, Permission)
    pool = fixtures.one_type_pool("lab", GPU_TYPE, 4, hourly_price=1.5)
    gpu = InstanceType.objects.get(name=GPU_TYPE)
    shares = [
        ShareSpec("train", "LEND_AND_BORROW", 100, "lower_priority", "any", {GPU_TYPE: 2}),
        ShareSpec("infer", "LEND", None, "never", "any", {GPU_TYPE: 1}),
    ]
    policy = fixtures.policy_with_shares("lab-policy", pool, shares)
    trace = Trace.store(read_upload(io.BytesIO(SMALL_TRACE_CSV), format="planner-csv"), name="lab-week")
    with eager_worker():
        study = launch_study(StudyLaunch(name="lab study", trace=trace, policies=[policy]))
    assert study.runs.get().status == "succeeded", study.runs.get().error
    calibration = Calibration.objects.create(
        trace=trace,
        policy=policy,
        policy_name=policy.name,
        policy_snapshot=study.runs.get().policy_snapshot,
        status="failed",
        error="the trace records no start times",
    )
    made = World(gpu, pool, policy, trace, study, calibration)
    for identity in ("revoked", "nobody", VIEWER, FINANCE, ADMIN):
        user = User.objects.create_user(username=f"{identity}-user")  # no password: no slow hashing
        role = identity if identity in (VIEWER, FINANCE, ADMIN) else None
        if role:
            user.groups.add(Group.objects.get(name=role))
        made.users[identity] = user
        made.tokens[identity] = Token.objects.create(user=user).key
    # The revoked token belongs to another user (an admin once), who revoked it themselves.
    made.users["revoked"].groups.add(Group.objects.get(name=ADMIN))
    revoke = APIClient()
    revoke.credentials(HTTP_AUTHORIZATION=f"Token {made.tokens['revoked']}")
    assert revoke.delete("/api/tokens/").status_code == 204
    return made
