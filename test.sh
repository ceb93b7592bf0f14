#!/usr/bin/env bash
# The second command: the whole test suite.
#   - engine tests (tests/scheduling) without a database, on the engine compiled by mypyc and on
#     its pure-Python source (every later step uses the compiled engine);
#   - service, page (in two shards), security, fuzzing, API schema and fault tests on the embedded
#     default: SQLite + the filesystem broker;
#   - service and fault tests on PostgreSQL (127.0.0.1:5432) + Redis (127.0.0.1:6379) with real
#     celery worker processes (the services are started if they are down).
# The steps run in three lanes side by side (see `lane` below); each step's output is printed whole
# with its time. Exits non-zero when any step fails or runs no test. Extra arguments go to every pytest.
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
    local started=$SECONDS
    env "${envs[@]}" .venv/bin/python -m pytest "$@"
    local rc=$?
    echo "== $name: $((SECONDS - started)) s"
    if [ $rc -ne 0 ]; then
        [ $rc -eq 5 ] && echo "$name: no test ran"
        FAILED+=("$name")
    fi
}

# Three lanes of steps side by side: each lane runs its steps one after the other, its output in
# a log printed whole when every lane has ended. Steps in different lanes share nothing (each has
# its own SQLite file, broker folder, media folder and workers; only lane 3 uses PostgreSQL and
# Redis, and only lane 3 restarts Redis). The page tests wait on the browser most of the time, so
# two page shards beside CPU-bound steps fill the two cores instead of running alone.
LANES=()
lane() {
    # lane NAME FUNCTION: run FUNCTION's steps in the background, output in var/ci-NAME.log.
    local log="var/ci-$1.log"
    ( FAILED=(); "$2"; printf '%s\n' "${FAILED[@]}" >"$log.failed" ) >"$log" 2>&1 &
    LANES+=("$!:$log")
}
await_lanes() {
    local entry log name
    for entry in "${LANES[@]}"; do
        wait "${entry%%:*}"
        log=${entry#*:}
        cat "$log"
        while IFS= read -r name; do [ -n "$name" ] && FAILED+=("$name"); done <"$log.failed"
    done
    LANES=()
}

SQLITE=(DATABASE_URL= REDIS_URL=)
POSTGRES=(DATABASE_URL=postgres://postgres@127.0.0.1:5432/planner REDIS_URL=redis://127.0.0.1:6379/15
          PLANNER_VISIBILITY_TIMEOUT=8)
# The page tests in three shards, one per lane, sized so that the lanes end together (the demo's
# page goals load the whole demo: the shard of the lane that also runs PostgreSQL + Redis). Shard B
# takes every file not named here, new ones too.
PAGES_A=(tests/pages/test_page_goals.py tests/pages/test_study_why.py tests/pages/test_web_charts.py
         tests/pages/test_web_lists_and_form.py tests/pages/test_study_page.py tests/pages/test_commons_page.py
         tests/pages/test_web_studies.py)
PAGES_C=(tests/pages/test_web_browser.py tests/pages/test_byos_page.py tests/pages/test_security_pages.py)
PAGES_B_IGNORE=()
for file in "${PAGES_A[@]}" "${PAGES_C[@]}"; do PAGES_B_IGNORE+=("--ignore=$file"); done
# Each step names its slowest tests: where the suite's time goes stays in sight.
ARGS=(-q -p no:cacheprovider --durations=5 "$@")

await_build() {
    # Lane 2 starts on the pure-Python engine while the compiled one is built.
    while [ ! -e var/ci-build.rc ]; do sleep 1; done
    export SCHEDULING_ENGINE=compiled
}

lane_1() {
    step "engine (compiled)" -- tests/scheduling "${ARGS[@]}"
    # The real-worker tests in a pytest of their own, so that nothing another test leaves in the
    # process (Celery's Router is made once, with the routes of the first task sent) decides where
    # their tasks go; their fixtures also drop the Router when they set their own queue.
    step "service on SQLite + filesystem broker" "${SQLITE[@]}" PLANNER_BROKER_DIR=var/test-broker-service -- \
        tests/service -m "not workers" "${ARGS[@]}"
    step "service with real workers on SQLite + filesystem broker" "${SQLITE[@]}" \
        PLANNER_BROKER_DIR=var/test-broker-workers -- tests/service -m workers "${ARGS[@]}"
    step "faults on SQLite + filesystem broker" "${SQLITE[@]}" PLANNER_BROKER_DIR=var/test-broker-faults -- \
        tests/faults "${ARGS[@]}"
    step "pages (shard C) on SQLite + filesystem broker" "${SQLITE[@]}" PLANNER_BROKER_DIR=var/test-broker-pages-c -- \
        "${PAGES_C[@]}" "${ARGS[@]}"
}
lane_2() {
    # Every rule test, and a third of each property test's examples: the compiled lane compares the
    # engine with the reference model on all of them; this lane checks the source behaves as its build.
    step "engine (pure Python)" SCHEDULING_ENGINE=python PROPERTY_SHARE=0.34 -- tests/scheduling "${ARGS[@]}"
    await_build
    # Roles, CSRF and tokens; fuzzed readers and uploads; the API against its schema.
    step "security, fuzzing, API schema on SQLite + filesystem broker" "${SQLITE[@]}" \
        PLANNER_BROKER_DIR=var/test-broker-security -- tests/security tests/fuzz tests/api_schema "${ARGS[@]}"
    step "pages (shard B) on SQLite + filesystem broker" "${SQLITE[@]}" PLANNER_BROKER_DIR=var/test-broker-pages-b -- \
        tests/pages "${PAGES_B_IGNORE[@]}" "${ARGS[@]}"
}
lane_3() {
    step "pages (shard A) on SQLite + filesystem broker" "${SQLITE[@]}" PLANNER_BROKER_DIR=var/test-broker-pages-a -- \
        "${PAGES_A[@]}" "${ARGS[@]}"
    if [ "$SERVICES" = up ]; then
        step "service on PostgreSQL + Redis" "${POSTGRES[@]}" -- tests/service -m "not workers" "${ARGS[@]}"
        step "service with real workers on PostgreSQL + Redis" "${POSTGRES[@]}" -- tests/service -m workers \
            "${ARGS[@]}"
        # The Redis restart runs here only (the fault tests skip it on the filesystem broker).
        # ./planner.sh runs on its own SQLite whatever the environment: its test runs in lane 1.
        step "faults on PostgreSQL + Redis" "${POSTGRES[@]}" -- tests/faults \
            --ignore=tests/faults/test_planner_sh.py "${ARGS[@]}"
    fi
}

STARTED=$SECONDS
mkdir -p var
rm -rf var/test-broker-* var/ci-build.rc
echo "======== lint"
.venv/bin/ruff check . || FAILED+=("lint")
.venv/bin/ruff format --check . || FAILED+=("format")

lane lane-2 lane_2
# The engine compiled from its source (scheduling/compiled.py), rebuilt only when the source changed.
SCHEDULING_ENGINE=auto .venv/bin/python -m scheduling.build --if-stale || FAILED+=("engine build")
echo done >var/ci-build.rc
export SCHEDULING_ENGINE=compiled  # fail rather than fall back to the source unnoticed

SERVICES=down
if start_postgresql && start_redis; then
    SERVICES=up
else
    echo "PostgreSQL or Redis could not be started"
    FAILED+=("services")
fi
lane lane-1 lane_1
lane lane-3 lane_3
await_lanes
echo "== lint, build and the three lanes: $((SECONDS - STARTED)) s"

echo
if [ ${#FAILED[@]} -ne 0 ]; then
    echo "FAILED: ${FAILED[*]}"
    exit 1
fi
echo "all test steps passed"
