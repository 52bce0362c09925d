#!/usr/bin/env bash
# Runs the official MCP conformance suite against remotemcp, for each suite version we track:
#  - client mode, every scenario, against remotemcp's conformance client, with the baseline of
#    deliberate failures (conformance/baseline-VERSION.yml);
#  - server mode against go-sdk's conformance everything-server (the backend) directly, which must
#    pass fully, and then through "remotemcp mcp --server ev --http" fronting it: every scenario the
#    backend passes must pass there too, except those in conformance/baseline-server-VERSION.yml
#    (each with its reason). The suite accepts no token, so the endpoint runs with the hidden,
#    loopback-only --insecure-test-no-token.
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
plain() { sed 's/\x1b\[[0-9;]*m//g' "$1"; } # the suite's output without its colours
# unexpected_failures SUMMARY: the scenarios the suite listed as failing outside the baseline.
unexpected_failures() {
  plain "$1" | awk '/Unexpected failures \(not in baseline\)/ {on=1; next} on && /^ *✗ / {print $2; next} on {on=0}'
}
# sse_retry_only_late OUT: the run's only unexpected failure is sse-retry, no baseline entry is
# stale, and the scenario's only failed or warned check is its timing, because the reconnection
# came late (its checks.json in OUT says so). A warning fails the baseline check too.
sse_retry_only_late() {
  [ "$(unexpected_failures "$1/summary.txt")" = sse-retry ] || return 1
  ! plain "$1/summary.txt" | grep -q 'Stale baseline entries' || return 1
  local f
  for f in "$1"/sse-retry-*/checks.json; do
    [ -f "$f" ] || return 1
    node -e '
      const checks = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
      const bad = checks.filter(c => c.status === "FAILURE" || c.status === "WARNING");
      const d = bad.length === 1 && bad[0].id === "client-sse-retry-timing" && bad[0].details;
      const late = !!d && d.tooEarly === false && (d.veryLate === true || d.slightlyLate === true);
      process.exit(late ? 0 : 1);' "$f" || return 1
  done
}
for version in 0.2.0-alpha.12 0.1.16; do
  out=".ci/out/conformance-$version"
  rm -rf "$out"; mkdir -p "$out"
  echo "-- conformance $version (suite all)" >&2
  t0=$SECONDS
  if bash "$runner" "$version" "$client" --suite all \
      --expected-failures "conformance/baseline-$version.yml" -o "$out" > "$out/summary.txt" 2>&1; then
    grep -E '^Total|Baseline' "$out/summary.txt" >&2 || true
  elif sse_retry_only_late "$out"; then
    # sse-retry measures, on the suite's own clock, the time from its closing a stream to the
    # client's reconnection: the retry field's 500 ms, a warning past 700 ms (which fails the
    # baseline check all the same) and a failure past 1000 ms. On a loaded machine the
    # suite's and the client's scheduling alone can pass that (the client waits exactly the retry
    # delay after it sees the end of the stream). One more run of that scenario alone decides.
    plain "$out/summary.txt" | grep -E '^(Total|✗ sse-retry)' >&2 || true
    echo "!! WARNING: conformance $version: sse-retry failed only on its wall-clock timing (reconnected late);" >&2
    echo "!!          running that one scenario once more (first run kept in $out/summary.txt)" >&2
    if bash "$runner" "$version" "$client" --scenario sse-retry -o "$out/sse-retry-rerun" \
        > "$out/sse-retry-rerun.txt" 2>&1; then
      echo "!! WARNING: conformance $version: sse-retry passed on its second run; the rest of the suite met its baseline the first time" >&2
    else
      status=1
      echo "!! conformance $version: sse-retry failed again:" >&2
      plain "$out/sse-retry-rerun.txt" | grep -vE '^(===|Running client scenario|Results saved)' >&2
    fi
  else
    status=1
    cat "$out/summary.txt" >&2
  fi
  echo "-- conformance $version client mode took $((SECONDS - t0)) s" >&2
done

# ---- server mode ----
server_runner=${REMOTEMCP_CONFORMANCE_SERVER_RUNNER:-conformance/runner/run-server-suite.sh}
everything=v1.8.0
# Suite per version: the widest one go-sdk's everything-server passes fully (0.2.0-alpha.12's "all"
# adds draft 2026-07-28 and extension scenarios the backend fails; its "active" passes).
server_suite() { case $1 in 0.1.16) echo all ;; *) echo active ;; esac; }
go build -o bin/remotemcp ./cmd/remotemcp
srv=".ci/out/conformance-server"
rm -rf "$srv"; mkdir -p "$srv/gobin"
echo "-- installing go-sdk conformance everything-server@$everything" >&2
GOBIN="$PWD/$srv/gobin" go install "github.com/modelcontextprotocol/go-sdk/conformance/everything-server@$everything"
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT
free_port() {
  node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'
}
wait_port() { # PORT PID LOG: until something accepts on 127.0.0.1:PORT (30 s), or PID dies
  local i
  for i in $(seq 300); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
    if ! kill -0 "$2" 2>/dev/null; then echo "exited before listening:" >&2; cat "$3" >&2; return 1; fi
    sleep 0.1
  done
  echo "nothing listens on 127.0.0.1:$1 after 30 s:" >&2; cat "$3" >&2; return 1
}
p1=$(free_port)
# -stateless=false: stateless mode fails 4 scenarios and would hide them (issue 13, Decided).
"$srv/gobin/everything-server" -http "127.0.0.1:$p1" -stateless=false > "$srv/everything-server.log" 2>&1 &
pids+=($!)
wait_port "$p1" $! "$srv/everything-server.log"
data="$srv/data"
bin/remotemcp --data-dir "$data" servers add ev "http://127.0.0.1:$p1/mcp" > "$srv/servers-add.log" 2>&1 ||
  { cat "$srv/servers-add.log" >&2; exit 1; }
p2=$(free_port)
bin/remotemcp --data-dir "$data" --no-daemon mcp --server ev --http "127.0.0.1:$p2" --insecure-test-no-token \
  > "$srv/remotemcp.log" 2>&1 &
pids+=($!)
wait_port "$p2" $! "$srv/remotemcp.log"
for version in 0.2.0-alpha.12 0.1.16; do
  t0=$SECONDS
  suite=$(server_suite "$version")
  out="$srv/$version"
  mkdir -p "$out/direct" "$out/remotemcp"
  echo "-- conformance $version server mode (suite $suite): everything-server $everything directly" >&2
  if bash "$server_runner" "$version" "http://127.0.0.1:$p1/mcp" --suite "$suite" -o "$out/direct" \
      > "$out/direct.txt" 2>&1; then
    grep -E '^Total' "$out/direct.txt" >&2 || true
  else
    status=1
    echo "the backend no longer passes the suite fully: the comparison below means little" >&2
    grep -E '^(✗|Total)' "$out/direct.txt" >&2 || cat "$out/direct.txt" >&2
  fi
  echo "-- conformance $version server mode (suite $suite): through remotemcp mcp --server ev --http" >&2
  if bash "$server_runner" "$version" "http://127.0.0.1:$p2/mcp" --suite "$suite" -o "$out/remotemcp" \
      --expected-failures "conformance/baseline-server-$version.yml" > "$out/remotemcp.txt" 2>&1; then
    grep -E '^Total|Baseline' "$out/remotemcp.txt" >&2 || true
  else
    status=1
    grep -vE '^(===|Running client scenario|Results saved)' "$out/remotemcp.txt" >&2
  fi
  echo "-- conformance $version server mode took $((SECONDS - t0)) s" >&2
done
exit $status
