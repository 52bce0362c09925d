#!/usr/bin/env bash
# Benchmarks remotemcp against bare go-sdk v1.8.0 (issue #12) and prints one
# table: client CPU and allocations per tool call on the session and
# manager layers and the full agent path at concurrency 1, 16 and 64; heap per
# connected, hibernated and lazy server; engine start-up with 0, 200 and
# 2,000 servers and the requests it makes; a list_changed storm. The
# session and manager rows are layer benchmarks; the agent rows
# and every engine row run through remotemcp.Open, as users do.
#
# Section scale (only when named; minutes): 100 and 500 servers of 50
# tools each, a cold connect of all with two event subscribers (CPU per
# server at 500 against 100), then warm listings through a daemon on that
# engine, and the real `remotemcp tools --json` (bin/remotemcp, built here).
#
# The test server runs in a separate process (the same binary, started as
# `remotemcp-bench serve`), so getrusage counts the client alone. Both sides
# use the same server, payload and http.Transport settings, in alternating
# order. About 3 minutes on 2 cores. Not part of scripts/test.sh or CI, and
# no test asserts a timing.
#
# usage: scripts/bench.sh [remotemcp-bench flags]     e.g.
#   scripts/bench.sh | tee /tmp/bench.txt
#   scripts/bench.sh -sections calls -calls 500 -rounds 1      # quick look
#   scripts/bench.sh -profile agent -cpuprofile cpu.out -memprofile mem.out
#   scripts/bench.sh -sections scale -scale 100,500 -cpuprofile scale.out
#   go run ./cmd/remotemcp-bench -h                             # every flag
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p bin
go build -o bin/remotemcp-bench ./cmd/remotemcp-bench
go build -o bin/remotemcp ./cmd/remotemcp
exec bin/remotemcp-bench -command "scripts/bench.sh${*:+ $*}" -cli "$PWD/bin/remotemcp" "$@"
