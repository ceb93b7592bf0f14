"""Where one page's server time goes: SQL, template rendering and the rest (Python in the view),
cold (the page cache emptied before each request) and warm, through Django's test client against
a database of one's own (the load test's, say).

    .venv/bin/python benchmarks/page_profile.py \\
        --database-url postgres://postgres@127.0.0.1:5432/planner_load --role finance \\
        /studies/3/ "/finance/?study=3" /api/runs/7/metrics/ [--repeat 10] [--cprofile 15]

Times are medians of ``--repeat`` requests in milliseconds; the machine's load average is printed
with them (a shared machine's figures are rough).
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


class Phases:
    """SQL time (a database execute wrapper) and template time (the outermost Template.render)."""

    def __init__(self) -> None:
        self.sql = self.templates = 0.0
        self.queries = 0
        self._depth = 0

    def reset(self) -> None:
        self.sql = self.templates = 0.0
        self.queries = 0

    def execute(self, execute, sql, params, many, context):
        started = time.perf_counter()
        try:
            return execute(sql, params, many, context)
        finally:
            self.sql += time.perf_counter() - started
            self.queries += 1

    @contextmanager
    def timing_templates(self):
        from django.template.base import Template

        original = Template.render
        phases = self

        def render(template, context):
            phases._depth += 1
            started = time.perf_counter()
            try:
                return original(template, context)
            finally:
                phases._depth -= 1
                if phases._depth == 0:
                    phases.templates += time.perf_counter() - started

        Template.render = render
        try:
            yield
        finally:
            Template.render = original


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--database-url", required=True)
    parser.add_argument("--role", default="finance", choices=["viewer", "finance", "admin"])
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument(
        "--cprofile", type=int, default=0, help="print this many functions by cumulative time"
    )
    args = parser.parse_args()
    os.environ.update(DATABASE_URL=args.database_url, DEBUG="0", ALLOWED_HOSTS="testserver")
    os.environ.setdefault("SECRET_KEY", "page-profile-" + "x" * 50)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "planner.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.contrib.auth.models import Group, User
    from django.db import connection
    from django.test import Client

    from planner.web import page_cache

    user, _ = User.objects.get_or_create(username=f"page-profile-{args.role}")
    user.groups.add(Group.objects.get(name=args.role))
    client = Client()
    client.force_login(user)
    phases = Phases()
    load = " / ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"load average {load}; {args.role}; medians of {args.repeat} requests, ms")
    print(f"{'path':<40} {'cache':<5} {'status':>6} {'total':>7} {'sql':>7} {'queries':>7}", end="")
    print(f" {'templates':>9} {'rest':>7}  KB")
    with connection.execute_wrapper(phases.execute), phases.timing_templates():
        for path in args.paths:
            for warm in (False, True):
                rows = []
                for _ in range(args.repeat):
                    if not warm:
                        page_cache.clear()
                    phases.reset()
                    started = time.perf_counter()
                    response = client.get(path)
                    total = time.perf_counter() - started
                    rows.append((total, phases.sql, phases.queries, phases.templates, len(response.content)))
                total, sql, queries, templates, size = (
                    statistics.median(column) for column in zip(*rows, strict=True)
                )
                print(
                    f"{path[:40]:<40} {'warm' if warm else 'cold':<5} {response.status_code:>6} "
                    f"{total * 1000:>7.1f} "
                    f"{sql * 1000:>7.1f} {queries:>7.0f} {templates * 1000:>9.1f} "
                    f"{(total - sql - templates) * 1000:>7.1f}  {size / 1000:.0f}"
                )
            if args.cprofile:
                page_cache.clear()
                profile = cProfile.Profile()
                profile.runcall(client.get, path)
                pstats.Stats(profile).sort_stats("cumulative").print_stats(args.cprofile)


if __name__ == "__main__":
    main()
