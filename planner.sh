#!/usr/bin/env bash
# The first command: set everything up and serve the planner at http://127.0.0.1:8000 with a
# Celery worker (SQLite and a filesystem broker under var/, no servers). Ctrl-C stops both.
# Safe to run again: nothing is duplicated. PLANNER_PORT / PLANNER_HOST change the address.
# It serves with DEBUG off (gunicorn, static files by whitenoise): an error shows a plain page,
# never a traceback. DEBUG=1 ./planner.sh serves with Django's development server and debug pages.
# A worker that dies is started again; the web server stays up. PLANNER_DEMO=0 skips the demo data.
set -euo pipefail
cd "$(dirname "$0")"

HOST=${PLANNER_HOST:-127.0.0.1}
PORT=${PLANNER_PORT:-8000}
export DEBUG=${DEBUG:-0}
# Plain http on this machine: cookies without the Secure flag, no HSTS, the address as host.
export PLANNER_SECURE_COOKIES=${PLANNER_SECURE_COOKIES:-0} PLANNER_HSTS_SECONDS=${PLANNER_HSTS_SECONDS:-0}
export ALLOWED_HOSTS=${ALLOWED_HOSTS:-$HOST,127.0.0.1,localhost}

# Make .venv (Python 3.11+) and install REQUIREMENTS, skipping pip when nothing changed.
REQUIREMENTS=requirements.txt
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    "${PYTHON:-python3}" -m venv .venv
fi
STAMP=".venv/.installed-$REQUIREMENTS"
WANTED=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANTED" ]; then
    echo "== installing $REQUIREMENTS"
    .venv/bin/python -m pip install -q -r "$REQUIREMENTS"
    echo "$WANTED" > "$STAMP"
fi

# The replay engine compiled to native code (about seven times as fast); pure Python if that fails.
SCHEDULING_ENGINE=auto .venv/bin/python -m scheduling.build --if-stale || true

VAR=${PLANNER_VAR_DIR:-var}
mkdir -p "$VAR"
echo "== database, roles, demo users"
.venv/bin/python manage.py migrate --noinput -v0
.venv/bin/python manage.py setup_roles
# Passwords are shown from $VAR/demo-logins.txt; without that file they are made anew.
RESET=$([ -f "$VAR/demo-logins.txt" ] || echo --reset)
.venv/bin/python manage.py create_demo_users $RESET --credentials-file "$VAR/demo-logins.txt" >/dev/null
if [ "${PLANNER_DEMO:-1}" != 0 ]; then
    echo "== demo data (the first time takes a minute: three studies are replayed)"
    .venv/bin/python manage.py load_demo 2>&1 | grep -v "^Task planner" || true
fi
if [ "$DEBUG" = 0 ]; then
    .venv/bin/python manage.py collectstatic --noinput -v0  # served by whitenoise
fi

# The worker and the web server die with whoever started them (Linux's parent-death signal, by
# util-linux's setpriv): a supervisor or script killed with -9, which cannot stop its children
# itself, leaves no worker or server running on behind it.
MAIN=$$
WITH_PARENT=()
command -v setpriv >/dev/null && WITH_PARENT=(setpriv --pdeathsig TERM)

# The worker, started again whenever it stops (a crash, the OOM killer, a kill -9): runs it had
# are put back in the queue by the new worker's reaper. Its pid is in $VAR/worker.pid. Should the
# script itself be killed (-9), the supervisor notices within a second and stops the worker too.
supervise_worker() {
    local pid=""
    trap '[ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 0' TERM INT
    while :; do
        "${WITH_PARENT[@]}" .venv/bin/celery -A planner worker -l WARNING --concurrency 2 --without-gossip \
            --without-mingle --without-heartbeat -n "planner-local@%h" &
        pid=$!
        echo "$pid" > "$VAR/worker.pid"
        local code=0
        while kill -0 "$pid" 2>/dev/null; do
            if ! kill -0 "$MAIN" 2>/dev/null; then
                kill -TERM "$pid" 2>/dev/null
                wait "$pid" 2>/dev/null
                exit 0
            fi
            sleep 1 & wait $!  # (a sleep in the background: the TERM trap runs at once)
        done
        wait "$pid" || code=$?
        echo "== $(date +%H:%M:%S) the worker stopped (exit $code): starting a new one in 2 s;" \
            "the web pages stay up, its runs go back to the queue" >&2
        sleep 2
    done
}

echo "== starting a worker and the web server (DEBUG=$DEBUG)"
supervise_worker &
SUPERVISOR=$!
if [ "$DEBUG" = 0 ]; then
    # Threaded workers with a deadline for each request's head and an idle limit for its body
    # (planner/gunicorn_conf.py, planner/serving.py): slow clients cannot stall the site.
    "${WITH_PARENT[@]}" .venv/bin/gunicorn planner.wsgi -c planner/gunicorn_conf.py --bind "$HOST:$PORT" \
        --log-level warning &
else
    .venv/bin/python manage.py runserver "$HOST:$PORT" --noreload &
fi
SERVER=$!
stop() {
    trap - EXIT INT TERM
    kill -TERM "$SERVER" "$SUPERVISOR" 2>/dev/null || true
    wait "$SERVER" "$SUPERVISOR" 2>/dev/null || true
}
trap stop EXIT INT TERM

# "The planner is at" only once the site answers: each web worker loads Django first, which on a
# busy machine takes longer than a browser (or a script) would wait for its first page.
answers() {
    .venv/bin/python - "http://$HOST:$PORT/login/" <<'PY'
import sys, urllib.error, urllib.request
try:
    urllib.request.urlopen(sys.argv[1], timeout=5).close()
except urllib.error.HTTPError:
    pass  # an answer all the same
except OSError:
    sys.exit(1)
PY
}
for _ in $(seq 120); do
    answers && break
    kill -0 "$SERVER" 2>/dev/null || { echo "the web server stopped before it answered" >&2; exit 1; }
    sleep 1
done
cat <<INFO

  The planner is at http://$HOST:$PORT/   (API: http://$HOST:$PORT/api/docs/, admin: /admin/)
  Demo logins (also in $VAR/demo-logins.txt):
$(sed 's/^/    /' "$VAR/demo-logins.txt")
  Ctrl-C stops the web server and the worker.$([ "$DEBUG" = 0 ] && echo " DEBUG=1 ./planner.sh for debug pages.")

INFO
# Until Ctrl-C, or until the web server stops (then the worker is stopped too).
wait "$SERVER" || true
