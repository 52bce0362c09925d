package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/config"
	"github.com/remotemcp/remotemcp/localapi"
)

// Issue #19 item 1 (review): the advice for a pre-registered client whose
// redirect port cannot be used is "remotemcp servers set ID --port P".
// That command, alone, changes the redirect port only: the client id, the
// sealed client secret, the scopes and the client metadata URL stay.
// "--port default" (or 0) goes back to the default port. "auth login ID
// --port P" keeps them too.
func TestServersSetPortAloneKeepsTheAuth(t *testing.T) {
	const secret = "client-SECRET-5e0c71"
	c := newCLI(t)
	c.env["WIKI_SECRET"] = secret
	c.ok("servers", "add", "wiki", "http://127.0.0.1:1/mcp", "--auth", "oauth", "--client-id", "abc123",
		"--client-secret-env", "WIKI_SECRET", "--scope", "read", "--scope", "write", "--lazy")
	c.ok("servers", "add", "cimd", "http://127.0.0.1:1/mcp", "--auth", "oauth",
		"--client-metadata-url", "https://client.example.com/remotemcp.json", "--scope", "read", "--lazy")

	check := func(id string, port int, want localapi.AuthInfo) {
		t.Helper()
		s, raw := c.showJSON(id)
		want.RedirectPort = port
		if a := s.Auth; a.Kind != want.Kind || a.ClientID != want.ClientID || a.HasClientSecret != want.HasClientSecret ||
			!slices.Equal(a.Scopes, want.Scopes) || a.ClientMetadataURL != want.ClientMetadataURL || a.RedirectPort != want.RedirectPort {
			t.Fatalf("servers show %s --json: auth %+v, want %+v\n%s", id, a, want, raw)
		}
		if strings.Contains(raw, secret) {
			t.Fatalf("the client secret shows: %s", raw)
		}
	}
	wiki := localapi.AuthInfo{Kind: config.AuthOAuth, ClientID: "abc123", HasClientSecret: true, Scopes: []string{"read", "write"}}
	check("wiki", 0, wiki)

	r := c.ok("servers", "set", "wiki", "--port", "7790")
	if r.out != "updated wiki: redirect port 7790\n" {
		t.Fatalf("set --port: %s", r)
	}
	check("wiki", 7790, wiki)
	if r := c.ok("servers", "set", "wiki", "--port", "7790"); !strings.Contains(r.out, "nothing changed") {
		t.Fatalf("set --port again: %s", r)
	}
	r = c.ok("servers", "set", "wiki", "--port", "default")
	if r.out != "updated wiki: redirect port default (7717)\n" {
		t.Fatalf("set --port default: %s", r)
	}
	check("wiki", 0, wiki)
	c.ok("servers", "set", "wiki", "--port", "7791")
	c.ok("servers", "set", "wiki", "--port", "0")
	check("wiki", 0, wiki)

	// With another OAuth setting, --auth oauth is still needed, and it
	// replaces the section: the message says so.
	c.fail(exitUsage, "replaces the server's whole auth section", "servers", "set", "wiki", "--scope", "admin")
	check("wiki", 0, wiki)
	// A server without OAuth has no redirect port.
	c.ok("servers", "add", "plain", "https://plain.example.com/mcp", "--disabled")
	c.fail(exitUsage, `"remotemcp servers set plain --auth oauth --port 7790"`, "servers", "set", "plain", "--port", "7790")
	c.fail(exitUsage, "--port 70000: give a TCP port", "servers", "set", "wiki", "--port", "70000")

	// auth login --port remembers the port the same way; the sign-in
	// itself fails here (nothing listens), after the port was stored.
	cimd := localapi.AuthInfo{Kind: config.AuthOAuth, Scopes: []string{"read"}, ClientMetadataURL: "https://client.example.com/remotemcp.json"}
	check("cimd", 0, cimd)
	if r := c.run("", "auth", "login", "cimd", "--port", "7792", "--no-browser", "--timeout", "5s"); r.code == 0 {
		t.Fatalf("auth login against nothing succeeded: %s", r)
	}
	check("cimd", 7792, cimd)
	if r := c.run("", "auth", "login", "wiki", "--port", "7793", "--no-browser", "--timeout", "5s"); strings.Contains(r.err, "would drop the stored client secret") {
		t.Fatalf("auth login --port refused to keep the secret: %s", r)
	}
	check("wiki", 7793, wiki)
}
