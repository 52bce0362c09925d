#!/usr/bin/env bash
# The replicas' chaos test (issue #23): PostgreSQL, three `remotemcp serve
# --store postgres://…` replicas and Debian's HAProxy in front of them, all
# real processes on 127.0.0.1 with free ports; the bundled test server with
# OAuth (access tokens of 15 s, rotating refresh tokens); 20 people × 5
# servers and 30 go-sdk hosts calling tools at a steady rate while a
# replica is killed (kill -9), PostgreSQL restarts, and a replica is
# frozen for 30 s (SIGSTOP). It prints a summary table and asserts calls
# failed only inside fault windows, no double execution, no lost edit, no
# cross-user read, no refresh token presented twice, no invalid_grant.
# About 3 minutes on 2 cores. The test is internal/chaos (build tag chaos).
#
# With -bench it runs the benchmark instead (not in CI): CPU per call and
# PostgreSQL round trips per call, 1 replica against 3, same steady load.
#
# usage: scripts/chaos.sh [-n N] [-bench]     (-n N: N runs in a row, stop at the first failure)
# environment: CHAOS_HOSTS, CHAOS_USERS, CHAOS_SERVERS, CHAOS_TOKEN_TTL_S
# change the load; CHAOS_KEEP=1 keeps the work directory.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=1
test=TestChaos
while [ $# -gt 0 ]; do
  case "$1" in
  -n) runs=$2; shift 2 ;;
  -bench) test=TestBench; shift ;;
  *) echo "usage: scripts/chaos.sh [-n N] [-bench]" >&2; exit 2 ;;
  esac
done

step() { printf '\n== %s\n' "$*" >&2; }
sudo_=""; [ "$(id -u)" = 0 ] || sudo_="sudo"
# Debian's postgresql puts its programs in /usr/lib/postgresql/VERSION/bin.
pg_bins() {
  if command -v pg_ctl >/dev/null; then dirname "$(readlink -f "$(command -v pg_ctl)")"; return; fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/pg_ctl" ] && echo "$d"
}
need=()
command -v haproxy >/dev/null || [ -x /usr/sbin/haproxy ] || need+=(haproxy)
[ -n "$(pg_bins)" ] || need+=(postgresql)
if [ ${#need[@]} -gt 0 ]; then
  step "installing ${need[*]} for the chaos test"
  $sudo_ apt-get update -qq && $sudo_ env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
# Debian's packages start their own services where systemd runs; the test
# runs its own processes on free ports and needs none of them.

work=$(mktemp -d "${TMPDIR:-/tmp}/remotemcp-chaos.XXXXXX")
# The test stops what it started, and what it started dies with it
# (Pdeathsig): the replicas, HAProxy and its PostgreSQL cluster
# (internal/pgtest, in a directory of its own).
cleanup() { [ "${CHAOS_KEEP:-}" = 1 ] || rm -rf "$work"; }
trap cleanup EXIT

step "building remotemcp"
go build -o "$work/remotemcp" ./cmd/remotemcp

for i in $(seq 1 "$runs"); do
  step "$test run $i of $runs"
  CHAOS_WORKDIR="$work" CHAOS_REMOTEMCP="$work/remotemcp" \
    go test -tags chaos ./internal/chaos -run "^$test\$" -v -count=1 -timeout 20m
done
