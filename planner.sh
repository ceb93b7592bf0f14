#!/usr/bin/env bash
# The first command: set everything up and serve the planner at http://127.0.0.1:8000 with a
# Celery worker (SQLite and a filesystem broker under var/, no servers). Ctrl-C stops both.
# Safe to run again: nothing is duplicated. PLANNER_PORT / PLANNER_HOST change the address.
set -euo pipefail
cd "$(dirname "$0")"

HOST=${PLANNER_HOST:-127.0.0.1}
PORT=${PLANNER_PORT:-8000}
export DEBUG=${DEBUG:-1}

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
echo "== demo data (the first time takes a minute: three studies are replayed)"
.venv/bin/python manage.py load_demo 2>&1 | grep -v "^Task planner" || true

echo "== starting a worker and the web server"
.venv/bin/celery -A planner worker -l WARNING --concurrency 2 --without-gossip --without-mingle \
    --without-heartbeat -n "planner-local@%h" &
WORKER=$!
.venv/bin/python manage.py runserver "$HOST:$PORT" --noreload &
SERVER=$!
stop() {
    trap - EXIT INT TERM
    kill -TERM "$SERVER" "$WORKER" 2>/dev/null || true
    wait "$SERVER" "$WORKER" 2>/dev/null || true
}
trap stop EXIT INT TERM

sleep 2
cat <<INFO

  The planner is at http://$HOST:$PORT/   (API: http://$HOST:$PORT/api/docs/, admin: /admin/)
  Demo logins (also in $VAR/demo-logins.txt):
$(sed 's/^/    /' "$VAR/demo-logins.txt")
  Ctrl-C stops the web server and the worker.

INFO
# Until Ctrl-C, or until either of them stops (then the other is stopped too).
wait -n "$SERVER" "$WORKER" || true
