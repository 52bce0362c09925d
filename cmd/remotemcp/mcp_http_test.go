package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// bearerTransport adds the host's headers to every request, as a host
// configured with "headers": {"Authorization": "Bearer …"} does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// lastLine is the last line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// createToken runs "mcp token create name" and returns the token.
func createToken(t *testing.T, c *cli, name string) string {
	t.Helper()
	tok := lastLine(c.ok("mcp", "token", "create", name).out)
	if !strings.HasPrefix(tok, "rmcp_") || len(tok) < 40 {
		t.Fatalf("token %q: want rmcp_ and 256 random bits", tok)
	}
	return tok
}

// startMcpHTTP runs a command line serving the MCP endpoint at port until
// the test ends, and waits until the endpoint answers.
func startMcpHTTP(t *testing.T, c *cli, port int, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--data-dir", c.dir}, args...),
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("%v exited %d: %s", args, code, errb.String())
			}
		case <-time.After(20 * time.Second):
			t.Error("the endpoint did not stop")
		}
	})
	url := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	testkit.WaitFor(t, "the endpoint", func() bool {
		select {
		case code := <-done:
			t.Fatalf("%v exited %d: %s", args, code, errb.String())
		default:
		}
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusUnauthorized
	})
	return url
}

// connectHTTP connects a go-sdk client to url with token.
func connectHTTP(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearerTransport{token}}, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestMcpHTTP: a host reaches the managed servers over Streamable HTTP
// with a token, in every way the endpoint can be served: "mcp --http" as
// the owner (no daemon runs) in both modes, "mcp --http" relaying to a
// running daemon, and "serve --mcp-http".
func TestMcpHTTP(t *testing.T) {
	for _, tc := range []struct {
		name   string
		daemon bool // a daemon runs first
		args   func(addr string) []string
		tool   string
	}{
		{"owner aggregate", false, func(a string) []string { return []string{"mcp", "--http", a} }, "fx__echo"},
		{"owner server", false, func(a string) []string { return []string{"mcp", "--server", "fx", "--http", a} }, "echo"},
		{"no-daemon", false, func(a string) []string { return []string{"--no-daemon", "mcp", "--http", a} }, "fx__echo"},
		{"relay to daemon", true, func(a string) []string { return []string{"mcp", "--http", a} }, "fx__echo"},
		{"serve --mcp-http", false, func(a string) []string { return []string{"serve", "--addr", "127.0.0.1:0", "--mcp-http", a} }, "fx__echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testkit.StartFixture(t, fixture.Options{})
			c := newCLI(t)
			c.ok("servers", "add", "fx", f.URL())
			tok := createToken(t, c, "host")
			if tc.daemon {
				startServe(t, c)
			}
			port := freePort(t)
			url := startMcpHTTP(t, c, port, tc.args(fmt.Sprintf("127.0.0.1:%d", port))...)
			cs := connectHTTP(t, url, tok)
			ctx := t.Context()
			tools, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.ContainsFunc(tools.Tools, func(x *mcp.Tool) bool { return x.Name == tc.tool }) {
				t.Fatalf("tools lack %s: %d tools", tc.tool, len(tools.Tools))
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("call %s: %v %+v", tc.tool, err, res)
			}
		})
	}
}

// initializeBody is a host's first request.
const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

// TestMcpHTTPRefusals: what the endpoint refuses, request by request:
// the bearer token (401 with a Bearer challenge), then the settings
// page's Host and Origin rules (403). A revoked token is refused by the
// running endpoint at once.
func TestMcpHTTPRefusals(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	tok := createToken(t, c, "host")
	gone := createToken(t, c, "gone")
	port := freePort(t)
	url := startMcpHTTP(t, c, port, "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	own := fmt.Sprintf("127.0.0.1:%d", port)

	post := func(t *testing.T, host, origin, auth string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
		if err != nil {
			t.Fatal(err)
		}
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tc := range []struct {
		name, host, origin, auth string
		want                     int
	}{
		{"valid token", own, "", "Bearer " + tok, http.StatusOK},
		{"localhost and own origin", fmt.Sprintf("localhost:%d", port), fmt.Sprintf("http://localhost:%d", port), "bearer " + tok, http.StatusOK},
		{"no token", own, "", "", http.StatusUnauthorized},
		{"wrong token", own, "", "Bearer rmcp_" + strings.Repeat("A", 43), http.StatusUnauthorized},
		{"token without Bearer", own, "", tok, http.StatusUnauthorized},
		{"basic auth", own, "", "Basic " + tok, http.StatusUnauthorized},
		{"rebinding host", fmt.Sprintf("evil.example:%d", port), "", "Bearer " + tok, http.StatusForbidden},
		{"wrong port in host", "127.0.0.1:1", "", "Bearer " + tok, http.StatusForbidden},
		{"foreign origin", own, "https://evil.example", "Bearer " + tok, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := post(t, tc.host, tc.origin, tc.auth)
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want == http.StatusUnauthorized && !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer ") {
				t.Fatalf("401 without a Bearer challenge: %q", resp.Header.Get("WWW-Authenticate"))
			}
		})
	}
	t.Run("revoked token", func(t *testing.T) {
		if resp := post(t, own, "", "Bearer "+gone); resp.StatusCode != http.StatusOK {
			t.Fatalf("before revoke: status %d", resp.StatusCode)
		}
		c.ok("mcp", "token", "revoke", "gone")
		if resp := post(t, own, "", "Bearer "+gone); resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("after revoke: status %d, want 401", resp.StatusCode)
		}
		if resp := post(t, own, "", "Bearer "+tok); resp.StatusCode != http.StatusOK {
			t.Fatalf("the other token after revoke: status %d", resp.StatusCode)
		}
	})
}

// TestMcpHTTPNonLoopback: the endpoint is never offered to the network.
func TestMcpHTTPNonLoopback(t *testing.T) {
	c := newCLI(t)
	for _, args := range [][]string{
		{"mcp", "--http", "0.0.0.0:0"},
		{"mcp", "--http", "[::]:0"},
		{"mcp", "--http", "192.0.2.1:8080"},
		{"mcp", "--http", "example.com:8080"},
		{"mcp", "--server", "fx", "--http", "0.0.0.0:0"},
		{"serve", "--addr", "127.0.0.1:0", "--mcp-http", "0.0.0.0:0"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			c.fail(exitUsage, "only a loopback address", args...)
		})
	}
}

// TestMcpToken: create prints the token as the last line of stdout and
// stores only its hash; list shows names and times, never the token or
// the hash; revoke removes, and names are unique.
func TestMcpToken(t *testing.T) {
	// The same words either way: through an engine of the command's own,
	// and through a running daemon (issue #21 item 7: the tokens are
	// behind the local API).
	for _, withDaemon := range []bool{false, true} {
		t.Run(map[bool]string{false: "in-process", true: "daemon"}[withDaemon], func(t *testing.T) {
			testMcpToken(t, withDaemon)
		})
	}
}

func testMcpToken(t *testing.T, withDaemon bool) {
	c := newCLI(t)
	if withDaemon {
		startServe(t, c)
	}
	r := c.ok("mcp", "token", "create", "claude")
	tok := lastLine(r.out)
	if !strings.HasPrefix(tok, "rmcp_") || strings.Contains(r.err, tok) {
		t.Fatalf("create: %s", r)
	}
	if c.dbContains(tok) {
		t.Fatal("the token itself is in the database")
	}
	c.fail(exitFail, "exists", "mcp", "token", "create", "claude")
	c.fail(exitFail, "a name is", "mcp", "token", "create", "no spaces")
	createToken(t, c, "cursor")

	r = c.ok("mcp", "token", "list")
	if !strings.Contains(r.out, "claude") || !strings.Contains(r.out, "cursor") || strings.Contains(r.out, tok) {
		t.Fatalf("list: %s", r)
	}
	r = c.ok("mcp", "token", "list", "--json")
	var rows []map[string]any
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 2 || rows[0]["name"] != "claude" || rows[1]["name"] != "cursor" {
		t.Fatalf("list --json: %v %s", err, r)
	}
	for _, row := range rows {
		if len(row) != 2 || row["createdAt"] == nil {
			t.Fatalf("list --json row %v: want only name and createdAt", row)
		}
	}
	if strings.Contains(r.out, tok) || strings.Contains(r.out, "sha256") {
		t.Fatalf("list --json shows the token or its hash: %s", r.out)
	}

	c.ok("mcp", "token", "revoke", "claude")
	c.fail(exitFail, "no token", "mcp", "token", "revoke", "claude")
	c.fail(exitFail, "no token", "mcp", "token", "revoke", "never")
	r = c.ok("mcp", "token", "list", "--json")
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 || rows[0]["name"] != "cursor" {
		t.Fatalf("list after revoke: %v %s", err, r)
	}
	// The name is free again.
	createToken(t, c, "claude")
}

// Issue #13 (Decided): "mcp --http" that owns the engine is never a
// second owner beside a daemon: a daemon started meanwhile is refused and
// says why; once the endpoint stops, the daemon starts. Since issue #19
// item 2, "mcp --http" relays to a daemon (starting one), so the owner is
// "--no-daemon mcp --http".
func TestMcpHTTPOwnerKeepsDaemonOut(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	createToken(t, c, "host")
	port := freePort(t)
	ctx, stop := context.WithCancel(t.Context())
	ended := c.start(runOpts{ctx: ctx}, "--no-daemon", "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	testkit.WaitFor(t, "the endpoint", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	r := c.run("", "serve", "--addr", "127.0.0.1:0")
	if r.code == exitOK || !strings.Contains(r.err, "mcp --http") {
		t.Fatalf("a daemon beside mcp --http: %s", r)
	}
	stop()
	if r := <-ended; r.code != exitOK {
		t.Fatalf("mcp --http: %s", r)
	}
	startServe(t, c) // the lock went with the endpoint
}

// TestMcpHTTPChallenge (issue #19 item 13): through "mcp --http", a
// request without a token gets WWW-Authenticate: Bearer realm="remotemcp"
// and a body that names "remotemcp mcp token create NAME"; a wrong one
// gets error="invalid_token" and a body saying so.
func TestMcpHTTPChallenge(t *testing.T) {
	c := newCLI(t)
	port := freePort(t)
	url := startMcpHTTP(t, c, port, "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	for _, tc := range []struct {
		name, auth, challenge, body string
	}{
		{"no token", "", `Bearer realm="remotemcp"`, `remotemcp mcp token create NAME`},
		{"wrong token", "Bearer rmcp_" + strings.Repeat("B", 43), `Bearer realm="remotemcp", error="invalid_token", error_description="the bearer token is unknown or revoked"`, "invalid_token: the bearer token is unknown or revoked"},
	} {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(initializeBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") != tc.challenge || !strings.Contains(string(b), tc.body) {
			t.Errorf("%s: %d %q %q; want 401 %q and a body with %q", tc.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"), b, tc.challenge, tc.body)
		}
	}
}
