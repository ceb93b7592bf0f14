"""The forecast page with a 1,000-job forecast: server time, HTML size and the browser's load.

    .venv/bin/python benchmarks/forecast_page_benchmark.py [--jobs 1000] [--samples 20] [--repeat 5]

In its own folder (``var/forecast-page-benchmark/``: SQLite, media), it makes a pool of ten shares
of 8 one-GPU instances each, a snapshot of ``--jobs`` jobs (a tenth running, the rest waiting, every
duration given, no arrivals), forecasts it (chunks replayed here, in order), then measures:

- the page ``/forecasts/<id>/`` rendered by Django (first page of the table, and a search), median
  of ``--repeat`` requests, and its size;
- ``GET /api/forecasts/<id>/jobs/?limit=1000`` (every job in one answer);
- the page loaded in Debian's chromium (Playwright) from a local WSGI server until its chart is
  drawn (``load`` event and Plotly done), median of ``--repeat`` loads.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import threading
import time
from pathlib import Path
from wsgiref.simple_server import WSGIRequestHandler, make_server

ROOT = Path(__file__).resolve().parent.parent


class Quiet(WSGIRequestHandler):
    def log_message(self, *args) -> None:
        pass


def setup(var_dir: Path) -> None:
    os.environ.update(
        {"PLANNER_VAR_DIR": str(var_dir), "DATABASE_URL": "", "REDIS_URL": "", "DEBUG": "1",
         "ALLOWED_HOSTS": "127.0.0.1,localhost,testserver",
         "DJANGO_SETTINGS_MODULE": "planner.settings", "DJANGO_ALLOW_ASYNC_UNSAFE": "true"}
    )  # fmt: skip
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def snapshot(jobs: int) -> dict:
    running = jobs // 10
    shares = [f"team{k}" for k in range(10)]
    return {
        "time": 1_000_000.0,
        "running": [
            {"job_id": f"run-{i:05d}", "share": shares[i % 10], "instance_type": "gpu",
             "started_at": 990_000.0, "remaining_seconds": 600.0 + 97 * i % 7200, "user": f"user{i % 37}"}
            for i in range(running)
        ],
        "pending": [
            {"job_id": f"job-{i:05d}", "share": shares[i % 10], "instance_type": "gpu",
             "submit_time": 900_000.0 + i, "duration": 900.0 + 131 * i % 14_400, "user": f"user{i % 37}"}
            for i in range(jobs - running)
        ],
    }  # fmt: skip


def timed(call, repeat: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeat):
        start = time.perf_counter()
        out = call()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=1000)
    parser.add_argument("--samples", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    var_dir = ROOT / "var" / "forecast-page-benchmark"
    shutil.rmtree(var_dir, ignore_errors=True)
    setup(var_dir)
    from django.contrib.auth.models import Group, User
    from django.core.wsgi import get_wsgi_application
    from django.test import Client

    from planner.accounts.roles import VIEWER
    from planner.capacity.models import InstanceType, Policy, Pool, ShareSpec
    from planner.forecasts.launch import ForecastLaunch, start_forecast
    from planner.forecasts.tasks import sample_chunk

    InstanceType.objects.create(name="gpu", gpus=1, hourly_price=2.0)
    pool = Pool.objects.create(name="bench")
    pool.set_capacity({"gpu": 80})
    policy = Policy.objects.create(name="bench", pool=pool)
    policy.replace_shares(
        [ShareSpec(f"team{k}", "LEND_AND_BORROW", None, "never", "any", {"gpu": 8}) for k in range(10)]
    )
    user = User.objects.create_user("bench-viewer", password="bench-viewer-password")
    user.groups.add(Group.objects.get(name=VIEWER))
    start = time.perf_counter()
    made = snapshot(args.jobs)
    forecast = start_forecast(
        ForecastLaunch(snapshot=made, policy=policy, samples=args.samples), enqueue=False
    )
    for chunk in forecast.chunk_rows.order_by("index"):
        sample_chunk.apply(args=[chunk.pk])
    forecast.refresh_from_db()
    print(f"forecast of {forecast.jobs:,} jobs x {args.samples} samples: {forecast.status} in "
          f"{time.perf_counter() - start:.1f} s (here, one process)")  # fmt: skip
    client = Client()
    client.force_login(user)
    url = f"/forecasts/{forecast.pk}/"
    page_time, response = timed(lambda: client.get(url), args.repeat)
    print(f"page {url}: {page_time * 1000:.0f} ms (Django, median of {args.repeat}), "
          f"{len(response.content) / 1024:.0f} KiB of HTML")  # fmt: skip
    search_time, _ = timed(lambda: client.get(url + "?search=user7"), args.repeat)
    print(f"page with ?search=user7: {search_time * 1000:.0f} ms")
    jobs_url = f"/api/forecasts/{forecast.pk}/jobs/?limit=1000"
    api_time, answer = timed(lambda: client.get(jobs_url), args.repeat)
    print(f"GET {jobs_url}: {api_time * 1000:.0f} ms, "
          f"{len(answer.content) / 1024:.0f} KiB")  # fmt: skip

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_port}"
    from django.conf import settings
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium", args=["--headless", "--no-sandbox"]
        )
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        session = client.cookies[settings.SESSION_COOKIE_NAME].value
        context.add_cookies([{"name": settings.SESSION_COOKIE_NAME, "value": session, "url": base}])
        page = context.new_page()
        loads = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            page.goto(base + url, wait_until="load")
            page.wait_for_function("document.querySelector('#forecast-bands').dataset.drawn === 'yes'")
            loads.append(time.perf_counter() - start)
        browser.close()
    low, middle, high = (value * 1000 for value in (min(loads), statistics.median(loads), max(loads)))
    print(f"browser: page loaded and chart drawn in {middle:.0f} ms "
          f"(median of {args.repeat}; min {low:.0f} ms, max {high:.0f} ms)")  # fmt: skip
    server.shutdown()


if __name__ == "__main__":
    main()
