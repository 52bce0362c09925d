// Package chaos is the replicas' chaos test and benchmark (issue #23),
// behind the build tag chaos so that the ordinary test run leaves it out:
//
//	scripts/chaos.sh              # CI: the chaos test (N times: -n N)
//	scripts/chaos.sh -bench       # CPU and PostgreSQL round trips per call, 1 vs 3 replicas
//
// It runs everything as real processes on 127.0.0.1 with free ports: a
// PostgreSQL cluster of its own (internal/pgtest), three `remotemcp serve
// --store postgres://…` replicas sharing one key file, and Debian's
// HAProxy in front of their pages (round robin) and of their MCP
// endpoints (a host's Mcp-Session-Id stays on the replica that issued
// it, learned from the response). The bundled test server with OAuth
// (short-lived access tokens, rotating refresh tokens) runs in the test
// process and counts what the replicas did to it: each nonce's
// executions and caller, refresh tokens presented twice, invalid_grant
// answers. The test kills, freezes and restarts processes under a steady
// load of go-sdk hosts and asserts what the "Chaos test" section
// lists.
package chaos
