#!/usr/bin/env bash
# Runs every test of remotemcp on a fresh machine: installs what the tests
# need, then formatting and vet checks, the race-enabled unit, integration,
# stress and fuzz-seed tests, and the official MCP conformance suite.
#
# Every check runs even when an earlier one failed (a failing go test does
# not hide the conformance results, nor the reverse); the summary at the end
# names each check with its time, and the exit status is non-zero when any
# failed. Only a failed install, or PostgreSQL failing to start, stops the
# run.
#
# usage: scripts/test.sh [--quick]   (--quick: -short tests, no conformance, no chaos test)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

step() { printf '\n== %s\n' "$*" >&2; }
began=$SECONDS
results=()
failed=0
# check NAME CMD...: runs CMD, records whether it passed and how long it took.
check() {
  local name=$1 t0=$SECONDS rc=0
  shift
  step "$name"
  "$@" || rc=$?
  local took=$((SECONDS - t0))
  if [ $rc = 0 ]; then
    results+=("ok      $(printf '%4dm%02ds' $((took / 60)) $((took % 60)))  $name")
  else
    results+=("FAILED  $(printf '%4dm%02ds' $((took / 60)) $((took % 60)))  $name (exit $rc)")
    failed=1
  fi
  printf -- '-- %s: %s in %dm%02ds\n' "$name" "$([ $rc = 0 ] && echo ok || echo FAILED)" $((took / 60)) $((took % 60)) >&2
}

t0=$SECONDS
step "go modules"
go mod download

# The settings page's browser tests drive Debian's Chromium (chromedp).
if [ ! -x /usr/bin/chromium ] && [ "${REMOTEMCP_SKIP_BROWSER:-}" != 1 ]; then
  step "installing chromium for the browser tests"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
# The conformance suite runs on the machine's Node (20 needs the shim the runner applies).
if ! command -v npm >/dev/null && [ $quick = 0 ]; then
  step "installing node and npm for the conformance suite"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null
fi
# The PostgreSQL store's tests (#22) run on Debian's postgresql, whose
# programs are in /usr/lib/postgresql/VERSION/bin, not on PATH.
pg_bins() {
  if command -v pg_ctl >/dev/null; then dirname "$(readlink -f "$(command -v pg_ctl)")"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}
if [ -z "$(pg_bins)" ]; then
  step "installing postgresql for the PostgreSQL store's tests"
  sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null
fi
took=$((SECONDS - t0))
results+=("ok      $(printf '%4dm%02ds' $((took / 60)) $((took % 60)))  installs (go modules, chromium, node, postgresql)")

# One PostgreSQL cluster for the whole run (#22): the test processes of
# all packages create their databases on it (internal/pgtest reads
# REMOTEMCP_TEST_POSTGRES), and REMOTEMCP_REQUIRE_POSTGRES=1 makes a
# missing server a failure, never a skip. It lives in a temporary
# directory, answers on a Unix socket only with trust authentication, and
# does not sync to disk (the same settings as internal/pgtest's private
# cluster). initdb and postgres refuse to run as root: as root (CI) they
# run as the postgres user that Debian's package creates.
pg_dir=""
pg_as=()
start_postgres() {
  local bin
  bin=$(pg_bins) || { echo "pg_ctl is neither on PATH nor in /usr/lib/postgresql/*/bin: install Debian's postgresql" >&2; return 1; }
  pg_dir=$(mktemp -d "${TMPDIR:-/tmp}/remotemcp-pg.XXXXXX") || return 1
  if [ "$(id -u)" = 0 ]; then
    chown postgres: "$pg_dir" || return 1
    pg_as=(runuser -u postgres --)
  fi
  if ! "${pg_as[@]}" "$bin/initdb" -D "$pg_dir/data" -U postgres --auth-local=trust --auth-host=reject \
    -E UTF8 --locale=C --no-sync >"$pg_dir/initdb.log" 2>&1; then
    cat "$pg_dir/initdb.log" >&2
    return 1
  fi
  if ! "${pg_as[@]}" "$bin/pg_ctl" start -w -D "$pg_dir/data" -l "$pg_dir/postgres.log" \
    -o "-k $pg_dir -p 5432 -c listen_addresses='' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c shared_buffers=32MB -c max_connections=300" >/dev/null; then
    cat "$pg_dir/postgres.log" >&2
    return 1
  fi
  export REMOTEMCP_TEST_POSTGRES="postgres:///postgres?host=$pg_dir&port=5432&user=postgres"
  export REMOTEMCP_REQUIRE_POSTGRES=1
}
stop_postgres() {
  [ -n "$pg_dir" ] || return 0
  [ -f "$pg_dir/data/postmaster.pid" ] && "${pg_as[@]}" "$(pg_bins)/pg_ctl" stop -D "$pg_dir/data" -m immediate >/dev/null
  rm -rf "$pg_dir"
  pg_dir=""
}
trap stop_postgres EXIT
t0=$SECONDS
step "starting PostgreSQL for the tests"
if ! start_postgres; then
  echo "could not start PostgreSQL for the tests (see above)" >&2
  exit 1
fi
took=$((SECONDS - t0))
results+=("ok      $(printf '%4dm%02ds' $((took / 60)) $((took % 60)))  PostgreSQL started ($pg_dir)")

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; return 1; fi
}
check "gofmt" gofmt_check
check "go vet" go vet ./...

# deadcode (issue #21 item 4): with the tests as callers nothing is
# unreachable; without them only the test servers and the test helper
# packages (testkit, clocktest, pgtest, oidctest) are.
deadcode_check() {
  local dc=(go run golang.org/x/tools/cmd/deadcode@v0.52.0) withtests all out
  withtests=$("${dc[@]}" -test ./...) || return 1
  all=$("${dc[@]}" ./...) || return 1
  out=$(printf '%s\n%s\n' "$withtests" "$all" | grep -vE '^internal/(testserver|testkit|clocktest|pgtest|oidctest)/|^$' | sort -u || true)
  if [ -n "$out" ]; then printf 'unreachable functions:\n%s\n' "$out" >&2; return 1; fi
}
check "deadcode" deadcode_check

# -timeout bounds one package's test binary: far above what any package
# takes on a loaded 2-core machine, so it only ends a hang.
if [ $quick = 1 ]; then
  check "go test -race -short" go test -race -short -count=1 -timeout 30m ./...
else
  check "go test -race (unit, integration, stress, fuzz seeds)" go test -race -count=1 -timeout 45m ./...
fi

if [ $quick = 0 ] && [ -x scripts/conformance.sh ]; then
  check "MCP conformance suites (client and server mode)" scripts/conformance.sh
fi

# The replicas' chaos test (issue #23): its own PostgreSQL, three
# replicas and HAProxy under load while a replica is killed, PostgreSQL
# restarts and a replica freezes; about 3 minutes. After the Go tests, so
# its load does not slow them down.
if [ $quick = 0 ]; then
  printf '\n==================== replicas: chaos test (scripts/chaos.sh) ====================\n' >&2
  check "replicas chaos test (scripts/chaos.sh)" scripts/chaos.sh
fi

took=$((SECONDS - began))
{
  printf '\n== summary (%dm%02ds in all)\n' $((took / 60)) $((took % 60))
  printf '  %s\n' "${results[@]}"
} >&2
if [ $failed = 1 ]; then
  echo "some checks FAILED (see above)" >&2
  exit 1
fi
echo "all tests passed" >&2
