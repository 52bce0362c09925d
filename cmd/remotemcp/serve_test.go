package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/daemon"
	"github.com/remotemcp/remotemcp/elicit"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
	"github.com/remotemcp/remotemcp/store"
)

// With "remotemcp serve" running on a data directory, the CLI goes
// through it: the session and its state are the daemon's, and they outlive
// each command.
func TestServeAndCLIThroughDaemon(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
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
	waitDaemon(t, c, &errb)
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
	testkit.WaitFor(t, "a pending card through the daemon", func() bool {
		var cards []localapi.Card
		if r := c.ok("elicitations", "list", "--json"); json.Unmarshal([]byte(r.out), &cards) == nil && len(cards) == 1 && cards[0].Status == "pending" {
			cardID = cards[0].ID
		}
		return cardID != ""
	})
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
	waitDaemon(t, c, &errb)
	return stop
}

// waitDaemon waits until the daemon of c's data directory answers,
// showing what serve wrote to stderr when it never does.
func waitDaemon(t *testing.T, c *cli, errb *syncBuffer) {
	t.Helper()
	defer func() {
		if t.Failed() {
			t.Logf("serve's stderr: %s", errb.String())
		}
	}()
	testkit.WaitFor(t, "the daemon to come up", func() bool {
		dc, err := daemon.Dial(t.Context(), c.dir)
		if err != nil {
			return false
		}
		dc.CloseIdleConnections()
		return true
	})
}

// waitCard waits for one card with the given status through the CLI.
func waitCard(t *testing.T, c *cli, status string) string {
	t.Helper()
	defer func() {
		if t.Failed() {
			r := c.run("", "--no-daemon", "elicitations", "list", "--json")
			r2 := c.run("", "elicitations", "list", "--json")
			t.Logf("store view: %s\ndaemon view: %s", r, r2)
		}
	}()
	var id string
	testkit.WaitFor(t, "a "+status+" card", func() bool {
		var cards []localapi.Card
		if r := c.run("", "elicitations", "list", "--json"); r.code == 0 && json.Unmarshal([]byte(r.out), &cards) == nil {
			for _, cd := range cards {
				if string(cd.Status) == status {
					id = cd.ID
					return true
				}
			}
		}
		return false
	})
	return id
}

// With the daemon, a question left open when the daemon stops becomes
// an interrupted card; the call is re-sent only after the person confirms,
// once, through the daemon.
func TestDaemonInterruptedCardRetry(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
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

// startServeArgs runs "serve ARGS" until stop (or the test's end) and
// waits for its daemon; stop returns what it printed.
func startServeArgs(t *testing.T, c *cli, args ...string) (stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--data-dir", c.dir, "serve"}, args...),
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	var res *result
	stop = func() result {
		if res != nil {
			return *res
		}
		cancel()
		r := result{code: -1}
		select {
		case r.code = <-done:
		case <-time.After(30 * time.Second):
			t.Error("serve did not stop")
		}
		r.out, r.err = out.String(), errb.String()
		res = &r
		return r
	}
	t.Cleanup(func() { stop() })
	testkit.WaitFor(t, "the daemon", func() bool {
		select {
		case code := <-done:
			t.Fatalf("serve exited %d: %s", code, errb.String())
		default:
		}
		dc, err := daemon.Dial(t.Context(), c.dir)
		if err != nil {
			return false
		}
		dc.CloseIdleConnections()
		// --demo adds its server after the daemon answers.
		return !slices.Contains(args, "--demo") || strings.Contains(errb.String(), "open the settings page")
	})
	return stop
}

// Issue #19 item 8: "serve --demo" beside an existing server "demo" adds
// its own as "demo-2" and leaves "demo" alone; it prints what it did and
// what to try next; the line it prints works; when serve stops, the demo
// server and its origin's grant are gone.
func TestServeDemoChangesNothingItDidNotCreate(t *testing.T) {
	f := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "demo", f.URL())
	servers := serverConfigs(t, c)
	grants := c.ok("grants", "list", "--json").out

	stop := startServeArgs(t, c, "--addr", "127.0.0.1:0", "--demo")
	var list []localapi.Server
	if err := json.Unmarshal([]byte(c.ok("servers", "list", "--json").out), &list); err != nil {
		t.Fatal(err)
	}
	var demo2 *localapi.Server
	for i, s := range list {
		switch s.ID {
		case "demo":
			if s.URL != f.URL() {
				t.Fatalf("serve --demo changed the existing demo: %s", s.URL)
			}
		case "demo-2":
			demo2 = &list[i]
		}
	}
	if len(list) != 2 || demo2 == nil {
		t.Fatalf("servers: %+v", list)
	}
	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	r := c.ok("call", "mcp__demo-2__echo", `{"text":"hi"}`, "--yes")
	if !strings.Contains(r.out, "hi") {
		t.Fatalf("call the demo: %s", r)
	}
	r = stop()
	if r.code != exitOK {
		t.Fatalf("serve --demo: %s", r)
	}
	// The data directory is not the default, so the lines to try name it.
	rm := "remotemcp --data-dir " + c.dir
	for _, want := range []string{in.URL, `added the demo server "demo-2"`, rm + ` call mcp__demo-2__echo '{"text":"hi"}' --yes`, rm + " hosts connect HOST"} {
		if !strings.Contains(r.err, want) {
			t.Fatalf("serve --demo does not say %q: %s", want, r)
		}
	}
	if after := serverConfigs(t, c); after != servers {
		t.Fatalf("servers after serve --demo:\n%s\nbefore:\n%s", after, servers)
	}
	if after := c.ok("grants", "list", "--json").out; after != grants {
		t.Fatalf("grants after serve --demo:\n%s\nbefore:\n%s", after, grants)
	}
}

// Issue #19 items 2 and 8: a second serve on the data directory of a
// running daemon is refused as "another daemon owns it" (pid, page URL),
// not as a port problem, and its --demo adds nothing.
func TestSecondServeNamesTheDaemonAndWritesNothing(t *testing.T) {
	c := newCLI(t)
	startServe(t, c)
	in, err := daemon.Running(t.Context(), c.dir)
	if err != nil {
		t.Fatal(err)
	}
	before := serverConfigs(t, c)
	r := c.run("", "serve", "--addr", "127.0.0.1:0", "--demo")
	if r.code == exitOK || !strings.Contains(r.err, fmt.Sprintf("a daemon (pid %d, settings page %s)", in.PID, in.URL)) ||
		strings.Contains(r.err, "port") || strings.Contains(r.err, "--addr") {
		t.Fatalf("second serve: %s", r)
	}
	if after := serverConfigs(t, c); after != before {
		t.Fatalf("a refused serve --demo changed the servers: %s", after)
	}
}

// serverConfigs is every server's id, URL and config revision: what a
// change to the configuration changes, and a connection does not.
func serverConfigs(t *testing.T, c *cli) string {
	t.Helper()
	var list []localapi.Server
	if err := json.Unmarshal([]byte(c.ok("servers", "list", "--json").out), &list); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range list {
		fmt.Fprintf(&b, "%s %s %d\n", s.ID, s.URL, s.Revision)
	}
	return b.String()
}
