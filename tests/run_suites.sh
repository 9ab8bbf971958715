#!/usr/bin/env bash
# The test suite on SQLite and, when PostgreSQL answers, on PostgreSQL: one after the other,
# or with SUITES_AT_ONCE=1 both at once (they share nothing: each has its own databases, data
# folders and servers), each in one process or spread over pytest-xdist workers (-n). Each
# line is prefixed with its pass; the end prints each pass's wall time and ten slowest tests
# (pytest's --durations), its slowest modules in wall and CPU seconds (tests/timings.py) and
# the whole run's wall time.
# Usage: tests/run_suites.sh PYTEST PG_URL [pytest args...]
set -uo pipefail

PYTEST="$1"; PG_URL="$2"; shift 2
start=$(date +%s)
logs="$(mktemp -d)"
# each pass its own temporary folder (pytest empties it as the pass starts)
TMP="${TMPDIR:-/tmp}/rlds-studio-tests"
mkdir -p "$TMP"
pids=()
names=()

run_pass() {  # name, then env assignments and the command, via env
    local name="$1"; shift
    # STUDIO_TEST_TIMINGS=FILE (tests/timings.py): the SQLite pass writes FILE, the others
    # FILE.postgres and FILE.alone, so that one run gives every pass's modules
    local timings=()
    if [[ -n "${STUDIO_TEST_TIMINGS:-}" && "$name" != sqlite ]]; then
        timings=(STUDIO_TEST_TIMINGS="$STUDIO_TEST_TIMINGS.$name")
    fi
    ( env "${timings[@]}" "$@" 2>&1 | sed -u "s/^/[$name] /" | tee "$logs/$name.log" ) &
    pids+=($!)
    names+=("$name")
}

passed() {  # pid: its pass ended well (5: no test chosen, e.g. PYTEST_ARGS named others)
    wait "$1"
    local rc=$?
    [[ $rc == 0 || $rc == 5 ]]
}

echo "== test suite on SQLite"
run_pass sqlite STUDIO_TEST_DATABASE_URL= "$PYTEST" --basetemp="$TMP/sqlite" "$@" -m "not alone"
if [[ "${SUITES_AT_ONCE:-0}" != 1 ]]; then  # one pass after the other
    passed "${pids[0]}" || { echo "== the sqlite pass FAILED"; failed_first=1; }
    pids[0]=""
fi
if "$(dirname "$PYTEST")/python" -m server.core.db_probe "$PG_URL"; then
    echo "== test suite on PostgreSQL ($PG_URL, a fresh schema)"
    run_pass postgres STUDIO_TEST_DATABASE_URL="$PG_URL" "$PYTEST" --basetemp="$TMP/postgres" "$@" \
        -n "${PG_WORKERS:-2}" -m "not alone"  # the last -n counts
elif [[ -n "${STUDIO_REQUIRE_POSTGRES:-}" ]]; then
    echo "PostgreSQL is required (STUDIO_REQUIRE_POSTGRES) but does not answer at $PG_URL"
    wait; exit 1
else
    echo "PostgreSQL does not answer at $PG_URL: skipped the PostgreSQL run"
fi

status=${failed_first:-0}
for i in "${!pids[@]}"; do
    [[ -n "${pids[$i]}" ]] || continue  # waited for already
    # pipefail: the subshell's status is pytest's
    passed "${pids[$i]}" || { status=1; echo "== the ${names[$i]} pass FAILED"; }
done
# Tests that load the machine on purpose (marked ``alone``), by themselves, on SQLite.
echo "== tests that run alone"
run_pass alone STUDIO_TEST_DATABASE_URL= "$PYTEST" --basetemp="$TMP/alone" "$@" -n 0 -m alone
passed "${pids[-1]}" || { status=1; echo "== the alone pass FAILED"; }
echo "== summary"
for name in "${names[@]}"; do
    echo "-- $name: $(grep -E '^\[[a-z]+\] =+ .* in [0-9.]+s' "$logs/$name.log" | tail -1 | sed 's/^\[[a-z]*\] //')"
    sed -n '/slowest [0-9]* durations/,/^\[[a-z]*\] $/p' "$logs/$name.log" | head -12
    # the modules that took the most, in wall and CPU seconds (tests/timings.py)
    sed 's/^\[[a-z]*\] //' "$logs/$name.log" | grep -E '^=+ test time .* CPU |^ *[0-9.]+ s wall '
done
echo "== wall time of the test suites: $(( $(date +%s) - start )) s"
rm -rf "$logs"
exit $status
