#!/usr/bin/env bash
# Runs every test of remotemcp on a fresh machine: installs what the tests
# need, then formatting and vet checks, the race-enabled unit, integration,
# stress and fuzz-seed tests, and the official MCP conformance suite.
#
# usage: scripts/test.sh [--quick]   (--quick: -short tests, no conformance)
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
[ "${1:-}" = "--quick" ] && quick=1

step() { printf '\n== %s\n' "$*" >&2; }

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

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
if [ -n "$unformatted" ]; then echo "gofmt would change: $unformatted" >&2; exit 1; fi

step "go vet"
go vet ./...

step "go test -race (unit, integration, stress, fuzz seeds)"
if [ $quick = 1 ]; then
  go test -race -short -count=1 ./...
else
  go test -race -count=1 -timeout 30m ./...
fi

if [ $quick = 0 ] && [ -x scripts/conformance.sh ]; then
  step "MCP conformance suite (client mode)"
  scripts/conformance.sh
fi
echo "all tests passed" >&2
