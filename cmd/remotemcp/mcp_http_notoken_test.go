package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// TestMcpHTTPInsecureTestNoToken: the hidden --insecure-test-no-token,
// for the conformance suite in server mode, serves --http without the
// bearer token check, keeps the Host and Origin checks, is not in --help,
// and is refused without --http and on a non-loopback address.
func TestMcpHTTPInsecureTestNoToken(t *testing.T) {
	c := newCLI(t)
	if help := c.ok("mcp", "--help").out; strings.Contains(help, "insecure") {
		t.Fatalf("mcp --help shows the test flag:\n%s", help)
	}
	c.fail(exitUsage, "needs --http", "mcp", "--insecure-test-no-token")
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:0", "[::]:0", "example.com:0"} {
		c.fail(exitUsage, "loopback", "mcp", "--http", addr, "--insecure-test-no-token")
	}

	f := testkit.StartFixture(t, fixture.Options{})
	c.ok("servers", "add", "fx", f.URL())
	port := freePort(t)
	ctx, cancel := context.WithCancel(t.Context())
	done := c.start(runOpts{ctx: ctx}, "mcp", "--server", "fx", "--http", fmt.Sprintf("127.0.0.1:%d", port), "--insecure-test-no-token")
	t.Cleanup(func() {
		cancel()
		if r := wait(t, done); r.code != exitOK {
			t.Errorf("mcp --http --insecure-test-no-token: %s", r)
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	post := func(host, origin string) int {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	own := fmt.Sprintf("127.0.0.1:%d", port)
	testkit.WaitFor(t, "the endpoint", func() bool { return post(own, "") == http.StatusOK })
	if got := post(fmt.Sprintf("evil.example:%d", port), ""); got != http.StatusForbidden {
		t.Fatalf("rebinding Host: status %d, want 403", got)
	}
	if got := post(own, "https://evil.example"); got != http.StatusForbidden {
		t.Fatalf("foreign Origin: status %d, want 403", got)
	}

	// A host with no token lists and calls the server's tools.
	cctx, ccancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer ccancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "suite"}, nil).Connect(cctx,
		&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}})
	if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
		t.Fatalf("call echo without a token: %v %+v", err, res)
	}
}
