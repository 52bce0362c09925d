package main

import (
	"regexp"
	"testing"

	"github.com/remotemcp/remotemcp/config"
)

// Approval and trust for the MCP front end (issue #13 item 5, SPEC §9 A2,
// A8): servers add/set --approval host|ask, --trusted / --untrusted, and
// servers show prints both.
func TestServersApprovalTrusted(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--lazy")
	showLine := func(key, want string) {
		t.Helper()
		r := c.ok("servers", "show", "api")
		if !regexp.MustCompile(`(?m)^` + key + `:\s+` + regexp.QuoteMeta(want)).MatchString(r.out) {
			t.Fatalf("show lacks %s: %s…:\n%s", key, want, r.out)
		}
	}
	showLine("approval", "host")
	showLine("trusted", "no")

	for _, tc := range []struct {
		name     string
		args     []string
		approval config.Approval
		trusted  bool
		out      string
	}{
		{"ask", []string{"--approval", "ask"}, config.ApprovalAsk, false, "updated api: approval\n"},
		{"trusted", []string{"--trusted"}, config.ApprovalAsk, true, "updated api: trusted\n"},
		{"both back", []string{"--approval", "default", "--untrusted"}, config.ApprovalHost, false, "updated api: approval, trusted\n"},
		{"unchanged", []string{"--approval", "host"}, config.ApprovalHost, false, "api: nothing changed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.ok(append([]string{"servers", "set", "api"}, tc.args...)...)
			if !regexp.MustCompile(regexp.QuoteMeta(tc.out)).MatchString(r.out) {
				t.Fatalf("set %v: %s", tc.args, r)
			}
			s, raw := c.showJSON("api")
			if s.Approval != tc.approval || s.Trusted != tc.trusted {
				t.Fatalf("after set %v: %s", tc.args, raw)
			}
		})
	}

	c.ok("servers", "add", "ask", "https://ask.example.com/mcp", "--lazy", "--approval", "ask", "--trusted")
	s, raw := c.showJSON("ask")
	if s.Approval != config.ApprovalAsk || !s.Trusted {
		t.Fatalf("add --approval ask --trusted: %s", raw)
	}
	r := c.ok("servers", "show", "ask")
	for _, want := range []string{`(?m)^approval:\s+ask \(remotemcp asks you`, `(?m)^trusted:\s+yes`} {
		if !regexp.MustCompile(want).MatchString(r.out) {
			t.Fatalf("show lacks %s:\n%s", want, r.out)
		}
	}
}

func TestServersApprovalBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--lazy")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"add unknown approval", []string{"servers", "add", "x", "https://x.example.com/mcp", "--approval", "always"}, `--approval "always": give host`},
		{"set unknown approval", []string{"servers", "set", "api", "--approval", "never"}, `--approval "never": give host`},
		{"set empty approval", []string{"servers", "set", "api", "--approval", ""}, "--approval is empty"},
		{"trusted and untrusted", []string{"servers", "set", "api", "--trusted", "--untrusted"}, "--trusted and --untrusted exclude each other"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.fail(2, tc.want, tc.args...)
		})
	}
	if s, raw := c.showJSON("api"); s.Approval != config.ApprovalHost || s.Trusted {
		t.Fatalf("a refused edit changed the server: %s", raw)
	}
}
