package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// "store copy" (issue #22, Moving in): its flags are required and say
// what they are for; it refuses a directory without a store and a
// source whose daemon runs; it adds the gateway user and the key file and
// says so, prints each step and a summary; a second copy, and a copy of
// the same host token into another user, are refused with nothing left
// behind; and the gateway then serves the person what they had.
func TestStoreCopyCLI(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	c.ok("mcp", "token", "create", "laptop")
	dsn := pgtest.DSN(t)
	gw := filepath.Join(t.TempDir(), "gateway")
	copyTo := func(user string, extra ...string) []string {
		return append([]string{"store", "copy", "--to", dsn, "--user", user, "--gateway-data-dir", gw}, extra...)
	}

	c.fail(exitUsage, "--to is required", "store", "copy", "--user", "alice@example.com", "--gateway-data-dir", gw)
	c.fail(exitUsage, "--user is required", "store", "copy", "--to", dsn, "--gateway-data-dir", gw)
	c.fail(exitUsage, "--gateway-data-dir is required: the gateway's data directory, which keeps the key file", "store", "copy", "--to", dsn, "--user", "alice@example.com")
	c.fail(exitUsage, "not an email address", copyTo("alice")...)
	c.fail(exitUsage, "unknown flag", copyTo("alice@example.com", "--merge")...)
	newCLI(t).fail(exitFail, "has no personal store", copyTo("alice@example.com")...)

	// Not while a daemon owns the personal store.
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"--data-dir", c.dir, "serve", "--addr", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	waitDaemon(t, c, &errb)
	c.fail(exitFail, "stop its daemon first", copyTo("alice@example.com")...)
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("serve did not stop")
	}

	r := c.ok(copyTo("Alice@Example.com")...)
	for _, want := range []string{
		"store copy: created the gateway's key file " + filepath.Join(gw, "key"),
		"store copy: added the gateway user alice@example.com (u_",
		"store copy: read the personal store: 1 server(s) (fx)",
		"store copy: checked the gateway user alice@example.com: no servers yet",
		"store copy: wrote everything",
		"store copy: verified: every secret opens for alice@example.com",
	} {
		if !strings.Contains(r.err, want) {
			t.Errorf("stderr lacks %q: %s", want, r)
		}
	}
	if !strings.HasPrefix(r.out, "copied 1 server(s) (fx), ") || !strings.Contains(r.out, "mcp-http-tokens 1") ||
		!strings.Contains(r.out, "into the gateway user alice@example.com; the personal store "+c.dir+" was left as it was") {
		t.Errorf("summary: %s", r)
	}

	c.fail(exitFail, "it has 1 server(s) already (fx); nothing was written", copyTo("alice@example.com")...)
	r = c.fail(exitFail, `the host token "laptop" of the personal store is a token of the gateway user alice@example.com already`, copyTo("bob@example.com")...)
	if !strings.Contains(r.err, "added the gateway user bob@example.com") || !strings.Contains(r.err, "removed the gateway user bob@example.com again") {
		t.Errorf("the refused copy did not remove the user it added: %s", r)
	}

	// The gateway, on its data directory with the key file, serves the
	// person their server (and its grant).
	g := &cli{t: t, dir: gw, env: map[string]string{}}
	startGateway(t, g, dsn)
	var users []localapi.User
	if r := g.ok("users", "list", "--json"); json.Unmarshal([]byte(r.out), &users) != nil || len(users) != 1 || users[0].Email != "alice@example.com" {
		t.Fatalf("users after the copies: %s", r)
	}
	if r := g.ok("--user", "alice@example.com", "call", "mcp__fx__echo", `{"text":"moved in"}`, "--yes"); strings.TrimSpace(r.out) != "moved in" {
		t.Fatalf("alice's call through the gateway: %s", r)
	}
	if r := g.ok("--user", "alice@example.com", "mcp", "token", "list", "--json"); !strings.Contains(r.out, `"laptop"`) {
		t.Fatalf("alice's host token did not move: %s", r)
	}
}
