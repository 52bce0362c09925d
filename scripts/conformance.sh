#!/usr/bin/env bash
# Runs the official MCP conformance suite (client mode, every scenario) against remotemcp's
# conformance client, for each suite version we track, with the baseline of deliberate failures.
# The suite is installed through npm by conformance/runner/run-client-suite.sh (a copy of ../shared/conformance, or the one
# named by $REMOTEMCP_CONFORMANCE_RUNNER).
set -euo pipefail
cd "$(dirname "$0")/.."
runner=${REMOTEMCP_CONFORMANCE_RUNNER:-conformance/runner/run-client-suite.sh}
if [ ! -x "$runner" ] && [ ! -f "$runner" ]; then
  echo "conformance runner not found at $runner (set REMOTEMCP_CONFORMANCE_RUNNER)" >&2
  exit 1
fi
command -v node >/dev/null || { echo "node is required for the conformance suite (apt-get install -y nodejs npm)" >&2; exit 1; }
mkdir -p bin
go build -o bin/conformance-client ./internal/conformance/client
client="$PWD/bin/conformance-client"
status=0
for version in 0.2.0-alpha.12 0.1.16; do
  out=".ci/out/conformance-$version"
  rm -rf "$out"; mkdir -p "$out"
  echo "-- conformance $version (suite all)" >&2
  if bash "$runner" "$version" "$client" --suite all \
      --expected-failures "conformance/baseline-$version.yml" -o "$out" > "$out/summary.txt" 2>&1; then
    grep -E '^Total|Baseline' "$out/summary.txt" >&2 || true
  else
    status=1
    cat "$out/summary.txt" >&2
  fi
done
exit $status
