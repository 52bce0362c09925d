package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/oidctest"
	"github.com/remotemcp/remotemcp/internal/pgtest"
	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// startGateway runs "serve --store DSN" in the background on c's data
// directory until the test ends, and waits for its socket.
func startGateway(t *testing.T, c *cli, dsn string, extra ...string) *syncBuffer {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"--data-dir", c.dir, "serve", "--store", dsn, "--addr", "127.0.0.1:0"}, extra...),
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(time.Minute):
			t.Error("serve --store did not stop")
		}
	})
	waitDaemon(t, c, &errb)
	return &errb
}

// The admins' CLI on a gateway (issue #22, SPEC §9 A11): users are added,
// listed and removed; --user acts for one person, whose servers the other
// never sees; a command without --user names the people and exits 2;
// --user is refused where there is no gateway.
func TestGatewayCLI(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	errb := startGateway(t, c, pgtest.DSN(t))
	if !strings.Contains(errb.String(), "remotemcp gateway for 0 user(s)") {
		t.Fatalf("serve --store says nothing of the gateway: %s", errb.String())
	}

	c.fail(exitUsage, "has no users yet", "servers", "list")
	c.ok("users", "add", "Alice@Example.com")
	c.ok("users", "add", "bob@example.com")
	c.fail(exitFail, "is a user of this gateway already", "users", "add", "alice@example.com")
	c.fail(exitFail, "not an email address", "users", "add", "not-an-email")
	var users []localapi.User
	if r := c.ok("users", "list", "--json"); json.Unmarshal([]byte(r.out), &users) != nil || len(users) != 2 ||
		users[0].Email != "alice@example.com" || users[1].Email != "bob@example.com" {
		t.Fatalf("users list: %s", r)
	}

	// Without --user a person's command names the people and exits 2.
	r := c.fail(exitUsage, "--user EMAIL", "tools")
	if !strings.Contains(r.err, "alice@example.com, bob@example.com") {
		t.Fatalf("the refusal does not name the users: %s", r)
	}
	c.fail(exitFail, `no user "carol@example.com"`, "--user", "carol@example.com", "servers", "list")
	c.fail(exitFail, "do not go together", "--user", "alice@example.com", "--no-daemon", "servers", "list")

	alice := []string{"--user", "alice@example.com"}
	bob := []string{"--user", "bob@example.com"}
	c.ok(append(alice, "servers", "add", "fx", srv.URL())...)
	if r := c.ok(append(alice, "call", "mcp__fx__echo", `{"text":"alice's"}`, "--yes")...); strings.TrimSpace(r.out) != "alice's" {
		t.Fatalf("alice's call: %s", r)
	}
	if r := c.ok(append(bob, "servers", "list", "--json")...); strings.TrimSpace(r.out) != "[]" {
		t.Fatalf("bob sees alice's servers: %s", r)
	}
	if r := c.run("", append(bob, "tools", "--json")...); strings.Contains(r.out+r.err, "fx") {
		t.Fatalf("bob sees alice's tools: %s", r)
	}
	c.fail(exitFail, "", append(bob, "call", "mcp__fx__echo", `{"text":"bob's"}`, "--yes")...)
	if n := srv.Executions("echo"); n != 1 {
		t.Fatalf("echo ran %d times, want 1 (alice's only)", n)
	}
	// Each person's host tokens are their own.
	c.ok(append(alice, "mcp", "token", "create", "laptop")...)
	if r := c.ok(append(bob, "mcp", "token", "list", "--json")...); strings.Contains(r.out, "laptop") {
		t.Fatalf("bob sees alice's token: %s", r)
	}

	// The admins see how many servers each person has, never which.
	if r := c.ok("users", "list"); !strings.Contains(r.out, "SERVERS") || strings.Contains(r.out, srv.URL()) || strings.Contains(r.out, "fx") {
		t.Fatalf("users list shows more than counts: %s", r)
	}
	if r := c.ok("users", "list", "--json"); !strings.Contains(r.out, `"servers": 1`) {
		t.Fatalf("users list --json has no server count: %s", r)
	}
	c.ok("users", "remove", "alice@example.com")
	c.fail(exitFail, `no user "alice@example.com"`, append(alice, "servers", "list")...)
	c.ok("users", "add", "alice@example.com")
	if r := c.ok(append(alice, "servers", "list", "--json")...); strings.TrimSpace(r.out) != "[]" {
		t.Fatalf("a removed and re-added person got their old servers back: %s", r)
	}
}

// --user needs a gateway: a personal daemon refuses it, and without any
// daemon the command says to start the gateway.
func TestUserFlagWithoutGateway(t *testing.T) {
	c := newCLI(t)
	c.fail(exitFail, "no daemon runs on this data directory", "--user", "alice@example.com", "servers", "list")
	c.fail(exitFail, "no daemon runs on this data directory", "users", "list")

	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx, []string{"--data-dir", c.dir, "serve", "--addr", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	t.Cleanup(func() { cancel(); <-done })
	waitDaemon(t, c, &errb)
	c.fail(exitFail, "--user is for a gateway", "--user", "alice@example.com", "servers", "list")
}

// serve --store fails at once, naming the step, where waiting cannot help
// (a database that does not exist), and refuses --demo.
func TestServeStoreRefusals(t *testing.T) {
	c := newCLI(t)
	dsn := pgtest.DSN(t)
	missing := strings.Replace(dsn, "postgres:///", "postgres:///no_such_database_", 1)
	c.fail(exitFail, "open the gateway's database", "serve", "--store", missing, "--addr", "127.0.0.1:0")
	c.fail(exitFail, "--demo", "serve", "--store", dsn, "--demo", "--addr", "127.0.0.1:0")
}

// PostgreSQL down at start: serve waits, says so, and comes up once the
// database does (issue #22 "Bad input and faults").
func TestGatewayWaitsForPostgres(t *testing.T) {
	cluster := pgtest.NewCluster(t)
	dsn := cluster.DSN(t)
	cluster.Stop(t)
	c := newCLI(t)
	ctx, cancel := context.WithCancel(t.Context())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--data-dir", c.dir, "serve", "--store", dsn, "--addr", "127.0.0.1:0"},
			Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, func(string) (string, bool) { return "", false })
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	testkit.WaitFor(t, "serve to say it waits for PostgreSQL", func() bool {
		return strings.Contains(errb.String(), "PostgreSQL cannot be reached yet")
	})
	cluster.Start(t)
	waitDaemon(t, c, &errb)
	c.ok("users", "add", "alice@example.com")
}

// PostgreSQL down while running: a person's calls to a connected server
// go on, and so do their host's; an edit fails and says why, writing
// nothing; once the database is back everything works again by itself.
func TestGatewayOutage(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	cluster := pgtest.NewCluster(t)
	c := newCLI(t)
	startGateway(t, c, cluster.DSN(t))
	c.ok("users", "add", "alice@example.com")
	alice := []string{"--user", "alice@example.com"}
	c.ok(append(alice, "servers", "add", "fx", srv.URL())...)
	c.ok(append(alice, "call", "mcp__fx__echo", `{"text":"before"}`, "--yes")...)
	// Connected: the engine's catalog holds the server's tools (it is
	// rebuilt from the store after the connect, which the outage below
	// must not interrupt).
	testkit.WaitFor(t, "alice's catalog to hold fx's tools", func() bool {
		r := c.run("", append(alice, "tools", "--json")...)
		return strings.Contains(r.out, "mcp__fx__echo")
	})

	cluster.Stop(t)
	if r := c.ok(append(alice, "call", "mcp__fx__echo", `{"text":"during"}`, "--yes")...); strings.TrimSpace(r.out) != "during" {
		t.Fatalf("a call to a connected server during the outage: %s", r)
	}
	r := c.fail(exitFail, "", append(alice, "servers", "add", "fx2", srv.URL())...)
	if !strings.Contains(r.err, "store: ") || !strings.Contains(r.err, "cannot be reached; nothing was written") {
		t.Fatalf("the failed edit does not say what failed and why: %s", r)
	}

	cluster.Start(t)
	c.ok(append(alice, "servers", "add", "fx2", srv.URL())...)
	var rows []localapi.Server
	if r := c.ok(append(alice, "servers", "list", "--json")...); json.Unmarshal([]byte(r.out), &rows) != nil || len(rows) != 2 {
		t.Fatalf("after the outage: %s", r)
	}
	if n := srv.Executions("echo"); n != 2 {
		t.Fatalf("echo ran %d times, want 2", n)
	}
}

// Shared servers (issue #22): an admin shares a server; every person has
// it, with their own sign-in and their own hidden/tool switches; nobody
// but the admins removes it; it carries no secret.
func TestGatewaySharedServers(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	startGateway(t, c, pgtest.DSN(t))
	c.ok("users", "add", "alice@example.com")
	alice := []string{"--user", "alice@example.com"}
	bob := []string{"--user", "bob@example.com"}
	// Alice's engine is open before the share; bob is added after it.
	c.ok(append(alice, "servers", "list")...)
	c.env["TOK"] = "secret-token"
	c.fail(exitFail, "carries no secret", "servers", "add", "team", srv.URL(), "--shared", "--bearer-env", "TOK")
	c.fail(exitUsage, "leave out --user", append(alice, "servers", "add", "team", srv.URL(), "--shared")...)
	if r := c.ok("servers", "add", "team", srv.URL(), "--shared"); !strings.Contains(r.out, "shared team") {
		t.Fatalf("share: %s", r)
	}
	c.ok("users", "add", "bob@example.com")
	if r := c.ok("servers", "list", "--shared", "--json"); !strings.Contains(r.out, `"id": "team"`) {
		t.Fatalf("servers list --shared: %s", r)
	}
	for _, who := range [][]string{alice, bob} {
		if r := c.ok(append(who, "call", "mcp__team__echo", `{"text":"hi"}`, "--yes")...); strings.TrimSpace(r.out) != "hi" {
			t.Fatalf("%s calls the shared server: %s", who[1], r)
		}
	}
	c.fail(exitFail, "shared by the gateway's admins", append(bob, "servers", "rm", "team")...)
	// Alice hides it for herself; bob still has it, and a change of the
	// definition keeps alice's choice.
	c.ok(append(alice, "servers", "disable", "team")...)
	c.ok("servers", "add", "team", srv.URL(), "--shared", "--name", "Team server")
	var rows []localapi.Server
	if r := c.ok(append(alice, "servers", "list", "--json")...); json.Unmarshal([]byte(r.out), &rows) != nil || len(rows) != 1 || rows[0].Enabled || rows[0].Name != "Team server" {
		t.Fatalf("alice's copy after the admins' change: %s", r)
	}
	if r := c.ok(append(bob, "call", "mcp__team__echo", `{"text":"still"}`, "--yes")...); strings.TrimSpace(r.out) != "still" {
		t.Fatalf("bob after alice hid it: %s", r)
	}
	c.ok("servers", "rm", "team", "--shared")
	for _, who := range [][]string{alice, bob} {
		if r := c.ok(append(who, "servers", "list", "--json")...); strings.TrimSpace(r.out) != "[]" {
			t.Fatalf("%s after the share ended: %s", who[1], r)
		}
	}
}

// Issue #22 acceptance, "a third host signs in by OAuth against the same
// provider": serve --store with --oidc-issuer and --mcp-http makes the
// endpoint a protected resource of that provider, for its own URL (no
// --mcp-public-url) and says so; a host with the provider's access
// token for that URL reaches its person's server, and a person's
// remotemcp token still works beside it.
func TestGatewayHostSignsInByOAuth(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	prov := oidctest.Start(t)
	c := newCLI(t)
	mcpURL := fmt.Sprintf("http://127.0.0.1:%d/mcp", freePort(t))
	errb := startGateway(t, c, pgtest.DSN(t), "--mcp-http", strings.TrimSuffix(strings.TrimPrefix(mcpURL, "http://"), "/mcp"),
		"--oidc-issuer", prov.Issuer, "--oidc-client-id", oidctest.ClientID)
	want := fmt.Sprintf("or signs in by OAuth with %s, for the resource %s (hosts find how at %s)", prov.Issuer, mcpURL,
		strings.TrimSuffix(mcpURL, "/mcp")+"/.well-known/oauth-protected-resource/mcp")
	testkit.WaitFor(t, "serve to describe the MCP endpoint", func() bool { return strings.Contains(errb.String(), want) })

	alice := []string{"--user", oidctest.Alice.Email}
	c.ok("users", "add", oidctest.Alice.Email)
	c.ok(append(alice, "servers", "add", "fx", srv.URL())...)
	prov.AddJWTClient(oidctest.JWTClient{ID: mcpURL, Secret: "host-secret", RedirectURIs: []string{"http://127.0.0.1:1/cb"}})
	tok, err := prov.AccessToken(t.Context(), mcpURL, "host-secret", "http://127.0.0.1:1/cb", oidctest.Alice, "openid", "email")
	if err != nil {
		t.Fatal(err)
	}
	rmcp := lastLine(c.ok(append(alice, "mcp", "token", "create", "laptop")...).out)
	for _, bearer := range []string{tok, rmcp} {
		cs := connectHTTP(t, mcpURL, bearer)
		res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "fx__echo", Arguments: map[string]any{"text": "hi"}})
		if err != nil || res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Fatalf("call fx__echo: %v %+v", err, res)
		}
	}
}
