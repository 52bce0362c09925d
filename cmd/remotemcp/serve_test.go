package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// With "remotemcp serve" running on a data directory, the CLI goes
// through it: the session and its state are the daemon's, and they outlive
// each command.
func TestServeAndCLIThroughDaemon(t *testing.T) {
	srv := startFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")

	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"--data-dir", c.dir, "serve", "--addr", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		if dc, err := daemon.Dial(t.Context(), c.dir); err == nil {
			dc.CloseIdleConnections()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up\nstdout: %s\nstderr: %s", out.String(), errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(out.String(), "/login?token=") {
		t.Fatalf("serve printed no login URL: %s", out.String())
	}

	if r := c.ok("connect", "fx"); !strings.HasPrefix(r.out, "ready: 7 tools") {
		t.Fatalf("connect through the daemon: %s", r)
	}
	// The daemon knows the catalog, so disabling a tool it lacks warns.
	if r := c.ok("servers", "set", "fx", "--disable-tool", "nosuch"); !strings.Contains(r.err, `warning: server fx has no tool "nosuch"`) ||
		!strings.Contains(r.out, "updated fx: disabled nosuch") {
		t.Fatalf("disable an unknown tool: %s", r)
	}
	c.ok("servers", "set", "fx", "--enable-tool", "nosuch")
	// A later command sees the daemon's live session.
	r := c.ok("status", "--json")
	var rows []localapi.Server
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || len(rows) != 1 || rows[0].State != "ready" || rows[0].ToolCount != 7 {
		t.Fatalf("status through the daemon: %v %s", err, r)
	}
	if r := c.ok("call", "mcp__fx__echo", `{"text":"via daemon"}`, "--yes"); strings.TrimSpace(r.out) != "via daemon" {
		t.Fatalf("call through the daemon: %s", r)
	}
	c.fail(exitFail, "refused", "call", "mcp__fx__echo", `{"text":"x"}`)
	if n := srv.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1", n)
	}
	if r := c.ok("tools", "--json"); !strings.Contains(r.out, `"name":"mcp__fx__echo"`) {
		t.Fatalf("tools through the daemon: %s", r)
	}
	// A question the server asks during a call made by the daemon is
	// answered from another CLI invocation, through the daemon.
	asked := make(chan result, 1)
	go func() { asked <- c.run("", "call", "mcp__fx__ask", "{}", "--yes") }()
	var cardID string
	deadline = time.Now().Add(20 * time.Second)
	for cardID == "" {
		if time.Now().After(deadline) {
			t.Fatal("no pending card through the daemon")
		}
		var cards []localapi.Card
		if r := c.ok("elicitations", "list", "--json"); json.Unmarshal([]byte(r.out), &cards) == nil && len(cards) == 1 && cards[0].Status == "pending" {
			cardID = cards[0].ID
		}
		time.Sleep(20 * time.Millisecond)
	}
	c.ok("elicitations", "answer", cardID, "accept", `{"name":"Ada"}`)
	if r := <-asked; r.code != 0 || strings.TrimSpace(r.out) != "hello Ada (42)" {
		t.Fatalf("call answered through the daemon: %s", r)
	}

	// The daemon's request log of the server: metadata only.
	if r := c.ok("logs", "fx", "--json"); !strings.Contains(r.out, `"rpcMethod": "tools/call"`) || !strings.Contains(r.out, `"status": 200`) {
		t.Fatalf("logs through the daemon: %s", r)
	}

	c.ok("disconnect", "fx")
	r = c.ok("servers", "list", "--json")
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil || rows[0].State != "disconnected" {
		t.Fatalf("servers list after disconnect: %v %s", err, r)
	}
	// --no-daemon still works in-process.
	c.ok("--no-daemon", "connect", "fx")

	cancel()
	select {
	case <-done:
		if code != 0 {
			t.Fatalf("serve exit %d: %s", code, errb.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("serve did not stop on cancel")
	}
	if _, err := os.Stat(filepath.Join(c.dir, "daemon.json")); !os.IsNotExist(err) {
		t.Fatalf("daemon.json left behind: %v", err)
	}
}

// startServe runs "remotemcp serve" on c's data directory until the
// returned stop is called (or the test ends).
func startServe(t *testing.T, c *cli) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"--data-dir", c.dir, "serve", "--addr", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	stop = func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("serve did not stop")
		}
	}
	t.Cleanup(stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		if dc, err := daemon.Dial(t.Context(), c.dir); err == nil {
			dc.CloseIdleConnections()
			return stop
		}
		if time.Now().After(deadline) {
			t.Fatalf("daemon did not come up: %s", errb.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitCard waits for one card with the given status through the CLI.
func waitCard(t *testing.T, c *cli, status string) string {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		var cards []localapi.Card
		if r := c.run("", "elicitations", "list", "--json"); r.code == 0 && json.Unmarshal([]byte(r.out), &cards) == nil {
			for _, cd := range cards {
				if string(cd.Status) == status {
					return cd.ID
				}
			}
		}
		if time.Now().After(deadline) {
			r := c.run("", "--no-daemon", "elicitations", "list", "--json")
			r2 := c.run("", "elicitations", "list", "--json")
			t.Fatalf("no %s card; store view: %s\ndaemon view: %s", status, r, r2)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// With the daemon, a question left open when the daemon stops becomes
// an interrupted card; the call is re-sent only after the person confirms,
// once, through the daemon.
func TestDaemonInterruptedCardRetry(t *testing.T) {
	srv := startFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")
	stop := startServe(t, c)
	go c.run("", "call", "mcp__fx__ask", "{}", "--yes")
	pending := waitCard(t, c, "pending")
	// A crash: the daemon dies with the question open. A clean stop would
	// cancel the call and close the card as cancelled, so the card is put
	// back as the crash leaves it.
	st, err := store.Open(t.Context(), c.dir, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := st.GetKV(t.Context(), elicit.Namespace, pending)
	if err != nil {
		t.Fatal(err)
	}
	stop()
	if err := st.PutKV(t.Context(), elicit.Namespace, pending, raw); err != nil {
		t.Fatal(err)
	}
	st.Close()

	startServe(t, c)
	id := waitCard(t, c, "interrupted")
	if n := srv.Executions("ask"); n != 1 {
		t.Fatalf("ask ran %d times before the retry", n)
	}
	c.fail(exitFail, "needs your confirmation", "elicitations", "retry", id) // no terminal, no --yes
	if n := srv.Executions("ask"); n != 1 {
		t.Fatalf("an unconfirmed retry re-sent the call (%d runs)", n)
	}
	retried := make(chan result, 1)
	go func() { retried <- c.run("", "elicitations", "retry", id, "--yes") }()
	again := waitCard(t, c, "pending") // the re-sent call asks again
	c.ok("elicitations", "answer", again, "accept", `{"name":"Bob"}`)
	if r := <-retried; r.code != 0 || strings.TrimSpace(r.out) != "hello Bob (42)" {
		t.Fatalf("retry through the daemon: %s", r)
	}
	if n := srv.Executions("ask"); n != 2 {
		t.Fatalf("ask ran %d times, want 2 (original + one confirmed re-send)", n)
	}
	c.fail(exitFail, "", "elicitations", "retry", id, "--yes") // only once
}
