package main

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/localapi"
)

func TestServersRoundTrip(t *testing.T) {
	c := newCLI(t)
	c.env["DOCS_TOKEN"] = "tok-docs-0123456789"

	r := c.ok("servers", "add", "docs", "https://mcp.example.com/mcp", "--name", "Docs", "--bearer-env", "DOCS_TOKEN", "--lazy")
	if r.out != "added docs https://mcp.example.com/mcp\ngranted https://mcp.example.com (adding a server allows its own origin)\n" {
		t.Fatalf("add: %s", r)
	}
	c.ok("servers", "add", "wiki", "https://wiki.example.com/mcp", "--oauth", "--client-id", "cid-1", "--scope", "read", "--scope", "write", "--disabled")
	r = c.run("tok-stdin-987654321\n", "servers", "add", "local", "http://127.0.0.1:9/mcp", "--bearer-stdin")
	if r.code != 0 {
		t.Fatalf("add --bearer-stdin: %s", r)
	}

	// A new root command over the same data directory sees the same
	// servers: nothing lives in the process.
	r = c.ok("servers", "list")
	for _, want := range []string{"docs", "Docs", "lazy", "bearer", "wiki", "oauth", "local", "STATE"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("list lacks %q:\n%s", want, r.out)
		}
	}
	lines := strings.Split(strings.TrimSpace(r.out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "docs") || !strings.HasPrefix(lines[3], "local") {
		t.Fatalf("list is not in insertion order with a header:\n%s", r.out)
	}

	// show: the config without secrets.
	r = c.ok("servers", "show", "docs")
	if !strings.Contains(r.out, "(stored sealed)") || strings.Contains(r.out, "tok-docs") {
		t.Fatalf("show must mark the token sealed and not print it:\n%s", r.out)
	}
	var shown map[string]any
	r = c.ok("servers", "show", "docs", "--json")
	if err := json.Unmarshal([]byte(r.out), &shown); err != nil {
		t.Fatal(err)
	}
	if auth := shown["auth"].(map[string]any); auth["kind"] != "bearer" || auth["hasToken"] != true || strings.Contains(r.out, "tok-docs") {
		t.Fatalf("show --json auth = %v", auth)
	}
	r = c.ok("servers", "show", "wiki", "--json")
	if !strings.Contains(r.out, `"clientId": "cid-1"`) || !strings.Contains(r.out, `"write"`) || !strings.Contains(r.out, `"enabled": false`) {
		t.Fatalf("show wiki:\n%s", r.out)
	}

	// enable / disable, idempotent.
	if r = c.ok("servers", "enable", "wiki"); r.out != "enabled wiki\n" {
		t.Fatalf("enable: %s", r)
	}
	if r = c.ok("servers", "enable", "wiki"); !strings.Contains(r.out, "already enabled") {
		t.Fatalf("enable again: %s", r)
	}
	if r = c.ok("servers", "disable", "docs"); r.out != "disabled docs\n" {
		t.Fatalf("disable: %s", r)
	}

	// set.
	r = c.ok("servers", "set", "docs", "--name", "Docs v2", "--startup", "--tool-timeout", "5m",
		"--disable-tool", "delete", "--disable-tool", "drop")
	if !strings.Contains(r.out, "updated docs: name, connect, tool timeout, disabled delete, disabled drop") {
		t.Fatalf("set: %s", r)
	}
	c.ok("servers", "set", "docs", "--enable-tool", "drop")
	r = c.ok("servers", "show", "docs", "--json")
	var docs struct {
		Name             string   `json:"name"`
		Enabled          bool     `json:"enabled"`
		ConnectOnStartup bool     `json:"connectOnStartup"`
		DisabledTools    []string `json:"disabledTools"`
		ToolTimeout      string   `json:"toolTimeout"`
	}
	if err := json.Unmarshal([]byte(r.out), &docs); err != nil {
		t.Fatal(err)
	}
	want := struct {
		Name             string   `json:"name"`
		Enabled          bool     `json:"enabled"`
		ConnectOnStartup bool     `json:"connectOnStartup"`
		DisabledTools    []string `json:"disabledTools"`
		ToolTimeout      string   `json:"toolTimeout"`
	}{"Docs v2", false, true, []string{"delete"}, "5m0s"}
	if !reflect.DeepEqual(docs, want) {
		t.Fatalf("after set: %+v, want %+v", docs, want)
	}
	if r = c.ok("servers", "set", "docs", "--startup"); !strings.Contains(r.out, "nothing changed") {
		t.Fatalf("set without a change: %s", r)
	}
	c.fail(exitUsage, "nothing to change", "servers", "set", "docs")
	c.fail(exitUsage, `--tool-timeout "48h": give a duration such as 5m or 90s (at most 24h0m0s), or default (60s)`, "servers", "set", "docs", "--tool-timeout", "48h")

	// rm.
	if r = c.ok("servers", "rm", "wiki"); r.out != "removed wiki\n" {
		t.Fatalf("rm: %s", r)
	}
	c.fail(exitFail, `no server "wiki"`, "servers", "rm", "wiki")
	c.fail(exitFail, `no server "nope"`, "servers", "show", "nope")
	c.fail(exitFail, `no server "nope"`, "servers", "enable", "nope")

	r = c.ok("servers", "list", "--json")
	var rows []localapi.Server
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		t.Fatal(err)
	}
	ids := []string{}
	for _, row := range rows {
		ids = append(ids, row.ID)
	}
	if !slices.Equal(ids, []string{"docs", "local"}) {
		t.Fatalf("ids after rm = %v", ids)
	}

	// Both tokens are sealed: not in the database in clear.
	for _, tok := range []string{"tok-docs-0123456789", "tok-stdin-987654321"} {
		if c.dbContains(tok) {
			t.Errorf("token %q is readable in the database file", tok)
		}
	}
}

func TestServersListJSONShape(t *testing.T) {
	c := newCLI(t)
	if r := c.ok("servers", "list", "--json"); strings.TrimSpace(r.out) != "[]" {
		t.Fatalf("empty list --json = %q, want []", r.out)
	}
	c.env["T"] = "abcdef0123456789"
	c.ok("servers", "add", "a", "https://a.example.com/mcp", "--bearer-env", "T")
	c.ok("servers", "add", "b", "https://b.example.com/mcp", "--oauth", "--lazy", "--disabled")
	c.ok("servers", "add", "c", "https://c.example.com/mcp")
	c.ok("servers", "set", "c", "--disable-tool", "x")

	r := c.ok("servers", "list", "--json")
	var got []localapi.Server
	if err := json.Unmarshal([]byte(r.out), &got); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	type row struct {
		ID, URL, Origin, Auth string
		Enabled, Startup      bool
		State                 localapi.State
		Disabled              []string
	}
	var rows []row
	for _, s := range got {
		rows = append(rows, row{s.ID, s.URL, s.Origin, string(s.Auth.Kind), s.Enabled, s.ConnectOnStartup, s.State, s.DisabledTools})
	}
	want := []row{
		{"a", "https://a.example.com/mcp", "https://a.example.com", "bearer", true, true, "disconnected", []string{}},
		{"b", "https://b.example.com/mcp", "https://b.example.com", "oauth", false, false, "disconnected", []string{}},
		{"c", "https://c.example.com/mcp", "https://c.example.com", "none", true, true, "disconnected", []string{"x"}},
	}
	if !reflect.DeepEqual(rows, want) {
		t.Fatalf("list --json =\n%+v\nwant\n%+v\n%s", rows, want, r.out)
	}
	if strings.Contains(r.out, "abcdef0123456789") {
		t.Fatal("list --json prints the token")
	}
}

func TestServersAddBadInput(t *testing.T) {
	c := newCLI(t)
	c.env["EMPTY"] = ""
	c.env["T"] = "abcdef0123456789"
	c.ok("servers", "add", "docs", "https://mcp.example.com/mcp")
	before := c.ok("servers", "list", "--json").out

	for _, tc := range []struct {
		name string
		code int
		want string
		args []string
	}{
		{"remote http", exitFail, "server x: url: http:// is only allowed for loopback hosts", []string{"servers", "add", "x", "http://mcp.example.com/mcp"}},
		{"duplicate", exitFail, `a server with id "docs" exists already`, []string{"servers", "add", "docs", "https://other.example.com/mcp"}},
		{"bad id", exitFail, `id: "Docs" contains upper-case 'D'`, []string{"servers", "add", "Docs", "https://mcp.example.com/mcp"}},
		{"fragment", exitFail, "url: must not contain a fragment", []string{"servers", "add", "y", "https://mcp.example.com/mcp#x"}},
		{"unset env", exitFail, "environment variable NOPE is not set", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--bearer-env", "NOPE"}},
		{"empty env", exitFail, "environment variable EMPTY is empty", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--bearer-env", "EMPTY"}},
		{"no stdin token", exitFail, "stdin gave no token", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--bearer-stdin"}},
		{"oauth and bearer", exitUsage, "exclude --auth oauth", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--oauth", "--bearer-env", "T"}},
		{"client id without oauth", exitUsage, "add --auth oauth", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--client-id", "x"}},
		{"no bearer flag", exitUsage, "unknown flag: --bearer", []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--bearer", "secret"}},
		{"missing url", exitUsage, "usage: remotemcp servers add ID URL", []string{"servers", "add", "y"}},
		{"bad scope", exitFail, `auth.scopes[0]: "a b" contains a space`, []string{"servers", "add", "y", "https://mcp.example.com/mcp", "--oauth", "--scope", "a b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.fail(tc.code, tc.want, tc.args...)
			if after := c.ok("servers", "list", "--json").out; after != before {
				t.Fatal("the server list changed")
			}
		})
	}
	// The token given with "Bearer " is refused, not half-understood.
	c.env["PREFIXED"] = "Bearer abcdef"
	c.fail(exitFail, `auth.token: starts with "Bearer "`, "servers", "add", "y", "https://mcp.example.com/mcp", "--bearer-env", "PREFIXED")
}

func TestServersSetBearerRebind(t *testing.T) {
	c := newCLI(t)
	c.env["OLD"] = "old-token-0123456789"
	c.env["NEW"] = "new-token-9876543210"
	c.ok("servers", "add", "api", "https://api.example.com/mcp", "--bearer-env", "OLD")
	before := c.ok("servers", "list", "--json").out

	r := c.fail(exitFail, "re-supply the token", "servers", "set", "api", "--url", "https://other.example.com/mcp")
	if !strings.Contains(r.err, "--bearer-env") || !strings.Contains(r.err, "nothing was changed") {
		t.Fatalf("rebind error: %s", r)
	}
	if c.ok("servers", "list", "--json").out != before {
		t.Fatal("a refused URL change changed the server")
	}
	// The same host with another path is another resource too.
	c.fail(exitFail, "re-supply the token", "servers", "set", "api", "--url", "https://api.example.com/v2/mcp")

	r = c.ok("servers", "set", "api", "--url", "https://other.example.com/mcp", "--bearer-env", "NEW")
	if !strings.Contains(r.out, "updated api: url, bearer token") {
		t.Fatalf("set with the token: %s", r)
	}
	r = c.ok("servers", "show", "api", "--json")
	if !strings.Contains(r.out, `"url": "https://other.example.com/mcp"`) || !strings.Contains(r.out, `"hasToken": true`) {
		t.Fatalf("show after rebind:\n%s", r.out)
	}
	// A URL change that keeps the resource needs no token.
	c.ok("servers", "set", "api", "--url", "https://OTHER.example.com:443/mcp", "--name", "API")

	// --bearer-stdin on set; it also switches an auth-less server to bearer.
	c.ok("servers", "add", "plain", "https://plain.example.com/mcp")
	if r = c.run("stdin-token-abcdef\n", "servers", "set", "plain", "--bearer-stdin"); r.code != 0 {
		t.Fatalf("set --bearer-stdin: %s", r)
	}
	if r = c.ok("servers", "show", "plain"); !strings.Contains(r.out, "bearer") || !strings.Contains(r.out, "(stored sealed)") {
		t.Fatalf("show plain:\n%s", r.out)
	}
	for _, tok := range []string{"old-token-0123456789", "new-token-9876543210", "stdin-token-abcdef"} {
		if c.dbContains(tok) {
			t.Errorf("token %q is readable in the database file", tok)
		}
	}
}

// claudeConfig is a Claude Code config with one remote server using a
// bearer token from the environment, one local stdio server and one
// legacy SSE server.
const claudeConfig = `{
  "mcpServers": {
    "Team Docs": {
      "type": "http",
      "url": "%s",
      "headers": {"Authorization": "Bearer ${TOKEN}"}
    },
    "filesystem": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
    "legacy": {"type": "sse", "url": "https://legacy.example.com/sse"}
  }
}`

func TestServersImportClaudeCode(t *testing.T) {
	c := newCLI(t)
	const token = "imported-secret-token-5f3a9c"
	c.env["TOKEN"] = token
	file := writeFile(t, "claude.json", strings.Replace(claudeConfig, "%s", "https://docs.example.com/mcp", 1))

	r := c.ok("servers", "import", file)
	for _, want := range []string{
		"added team-docs https://docs.example.com/mcp (auth bearer)\n",
		"skipped filesystem: local stdio servers are out of scope",
		"skipped legacy: legacy SSE transport is not supported",
		"granted https://docs.example.com\n",
	} {
		if !strings.Contains(r.out, want) {
			t.Fatalf("import stdout lacks %q: %s", want, r)
		}
	}
	if !strings.Contains(r.err, "1 added, 0 updated, 0 unchanged, 0 conflicts, 2 skipped, 1 origin granted") {
		t.Fatalf("import summary: %s", r)
	}
	if c.dbContains(token) {
		t.Fatal("the imported bearer token is readable in the database file")
	}
	r = c.ok("servers", "show", "team-docs", "--json")
	if !strings.Contains(r.out, `"kind": "bearer"`) || !strings.Contains(r.out, `"hasToken": true`) || !strings.Contains(r.out, `"name": "Team Docs"`) {
		t.Fatalf("show imported:\n%s", r.out)
	}

	// Importing again changes nothing and succeeds.
	before := c.ok("servers", "list", "--json").out
	if r = c.ok("servers", "import", file); !strings.Contains(r.out, "unchanged team-docs https://docs.example.com/mcp") {
		t.Fatalf("re-import: %s", r)
	}
	if c.ok("servers", "list", "--json").out != before {
		t.Fatal("importing the same file again changed the servers")
	}

	// From stdin.
	c2 := newCLI(t)
	c2.env["TOKEN"] = token
	r = c2.run(strings.Replace(claudeConfig, "%s", "https://docs.example.com/mcp", 1), "servers", "import", "-")
	if r.code != 0 || !strings.HasPrefix(r.out, "added team-docs") {
		t.Fatalf("import -: %s", r)
	}
}

func TestServersImportBadInput(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "docs", "https://mcp.example.com/mcp")
	before := c.ok("servers", "list", "--json").out

	for _, tc := range []struct {
		name, doc, want string
	}{
		{"malformed JSON", `{"mcpServers": {"a": {"url": "https://a.example.com/mcp"},}`, "line 1, column 60: the document ends in the middle of a JSON value"},
		{"garbage", `mcpServers: a`, "line 1, column 1: invalid JSON"},
		{"not a config", `{"foo": 1}`, "no MCP servers found"},
		{"remote http", `{"mcpServers": {"x": {"type": "http", "url": "http://mcp.example.com/mcp"}}}`, "skipped x: server x: url: http:// is only allowed for loopback hosts"},
		{"duplicate id", `{"mcpServers": {"docs": {"type": "http", "url": "https://other.example.com/mcp"}}}`, `conflict docs: `},
		{"wrong field type", `{"mcpServers": {"y": {"type": "http", "url": "https://y.example.com/mcp", "enabled": "yes"}}}`, "skipped y: enabled must be true or false, not a string"},
		{"own format, wrong field type", `[{"id": "z", "url": "https://z.example.com/mcp", "enabled": "yes"}]`, "server z: enabled: must be true or false, not a string (line 1, column 61)"},
		{"own format, duplicate", `{"servers": [{"id": "docs", "url": "https://docs2.example.com/mcp"}]}`, `conflict docs: `},
		{"unset variable", `{"mcpServers": {"v": {"url": "https://v.example.com/mcp", "headers": {"Authorization": "Bearer ${NOT_SET}"}}}}`, "environment variable NOT_SET is not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := writeFile(t, "config.json", tc.doc)
			r := c.run("", "servers", "import", file)
			if r.code == 0 {
				t.Fatalf("import succeeded: %s", r)
			}
			if !strings.Contains(r.out+r.err, tc.want) {
				t.Fatalf("output lacks %q: %s", tc.want, r)
			}
			if c.ok("servers", "list", "--json").out != before {
				t.Fatal("the server list changed")
			}
		})
	}
	c.fail(exitFail, "read /nonexistent/x.json", "servers", "import", "/nonexistent/x.json")

	// A mixed import adds the good entry and reports the others; the
	// conflict fails the command until --update replaces it.
	file := writeFile(t, "mixed.json", `{"mcpServers": {
		"good": {"type": "http", "url": "https://good.example.com/mcp"},
		"docs": {"type": "http", "url": "https://docs.example.com/mcp"},
		"bad":  {"type": "http", "url": "https://bad.example.com/mcp", "enabled": "yes"}}}`)
	r := c.fail(exitFail, "--update", "servers", "import", file)
	for _, want := range []string{"added good https://good.example.com/mcp", "conflict docs: ", "skipped bad: enabled must be true or false"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("mixed import lacks %q:\n%s", want, r.out)
		}
	}
	r = c.ok("servers", "import", file, "--update")
	for _, want := range []string{"unchanged good https://good.example.com/mcp", "updated docs https://docs.example.com/mcp"} {
		if !strings.Contains(r.out, want) {
			t.Errorf("import --update lacks %q:\n%s", want, r.out)
		}
	}
}

func TestServersImportOwnFormat(t *testing.T) {
	c := newCLI(t)
	file := writeFile(t, "servers.json", `{"servers": [
		{"id": "one", "url": "https://one.example.com/mcp", "connectOnStartup": false},
		{"id": "two", "name": "Two", "url": "https://two.example.com/mcp", "auth": {"kind": "oauth", "scopes": ["read"]}}
	]}`)
	r := c.ok("servers", "import", file)
	if !strings.HasPrefix(r.out, "added one https://one.example.com/mcp (auth none)\nadded two https://two.example.com/mcp (auth oauth)\n") {
		t.Fatalf("import: %s", r)
	}
	r = c.ok("servers", "list", "--json")
	var rows []localapi.Server
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].ConnectOnStartup || rows[1].Auth.Kind != "oauth" || rows[1].Name != "Two" {
		t.Fatalf("rows = %+v", rows)
	}
}

func TestServersEmptyDataDirAndEnvHome(t *testing.T) {
	c := newCLI(t)
	r := c.ok("servers", "list")
	if r.out != "" || !strings.Contains(r.err, "no servers configured") {
		t.Fatalf("empty list: %s", r)
	}
	// $REMOTEMCP_HOME from the injected environment picks the directory.
	home := t.TempDir()
	var out, errb strings.Builder
	env := func(k string) (string, bool) {
		if k == "REMOTEMCP_HOME" {
			return home, true
		}
		return "", false
	}
	code := run(t.Context(), []string{"servers", "add", "h", "https://h.example.com/mcp"}, Streams{In: strings.NewReader(""), Out: &out, Err: &errb}, env)
	if code != 0 {
		t.Fatalf("add with REMOTEMCP_HOME: %s", errb.String())
	}
	c.dir = home
	if r := c.ok("servers", "list"); !strings.Contains(r.out, "h.example.com") {
		t.Fatalf("server not in $REMOTEMCP_HOME: %s", r)
	}
}

// Issue #10: `servers set --limit` changes one limit by name, shows it,
// resets it with "default", and refuses a bad name or value, saying what
// to write.
func TestServersSetLimit(t *testing.T) {
	c := newCLI(t)
	c.ok("servers", "add", "big", "http://127.0.0.1:9/mcp", "--lazy")
	if r := c.ok("servers", "set", "big", "--limit", "maxMessageBytes=32MiB", "--limit", "listTimeout=2m"); !strings.Contains(r.out, "updated big: limits") {
		t.Fatalf("set: %s", r)
	}
	if r := c.ok("servers", "show", "big"); !strings.Contains(r.out, "maxMessageBytes=32MiB, listTimeout=2m0s") {
		t.Fatalf("show: %s", r)
	}
	c.fail(2, "write NAME=VALUE", "servers", "set", "big", "--limit", "maxMessageBytes")
	c.fail(exitUsage, `did you mean "maxMessageBytes"`, "servers", "set", "big", "--limit", "maxMesageBytes=1")
	c.fail(exitUsage, "not a size such as 16MiB", "servers", "set", "big", "--limit", "maxMessageBytes=lots")
	c.ok("servers", "set", "big", "--limit", "maxMessageBytes=default")
	if r := c.ok("servers", "show", "big"); !strings.Contains(r.out, "limits:") || strings.Contains(r.out, "maxMessageBytes") {
		t.Fatalf("after the reset: %s", r)
	}
}
