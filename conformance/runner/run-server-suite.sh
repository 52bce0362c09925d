#!/usr/bin/env bash
# Runs the official MCP conformance suite (npm @modelcontextprotocol/conformance) in server mode.
#
# usage: run-server-suite.sh VERSION URL [conformance server options...]
#   VERSION  e.g. 0.2.0-alpha.12 or 0.1.16
#   URL      the Streamable HTTP endpoint of the server under test, e.g. http://127.0.0.1:8080/mcp
#            (the suite sends no credentials: the endpoint must accept requests without a token)
#   options  e.g. --suite all --expected-failures baseline-server.yml -o results/   or   --scenario tools-list
#
# The package is installed once per version under ${MCP_CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}
# (shared with run-client-suite.sh). Versions >= 0.1.14 import fs.globSync, which Node 20 lacks;
# node20-shim/ supplies it (only for the suite's own modules) when the local Node is older than 22.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
version=$1; url=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
cache=${MCP_CONFORMANCE_CACHE:-$HOME/.cache/mcp-conformance}/$version
if [ ! -x "$cache/node_modules/.bin/conformance" ]; then
  mkdir -p "$cache"
  (cd "$cache" && { [ -f package.json ] || echo '{"private":true}' > package.json; } &&
     npm install --no-audit --no-fund --loglevel=error "@modelcontextprotocol/conformance@$version" >&2)
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 22 ]; then
  export NODE_OPTIONS="--import $here/node20-shim/register.mjs ${NODE_OPTIONS:-}"
fi
exec "$cache/node_modules/.bin/conformance" server --url "$url" "$@"
