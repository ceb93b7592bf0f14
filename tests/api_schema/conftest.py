"""The security tests' world (a policy, a trace, a replayed study, a user per role) for schemathesis."""

from tests.security.conftest import media_root, world  # noqa: F401
