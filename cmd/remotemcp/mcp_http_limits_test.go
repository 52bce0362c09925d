package main

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// TestMcpHTTPSessionIdleFlag (issue #20 item 2): a --session-idle that
// will not do is a usage error of both commands that take it (the values:
// cliflag.TestSessionIdle).
func TestMcpHTTPSessionIdleFlag(t *testing.T) {
	c := newCLI(t)
	c.fail(exitUsage, "--session-idle", "mcp", "--http", "127.0.0.1:0", "--session-idle", "soon")
	c.fail(exitUsage, "--session-idle", "serve", "--addr", "127.0.0.1:0", "--session-idle", "soon")
}

// TestMcpHTTPSessionIdleEnds (issue #20 item 2): with --session-idle, a
// host session that sends nothing ends, and its id answers 404 (before,
// it answered forever).
func TestMcpHTTPSessionIdleEnds(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	tok := createToken(t, c, "host")
	port := freePort(t)
	url := startMcpHTTP(t, c, port, "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port), "--session-idle", "100ms")
	post := func(sid, body string) (int, string) {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if sid != "" {
			req.Header.Set("Mcp-Session-Id", sid)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.Header.Get("Mcp-Session-Id")
	}
	code, sid := post("", initializeBody)
	if code != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d %q", code, sid)
	}
	// Only the end is waited for: the session must end, however slowly.
	testkit.WaitFor(t, "the idle session to end", func() bool {
		code, _ := post(sid, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
		if code != http.StatusNotFound {
			time.Sleep(200 * time.Millisecond) // longer than --session-idle: a request resets it
		}
		return code == http.StatusNotFound
	})
}
