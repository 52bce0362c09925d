#!/usr/bin/env bash
# Runs every test of remotemcp on a fresh machine: installs what the tests
# need, then formatting and vet checks, the race-enabled unit, integration,
# stress and fuzz-seed tests, and the official MCP conformance suite.
#
# Every check runs even when an earlier one failed (a failing go test does
# not hide the conformance results, nor the reverse); the summary at the end
# names each check with its time, and the exit status is non-zero when any
# failed. Only a failed install stops the run.
#
# usage: scripts/test.sh [--quick]   (--quick: -short tests, no conformance)
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
took=$((SECONDS - t0))
results+=("ok      $(printf '%4dm%02ds' $((took / 60)) $((took % 60)))  installs (go modules, chromium, node)")

gofmt_check() {
  local unformatted
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; return 1; fi
}
check "gofmt" gofmt_check
check "go vet" go vet ./...

# deadcode (issue #21 item 4): with the tests as callers nothing is
# unreachable; without them only the test servers and the test helper
# packages (testkit, clocktest) are.
deadcode_check() {
  local dc=(go run golang.org/x/tools/cmd/deadcode@v0.52.0) withtests all out
  withtests=$("${dc[@]}" -test ./...) || return 1
  all=$("${dc[@]}" ./...) || return 1
  out=$(printf '%s\n%s\n' "$withtests" "$all" | grep -vE '^internal/(testserver|testkit|clocktest)/|^$' | sort -u || true)
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
