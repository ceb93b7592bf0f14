#!/usr/bin/env bash
# The second command: the whole test suite.
#   1. engine tests (tests/scheduling) without a database, on the engine compiled by mypyc and on
#      its pure-Python source (every later step uses the compiled engine);
#   2. service tests, then page tests, on the embedded default: SQLite + the filesystem broker;
#   3. security, fuzzing, API schema and fault tests on the embedded default;
#   4. service and fault tests on PostgreSQL (127.0.0.1:5432) + Redis (127.0.0.1:6379) with real
#      celery worker processes (the services are started if they are down).
# Steps that share nothing run two at a time (the machine has two cores); each step's output is
# printed whole. Exits non-zero when any step fails or runs no test. Extra arguments go to every pytest.
set -uo pipefail
cd "$(dirname "$0")"

# Make .venv (Python 3.11+) and install REQUIREMENTS, skipping pip when nothing changed.
REQUIREMENTS=requirements-dev.txt
if [ ! -x .venv/bin/python ]; then
    echo "== creating .venv"
    "${PYTHON:-python3}" -m venv .venv
fi
STAMP=".venv/.installed-$REQUIREMENTS"
WANTED=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$STAMP" 2>/dev/null)" != "$WANTED" ]; then
    echo "== installing $REQUIREMENTS"
    .venv/bin/python -m pip install -q -r "$REQUIREMENTS" || exit 1
    echo "$WANTED" > "$STAMP"
fi

if [ -d tests/pages ] && [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null; then
    echo "== installing Debian's chromium for the page tests"
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium) >/dev/null
fi

start_postgresql() {
    pg_isready -q -h 127.0.0.1 -p 5432 && return 0
    echo "== starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -1)" main start
    for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
    return 1
}

start_redis() {
    redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0
    echo "== starting Redis"
    mkdir -p /var/lib/redis /var/log/redis
    redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
        --dir /var/lib/redis --logfile /var/log/redis/ci.log
    for _ in $(seq 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0; sleep 1; done
    return 1
}

FAILED=()
step() {
    # step NAME ENV... -- PYTEST-ARGS...: run pytest; no test run (exit 5) counts as a failure.
    local name=$1; shift
    local envs=()
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    echo
    echo "======== $name"
    env "${envs[@]}" .venv/bin/python -m pytest "$@"
    local rc=$?
    if [ $rc -ne 0 ]; then
        [ $rc -eq 5 ] && echo "$name: no test ran"
        FAILED+=("$name")
    fi
}

# Two steps at a time on a machine's two cores: step_in_background runs a step like `step`, its
# output kept in a log; await_background prints that log and counts its failure. Only steps that
# share nothing run side by side (no database, broker folder or worker in common, no fault
# injection, no browser).
BACKGROUND=()
step_in_background() {
    local log="var/ci-step-${#BACKGROUND[@]}.log"
    ( FAILED=(); step "$@"; [ ${#FAILED[@]} -eq 0 ] ) >"$log" 2>&1 &
    BACKGROUND+=("$!:$1:$log")
}
await_background() {
    local entry pid name log
    for entry in "${BACKGROUND[@]}"; do
        pid=${entry%%:*}; log=${entry##*:}; name=${entry#*:}; name=${name%:*}
        wait "$pid" || FAILED+=("$name")
        cat "$log"
    done
    BACKGROUND=()
}

mkdir -p var
echo "======== lint"
.venv/bin/ruff check . || FAILED+=("lint")

# The engine compiled from its source (scheduling/compiled.py), rebuilt only when the source changed.
SCHEDULING_ENGINE=auto .venv/bin/python -m scheduling.build --if-stale || FAILED+=("engine build")
export SCHEDULING_ENGINE=compiled  # fail rather than fall back to the source unnoticed

step_in_background "engine (pure Python)" SCHEDULING_ENGINE=python -- tests/scheduling -q -p no:cacheprovider "$@"
step "engine (compiled)" -- tests/scheduling -q -p no:cacheprovider "$@"

rm -rf var/test-broker var/test-broker-security
step "service on SQLite + filesystem broker" \
    DATABASE_URL= REDIS_URL= PLANNER_BROKER_DIR=var/test-broker -- \
    tests/service -q -p no:cacheprovider "$@"
await_background

# The browser pages in a pytest of their own: a database of their own, nothing left over.
if [ -d tests/pages ]; then
    step "pages on SQLite + filesystem broker" \
        DATABASE_URL= REDIS_URL= PLANNER_BROKER_DIR=var/test-broker -- \
        tests/pages -q -p no:cacheprovider "$@"
fi

if start_postgresql && start_redis; then
    # Roles, CSRF and tokens; fuzzed readers and uploads; the API against its schema (SQLite and a
    # broker folder of their own), beside the service tests on PostgreSQL + Redis.
    step_in_background "security, fuzzing, API schema on SQLite + filesystem broker" \
        DATABASE_URL= REDIS_URL= PLANNER_BROKER_DIR=var/test-broker-security -- \
        tests/security tests/fuzz tests/api_schema -q -p no:cacheprovider "$@"
    step "service on PostgreSQL + Redis" \
        DATABASE_URL=postgres://postgres@127.0.0.1:5432/planner REDIS_URL=redis://127.0.0.1:6379/15 \
        PLANNER_VISIBILITY_TIMEOUT=8 -- \
        tests/service -q -p no:cacheprovider "$@"
    await_background
    # Faults with real workers, one step at a time (the Redis restart is skipped on the
    # filesystem broker: it runs in the PostgreSQL + Redis step).
    step "faults on SQLite + filesystem broker" \
        DATABASE_URL= REDIS_URL= PLANNER_BROKER_DIR=var/test-broker -- \
        tests/faults -q -p no:cacheprovider "$@"
    step "faults on PostgreSQL + Redis" \
        DATABASE_URL=postgres://postgres@127.0.0.1:5432/planner REDIS_URL=redis://127.0.0.1:6379/15 \
        PLANNER_VISIBILITY_TIMEOUT=8 -- \
        tests/faults -q -p no:cacheprovider "$@"
else
    echo "PostgreSQL or Redis could not be started"
    FAILED+=("services")
    step "security, fuzzing, API schema, faults on SQLite + filesystem broker" \
        DATABASE_URL= REDIS_URL= PLANNER_BROKER_DIR=var/test-broker -- \
        tests/security tests/fuzz tests/api_schema tests/faults -q -p no:cacheprovider "$@"
fi

echo
if [ ${#FAILED[@]} -ne 0 ]; then
    echo "FAILED: ${FAILED[*]}"
    exit 1
fi
echo "all test steps passed"
