package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// TestMcpStdio runs "mcp" in-process on pipes, as a host would launch it,
// in both modes: the host lists and calls tools, then leaves, and the
// command ends cleanly.
func TestMcpStdio(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		tool string
	}{
		{"aggregate", []string{"--no-daemon", "mcp"}, "fx__echo"},
		{"server", []string{"--no-daemon", "mcp", "--server", "fx"}, "echo"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := testkit.StartFixture(t, fixture.Options{})
			c := newCLI(t)
			c.ok("servers", "add", "fx", f.URL())
			hostIn, cmdOut := io.Pipe()
			cmdIn, hostOut := io.Pipe()
			var errb bytes.Buffer
			done := make(chan int, 1)
			go func() {
				done <- run(t.Context(), append([]string{"--data-dir", c.dir}, tc.args...),
					Streams{In: cmdIn, Out: cmdOut, Err: &errb}, nil)
				cmdOut.Close()
			}()
			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "host"}, nil).Connect(ctx, &mcp.IOTransport{Reader: hostIn, Writer: hostOut}, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{"text": "hi"}})
			if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
				t.Fatalf("call %s: %v %+v", tc.tool, err, res)
			}
			cs.Close()
			select {
			case code := <-done:
				if code != exitOK {
					t.Fatalf("mcp exited %d: %s", code, errb.String())
				}
			case <-time.After(30 * time.Second):
				t.Fatal("mcp did not end when the host left")
			}
		})
	}
}

// TestMcpUnknownServer: --server names a server that does not exist.
func TestMcpUnknownServer(t *testing.T) {
	c := newCLI(t)
	r := c.run("", "--no-daemon", "mcp", "--server", "nope")
	if r.code == exitOK || !strings.Contains(r.err, "nope") {
		t.Fatalf("want a failure naming the server:\n%s", r)
	}
}

// Issue #19 item 2: "mcp --http" started first relays to a daemon it
// starts, like stdio, so a stdio host started after it shares that daemon
// instead of failing beside an owner it cannot reach.
func TestMcpHTTPStartsDaemonThenStdioShares(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	tok := createToken(t, c, "host")
	port := freePort(t)
	url := startMcpHTTP(t, c, port, "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", port))
	if _, err := daemon.Running(t.Context(), c.dir); err != nil {
		t.Fatalf("mcp --http started no daemon: %v", err)
	}
	cs, leave := stdioHost(t, c, "mcp")
	callEcho(t, cs, "fx__echo")
	if r := leave(); r.code != exitOK || strings.Contains(r.err, "started the daemon") {
		t.Fatalf("stdio host beside mcp --http: %s", r)
	}
	callEcho(t, connectHTTP(t, url, tok), "fx__echo")
}

// Issue #19 item 2: only "--no-daemon mcp --http" owns the engine; while
// it does, a daemon is refused with the real cause (that command and its
// pid, not "the port"), and beside a running daemon it is refused naming
// the daemon.
func TestNoDaemonMcpHTTPOwnsAndSaysSo(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", f.URL())
	createToken(t, c, "host")
	port := freePort(t)
	ctx, stop := context.WithCancel(t.Context())
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	ended := c.start(runOpts{ctx: ctx}, "--no-daemon", "mcp", "--http", addr)
	testkit.WaitFor(t, "the endpoint", func() bool {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/mcp", port))
		if err != nil {
			return false
		}
		resp.Body.Close()
		return true
	})
	// A token made beside the owner (through an engine of the command's
	// own: there is no daemon to ask) counts at the endpoint's next request.
	late := createToken(t, c, "late")
	for tok, want := range map[string]bool{late: true, "rmcp_not-a-token-at-all": false} {
		req, _ := http.NewRequest(http.MethodGet, fmt.Sprintf("http://127.0.0.1:%d/mcp", port), nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if ok := resp.StatusCode != http.StatusUnauthorized; ok != want {
			t.Fatalf("a request with the token %.12s…: %d", tok, resp.StatusCode)
		}
	}
	r := c.run("", "serve", "--addr", "127.0.0.1:0")
	if r.code == exitOK || !strings.Contains(r.err, "remotemcp --no-daemon mcp --http "+addr) || !strings.Contains(r.err, "pid ") || strings.Contains(r.err, "port") {
		t.Fatalf("a daemon beside --no-daemon mcp --http: %s", r)
	}
	// A stdio host's daemon cannot start either: the host's log says who
	// owns the data directory, not only "it exited" (issue #19 item 2).
	r = c.run("", "mcp")
	if r.code == exitOK || !strings.Contains(r.err, "remotemcp --no-daemon mcp --http "+addr) || strings.Contains(r.err, "started the daemon") {
		t.Fatalf("stdio mcp beside --no-daemon mcp --http: %s", r)
	}
	stop()
	if r := wait(t, ended); r.code != exitOK {
		t.Fatalf("mcp --http: %s", r)
	}
	startServe(t, c) // the lock went with the endpoint
	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	r = c.run("", "--no-daemon", "mcp", "--http", fmt.Sprintf("127.0.0.1:%d", freePort(t)))
	if r.code == exitOK || !strings.Contains(r.err, fmt.Sprintf("a daemon (pid %d, settings page %s)", in.PID, in.URL)) || !strings.Contains(r.err, "without --no-daemon") {
		t.Fatalf("--no-daemon mcp --http beside a daemon: %s", r)
	}
}
