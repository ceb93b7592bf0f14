"""How the API's lists page: ``?limit=&offset=`` (DRF's), 50 rows unless asked, at most 1,000."""

from __future__ import annotations

from rest_framework.pagination import LimitOffsetPagination


class Pagination(LimitOffsetPagination):
    default_limit = 50
    # A bound keeps one request's work (and its SQL) finite: without it a limit past 2**63 reached
    # the database and answered 500 (schemathesis on /api/traces/).
    max_limit = 1000
