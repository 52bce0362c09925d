package main

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// Custom headers (issue #11 item 6, SPEC §9 A2): every value is a secret.
// It never shows in output, -v logs, --json, error messages or the
// database in clear; the view shows the names only.

// noValue fails the test if any of the values shows in r.
func noValue(t *testing.T, r result, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(r.out+r.err, v) {
			t.Fatalf("a header value shows in the output:\n%s", r)
		}
	}
}

// showJSON parses `servers show ID --json`.
func (c *cli) showJSON(id string) (localapi.Server, string) {
	c.t.Helper()
	r := c.ok("servers", "show", id, "--json")
	var s localapi.Server
	if err := json.Unmarshal([]byte(r.out), &s); err != nil {
		c.t.Fatalf("%v\n%s", err, r.out)
	}
	return s, r.out
}

func TestServersHeadersAddSetShow(t *testing.T) {
	const (
		key     = "hdr-key-SECRET-51a9"
		stdin   = "hdr-stdin-SECRET-0c3e"
		rotated = "hdr-rotated-SECRET-77f2"
	)
	secrets := []string{key, stdin, rotated, "SECRET"}
	c := newCLI(t)
	c.env["API_KEY"] = key
	c.env["NEW_KEY"] = rotated

	r := c.run(stdin+"\n", "servers", "add", "api", "https://api.example.com/mcp", "--lazy",
		"--header-env", "X-Api-Key=API_KEY", "--header-stdin", "X-Session-Key", "--header", "X-Tenant: acme",
		"--protocol-version", "2025-06-18", "--log-level", "info")
	if r.code != 0 {
		t.Fatalf("add: %s", r)
	}
	noValue(t, r, secrets...)
	if !strings.Contains(r.out, "added api https://api.example.com/mcp (headers X-Api-Key, X-Session-Key, X-Tenant stored sealed)\n") {
		t.Fatalf("add output: %s", r)
	}
	// Plain --header warns that argv is visible, and says what to use.
	if !strings.Contains(r.err, "warning: --header X-Tenant puts the value on the command line") || !strings.Contains(r.err, "--header-env X-Tenant=VAR") {
		t.Fatalf("no argv warning for --header: %s", r)
	}
	if strings.Count(r.err, "warning:") != 1 {
		t.Fatalf("only --header warns: %s", r)
	}

	r = c.ok("servers", "show", "api")
	noValue(t, r, secrets...)
	for _, want := range []string{"headers:       X-Api-Key, X-Session-Key, X-Tenant (stored sealed)", "protocol:      2025-06-18", "log level:     info"} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("show lacks %q:\n%s", want, r.out)
		}
	}
	if strings.Contains(r.out, "acme") {
		t.Fatalf("show prints a value given with --header: %s", r.out)
	}
	s, raw := c.showJSON("api")
	if !slices.Equal(s.HeaderNames, []string{"X-Api-Key", "X-Session-Key", "X-Tenant"}) || s.ProtocolVersion != "2025-06-18" || s.LogLevel != "info" {
		t.Fatalf("show --json: %s", raw)
	}
	if strings.Contains(raw, key) || strings.Contains(raw, stdin) || strings.Contains(raw, "acme") || strings.Contains(raw, `"headers"`) {
		t.Fatalf("show --json carries header values: %s", raw)
	}
	for _, args := range [][]string{{"servers", "list"}, {"servers", "list", "--json"}, {"status", "--json"}, {"-v", "servers", "list"}} {
		noValue(t, c.run("", args...), append(secrets, "acme")...)
	}

	// set: replace one value (a new name spelling replaces the old), remove
	// one, reset the pin; the others stay.
	r = c.ok("servers", "set", "api", "--header-env", "x-api-key=NEW_KEY", "--unset-header", "X-Tenant", "--protocol-version", "default")
	noValue(t, r, secrets...)
	if !strings.Contains(r.out, "updated api: protocol version, header x-api-key, removed header X-Tenant") {
		t.Fatalf("set: %s", r)
	}
	s, _ = c.showJSON("api")
	if !slices.Equal(s.HeaderNames, []string{"X-Session-Key", "x-api-key"}) || s.ProtocolVersion != "" || s.LogLevel != "info" {
		t.Fatalf("after set: %+v", s)
	}
	// Removing a header that is not there warns and changes nothing.
	r = c.ok("servers", "set", "api", "--unset-header", "X-Nope")
	if !strings.Contains(r.err, `warning: server api has no header "X-Nope"`) || !strings.Contains(r.out, "nothing changed") {
		t.Fatalf("unset a missing header: %s", r)
	}
	c.ok("servers", "set", "api", "--log-level", "default", "--unset-header", "x-api-key", "--unset-header", "x-session-key")
	if s, raw := c.showJSON("api"); s.HeaderNames != nil || s.LogLevel != "" || strings.Contains(raw, "headerNames") {
		t.Fatalf("after removing every header: %s", raw)
	}

	for _, v := range []string{key, stdin, rotated, "acme"} {
		if c.dbContains(v) {
			t.Errorf("header value %q is readable in the database file", v)
		}
	}
}

// Names the transport owns are refused with the config's own message,
// for add and set, whatever the flag; nothing changes and the value never
// shows.
func TestServersHeaderRefusedNames(t *testing.T) {
	const secret = "refused-SECRET-value-4d2b"
	c := newCLI(t)
	c.env["V"] = secret
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--lazy")
	before := c.ok("servers", "list", "--json").out
	for _, tc := range []struct{ name, want string }{
		{"Authorization", `server x: headers.Authorization: cannot be set: remotemcp sends Authorization itself; use auth kind "bearer" or "oauth" instead`},
		{"authorization", "headers.authorization: cannot be set: remotemcp sends Authorization itself"},
		{"Host", "server x: headers.Host: cannot be set: the MCP transport owns this header"},
		{"Mcp-Session-Id", "headers.Mcp-Session-Id: cannot be set: the MCP transport owns this header"},
		{"MCP-Protocol-Version", "headers.MCP-Protocol-Version: cannot be set"},
		{"Content-Length", "headers.Content-Length: cannot be set"},
		{"Cookie", "headers.Cookie: cannot be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, args := range [][]string{
				{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", tc.name + "=V"},
				{"servers", "add", "x", "https://x.example.com/mcp", "--header", tc.name + ": " + secret},
			} {
				r := c.run("", args...)
				if r.code != exitFail || !strings.Contains(r.err, tc.want) {
					t.Fatalf("want exit %d and %q: %s", exitFail, tc.want, r)
				}
				if strings.Contains(r.err, secret) || strings.Contains(r.out, secret) {
					t.Fatalf("the value shows: %s", r)
				}
			}
			r := c.run(secret+"\n", "servers", "set", "api", "--header-stdin", tc.name)
			if r.code != exitFail || !strings.Contains(r.err, strings.Replace(tc.want, "server x", "server api", 1)) {
				t.Fatalf("set: %s", r)
			}
			noValue(t, r, secret)
		})
	}
	if c.ok("servers", "list", "--json").out != before {
		t.Fatal("a refused header changed the servers")
	}
	if c.dbContains(secret) {
		t.Fatal("a refused value reached the database")
	}
}

// Malformed header flags are refused before anything is stored, and a
// message never shows what may be a value.
func TestServersHeaderBadFlags(t *testing.T) {
	const secret = "bad-flag-SECRET-9e1f"
	c := newCLI(t)
	c.env["V"] = secret
	c.env["EMPTY"] = " "
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--lazy")
	before := c.ok("servers", "list", "--json").out
	for _, tc := range []struct {
		name  string
		stdin string
		code  int
		want  string
		args  []string
	}{
		{"no colon", "", exitUsage, "--header wants 'Name: value'", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header", secret}},
		{"value in the name", "", exitUsage, "a header name is made of letters", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header", "X-Key " + secret + ": v"}},
		{"env without var", "", exitUsage, "--header-env wants Name=VAR", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", "X-Key"}},
		{"env name with value", "", exitUsage, "a header name is made of letters", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", "X-Key:" + secret + "=V"}},
		{"env unset", "", exitFail, "--header-env X-Key: environment variable NOPE is not set", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", "X-Key=NOPE"}},
		{"env empty", "", exitFail, "environment variable EMPTY is empty", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", "X-Key=EMPTY"}},
		{"stdin empty", "", exitFail, "--header-stdin X-Key: stdin gave no value", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-stdin", "X-Key"}},
		{"stdin with value", "", exitUsage, "--header-stdin wants only the header's name", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-stdin", "X-Key=" + secret}},
		{"twice", "", exitUsage, "header x-key is given twice", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-env", "X-Key=V", "--header-env", "x-key=V"}},
		{"set and unset", "", exitUsage, "header X-Key is both set and removed", []string{"servers", "set", "api", "--header-env", "X-Key=V", "--unset-header", "x-key"}},
		{"control character", secret + "\x01\n", exitFail, "server x: headers.X-Key: value contains a control character", []string{"servers", "add", "x", "https://x.example.com/mcp", "--header-stdin", "X-Key"}},
		{"bad protocol", "", exitFail, `protocolVersion: "2024-11-05" is not a revision remotemcp speaks`, []string{"servers", "add", "x", "https://x.example.com/mcp", "--protocol-version", "2024-11-05"}},
		{"bad log level", "", exitFail, `logLevel: "loud" is not a log level`, []string{"servers", "set", "api", "--log-level", "loud"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := c.run(tc.stdin, tc.args...)
			if r.code != tc.code || !strings.Contains(r.err, tc.want) {
				t.Fatalf("want exit %d and %q: %s", tc.code, tc.want, r)
			}
			noValue(t, r, secret)
			if c.ok("servers", "list", "--json").out != before {
				t.Fatal("the servers changed")
			}
		})
	}
}

// A URL change to another resource does not carry header values along
// (like a bearer token): it is refused, saying what to do, until the
// values are given again or the headers removed.
func TestServersSetHeaderRebind(t *testing.T) {
	const old, fresh = "old-SECRET-hdr-1b7c", "new-SECRET-hdr-6a0d"
	c := newCLI(t)
	c.env["OLD"], c.env["NEW"] = old, fresh
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--lazy", "--header-env", "X-Api-Key=OLD", "--header-env", "X-Team=OLD")
	before := c.ok("servers", "list", "--json").out

	r := c.fail(exitFail, "re-supply the header values", "servers", "set", "api", "--url", "https://other.example.com/mcp")
	noValue(t, r, old)
	for _, want := range []string{"X-Api-Key, X-Team", "nothing was changed", "--header-env NAME=VAR", "--unset-header NAME"} {
		if !strings.Contains(r.err, want) {
			t.Fatalf("rebind error lacks %q: %s", want, r)
		}
	}
	// Giving one again is not enough while the other would follow.
	r = c.fail(exitFail, "X-Team", "servers", "set", "api", "--url", "https://other.example.com/mcp", "--header-env", "X-Api-Key=NEW")
	if strings.Contains(r.err, "X-Api-Key,") {
		t.Fatalf("the re-supplied header is still named: %s", r)
	}
	if c.ok("servers", "list", "--json").out != before {
		t.Fatal("a refused URL change changed the server")
	}
	// The same resource, spelled otherwise, keeps them.
	c.ok("servers", "set", "api", "--url", "https://API.example.com:443/mcp")

	r = c.ok("servers", "set", "api", "--url", "https://other.example.com/mcp", "--header-env", "X-Api-Key=NEW", "--unset-header", "X-Team")
	if !strings.Contains(r.out, "updated api: url, header X-Api-Key, removed header X-Team") {
		t.Fatalf("set: %s", r)
	}
	// Giving the same value again for the new URL is a deliberate choice.
	r = c.ok("servers", "set", "api", "--url", "https://third.example.com/mcp", "--header-env", "X-Api-Key=NEW")
	noValue(t, r, old, fresh)
	if s, _ := c.showJSON("api"); s.URL != "https://third.example.com/mcp" || !slices.Equal(s.HeaderNames, []string{"X-Api-Key"}) {
		t.Fatalf("after rebind: %+v", s)
	}
	if c.dbContains(old) || c.dbContains(fresh) {
		t.Fatal("a header value is readable in the database file")
	}
}

// The header reaches the MCP endpoint, and its value shows nowhere: not
// in -v logs, status, logs, show or list, plain or --json.
func TestServersHeadersSentAndRedacted(t *testing.T) {
	const key = "sent-SECRET-key-3f8a"
	srv := testkit.StartFixture(t, fixture.Options{Authorize: func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("X-Api-Key") != key {
			http.Error(w, "missing API key", http.StatusForbidden)
			return false
		}
		return true
	}})
	c := newCLI(t)
	c.env["KEY"] = key
	var all []result
	all = append(all, c.ok("servers", "add", "fx", srv.URL(), "--header-env", "X-Api-Key=KEY", "--header", "X-Tenant: acme"))
	all = append(all,
		c.ok("-v", "connect", "fx"),
		c.ok("-v", "status", "fx", "--timeout", "10s"),
		c.ok("status", "--json"),
		c.ok("-v", "tools", "--json"),
		c.ok("logs", "fx"),
		c.ok("logs", "fx", "--json"),
		c.ok("servers", "show", "fx", "--json"),
		c.ok("servers", "list", "--json"),
		c.ok("-v", "servers", "set", "fx", "--name", "Fixture"),
	)
	for _, r := range all {
		noValue(t, r, key)
	}
	reqs := srv.Requests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the server")
	}
	for _, r := range reqs {
		if r.Header.Get("X-Api-Key") != key || r.Header.Get("X-Tenant") != "acme" || r.Denied {
			t.Fatalf("%s %s: X-Api-Key %q, X-Tenant %q, denied %v", r.Method, r.Path, r.Header.Get("X-Api-Key"), r.Header.Get("X-Tenant"), r.Denied)
		}
	}
	if c.dbContains(key) {
		t.Fatal("the header value is readable in the database file")
	}

	// Without the header the server refuses: the header is what made it work.
	c.ok("servers", "add", "bare", srv.URL())
	r := c.run("", "-v", "connect", "bare")
	if r.code == 0 {
		t.Fatalf("connect without the key succeeded: %s", r)
	}
	noValue(t, r, key)
}

// An import keeps custom headers, expands ${VAR} and ${env:VAR} from this
// environment, seals the values, reports the names, and never shows a
// value, also when a variable is missing.
func TestServersImportHeaders(t *testing.T) {
	const key, rotated = "import-SECRET-key-2c6e", "import-SECRET-rotated-8d1b"
	c := newCLI(t)
	c.env["SEARCH_KEY"] = key
	doc := `{"mcpServers": {
		"search": {"type": "http", "url": "https://search.example.com/mcp",
			"headers": {"X-Api-Key": "${SEARCH_KEY}", "X-Tenant": "${TENANT:-acme}", "X-Region": "${env:SEARCH_KEY}"}},
		"broken": {"type": "http", "url": "https://broken.example.com/mcp", "headers": {"X-Api-Key": "${MISSING_KEY}"}},
		"owned": {"type": "http", "url": "https://owned.example.com/mcp", "headers": {"Mcp-Session-Id": "${SEARCH_KEY}"}}
	}}`
	file := writeFile(t, "claude.json", doc)
	r := c.ok("servers", "import", file)
	noValue(t, r, key)
	for _, want := range []string{
		"added search https://search.example.com/mcp (auth auto, headers X-Api-Key, X-Region, X-Tenant stored sealed)\n",
		"skipped broken: header X-Api-Key: environment variable MISSING_KEY is not set",
		"skipped owned: server owned: headers.Mcp-Session-Id: cannot be set: the MCP transport owns this header",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("import lacks %q: %s", want, r)
		}
	}
	if s, raw := c.showJSON("search"); !slices.Equal(s.HeaderNames, []string{"X-Api-Key", "X-Region", "X-Tenant"}) || strings.Contains(raw, key) {
		t.Fatalf("show imported: %s", raw)
	}
	// The same document again: unchanged (the values are compared sealed
	// side by side, not shown).
	if r = c.ok("servers", "import", file); !strings.Contains(r.out, "unchanged search") {
		t.Fatalf("re-import: %s", r)
	}
	// A rotated key is a conflict until --update replaces it.
	c.env["SEARCH_KEY"] = rotated
	r = c.fail(exitFail, "--update", "servers", "import", file)
	noValue(t, r, key, rotated)
	if !strings.Contains(r.out, "conflict search") {
		t.Fatalf("rotated key: %s", r)
	}
	r = c.ok("servers", "import", file, "--update")
	if !strings.Contains(r.out, "updated search") {
		t.Fatalf("import --update: %s", r)
	}
	noValue(t, r, key, rotated)
	for _, v := range []string{key, rotated} {
		if c.dbContains(v) {
			t.Errorf("imported header value %q is readable in the database file", v)
		}
	}
}
