"""gunicorn's settings for the planner (``gunicorn planner.wsgi -c planner/gunicorn_conf.py``): threaded
workers that bound slow clients (planner/serving.py). Each can be changed by its environment
variable; docs/robustness.md gives the reasons and the production setup (a buffering proxy in front)."""

import os

worker_class = "planner.serving.SlowClientWorker"
# Two processes of eight threads each: a slow or stalled client holds one thread at most, and
# only until its head's deadline or its body's idle limit.
workers = int(os.environ.get("PLANNER_WEB_WORKERS") or 2)
threads = int(os.environ.get("PLANNER_WEB_THREADS") or 8)
# A worker whose main loop stops answering for this long is restarted by the arbiter.
timeout = int(os.environ.get("PLANNER_WEB_TIMEOUT_SECONDS") or 60)
graceful_timeout = 30
keepalive = 5  # an idle kept-alive connection waits in the poller, holding no thread
# The request line and headers: at most 100 fields of 8 KB each (gunicorn's own limits, stated).
limit_request_line = 8190
limit_request_fields = 100
limit_request_field_size = 8190
# No control socket: it would live in $HOME, shared (and fought over) by every planner on the machine.
control_socket_disable = True
