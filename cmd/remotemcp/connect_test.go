package main

import (
	"bytes"
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
	"github.com/remotemcp/remotemcp/localapi"
)

// deadURL is a loopback MCP URL where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/mcp"
}

func TestConnectToolsCall(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")

	r := c.ok("connect", "fx")
	if !strings.Contains(r.err, "connecting to fx…") {
		t.Fatalf("connect progress: %s", r)
	}
	if !strings.HasPrefix(r.out, "ready: 7 tools, 1 prompt, 2 resources") {
		t.Fatalf("connect: %s", r)
	}

	// tools, table and JSON.
	r = c.ok("tools")
	if !strings.Contains(r.out, "NAME") || !strings.Contains(r.out, "mcp__fx__echo    Returns its text argument.") {
		t.Fatalf("tools:\n%s", r.out)
	}
	tools := toolsJSON(t, c.ok("tools", "--server", "fx", "--json").out)
	if len(tools) != 7 {
		t.Fatalf("tools --json has %d tools, want 7", len(tools))
	}
	var compact bytes.Buffer
	json.Compact(&compact, tools["mcp__fx__echo"]["inputSchema"])
	if compact.String() != `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"]}` {
		t.Fatalf("echo inputSchema = %s", tools["mcp__fx__echo"]["inputSchema"])
	}

	// call, both name forms.
	if r = c.ok("call", "fx/echo", `{"text": "hello, world"}`, "--yes"); r.out != "hello, world\n" {
		t.Fatalf("call echo: %s", r)
	}
	if r = c.ok("call", "mcp__fx__echo", `{"text": "via mcp name"}`, "--yes"); r.out != "via mcp name\n" {
		t.Fatalf("call mcp__fx__echo: %s", r)
	}
	if r = c.run(`{"text": "from stdin"}`, "call", "fx/echo", "-", "-y"); r.code != 0 || r.out != "from stdin\n" {
		t.Fatalf("call with stdin args: %s", r)
	}
	// Structured content is printed as JSON unless a text block already
	// says the same.
	if r = c.ok("call", "fx/add", `{"a": 1, "b": 2}`, "--yes"); r.out != "3\n{\n  \"sum\": 3\n}\n" {
		t.Fatalf("call add: %q", r.out)
	}
	r = c.ok("call", "fx/add", `{"a": 1, "b": 2}`, "--json", "--yes")
	var res struct {
		Tool    string `json:"tool"`
		Outcome string `json:"outcome"`
		Content []struct {
			Provenance struct {
				Server, Kind, Name string
			} `json:"provenance"`
			Text string `json:"text"`
		} `json:"content"`
		StructuredContent map[string]float64 `json:"structuredContent"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Tool != "mcp__fx__add" || res.Outcome != "ok" || len(res.Content) != 1 || res.Content[0].Text != "3" || res.StructuredContent["sum"] != 3 ||
		res.Content[0].Provenance.Server != "fx" || res.Content[0].Provenance.Kind != "tool" || res.Content[0].Provenance.Name != "add" {
		t.Fatalf("call --json: %s", r.out)
	}
	// isError is an answer: exit 0, with a note.
	r = c.ok("call", "fx/fail", "--yes")
	if r.out != "fail: this tool always fails\n" || !strings.Contains(r.err, "reported an error (isError)") {
		t.Fatalf("call fail: %s", r)
	}
	if r = c.ok("call", "fx/fail", "--json", "--yes"); !strings.Contains(r.out, `"isError": true`) {
		t.Fatalf("call fail --json: %s", r)
	}
	if n := srv.Executions("echo"); n != 3 {
		t.Fatalf("echo ran %d times, want 3", n)
	}

	// A switched-off tool is refused before anything is sent, and named
	// on stderr by tools.
	c.ok("servers", "set", "fx", "--disable-tool", "echo")
	c.fail(exitFail, "nothing was sent", "call", "fx/echo", `{"text": "x"}`, "--yes")
	c.fail(exitFail, "nothing was sent", "call", "mcp__fx__echo", `{"text": "x"}`, "--yes")
	if r = c.ok("tools", "--server", "fx"); strings.Contains(r.out, "mcp__fx__echo") || !strings.Contains(r.err, "switched off on fx: echo") {
		t.Fatalf("tools with a disabled tool: %s", r)
	}
	if tools = toolsJSON(t, c.ok("tools", "--json").out); len(tools) != 6 || tools["mcp__fx__echo"] != nil {
		t.Fatalf("tools --json with a disabled tool: %v", tools)
	}
	if n := srv.Executions("echo"); n != 3 {
		t.Fatalf("a disabled tool ran: %d executions", n)
	}

	if r = c.ok("disconnect", "fx"); r.out != "disconnected fx\n" {
		t.Fatalf("disconnect: %s", r)
	}
}

func TestCallErrors(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	c.ok("servers", "add", "down", deadURL(t))
	c.ok("servers", "add", "off", srv.URL(), "--disabled")

	c.fail(exitFail, `no server "nope"`, "call", "nope/echo", `{"text": "x"}`, "--yes")
	c.fail(exitFail, `no tool named "mcp__nope__echo"`, "call", "mcp__nope__echo", "--yes")
	c.fail(exitFail, `no tool named "mcp__fx__nosuch"`, "call", "fx/nosuch", "--yes")
	c.fail(exitFail, `no tool named "mcp__fx__nosuch"`, "call", "mcp__fx__nosuch", "--yes")
	c.fail(exitFail, `servers enable off`, "call", "off/echo", "--yes")
	c.fail(exitFail, `servers enable off`, "call", "mcp__off__echo", "--yes")
	c.fail(exitUsage, "ARGS_JSON must be one JSON object", "call", "fx/echo", `[1]`)
	c.fail(exitUsage, "ARGS_JSON must be one JSON object", "call", "fx/echo", `{"a":1} {}`)
	c.fail(exitUsage, "must be mcp__SERVER__TOOL or SERVER/TOOL", "call", "echo")
	c.fail(exitUsage, "--timeout must be positive", "call", "fx/echo", "--timeout", "-1s")

	r := c.fail(exitFail, "server down: error (network)", "call", "down/echo", `{"text": "x"}`, "--yes")
	if !strings.Contains(r.err, "what to do: check that http://127.0.0.1:") {
		t.Fatalf("no hint: %s", r)
	}
	if srv.TotalExecutions() != 0 {
		t.Fatal("a failed call reached the fixture")
	}
}

func TestConnectErrors(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "down", deadURL(t))
	c.ok("servers", "add", "missing", strings.TrimSuffix(srv.URL(), "/mcp")+"/nothing-here")

	r := c.fail(exitFail, "network", "connect", "down")
	if !strings.Contains(r.err, "connecting to down…") || !strings.Contains(r.err, "what to do:") {
		t.Fatalf("connect down: %s", r)
	}
	// A 404 without a session id is a wrong endpoint path, typed as HTTP.
	c.fail(exitFail, "no MCP endpoint at this URL", "connect", "missing")
	// An oauth server that does not ask for a token simply connects.
	c.ok("servers", "add", "oa", srv.URL(), "--oauth")
	c.ok("connect", "oa")
	c.fail(exitFail, `no server "nope"`, "connect", "nope")
	c.fail(exitFail, `no server "nope"`, "disconnect", "nope")
}

// bearerAuth accepts only "Bearer token".
func bearerAuth(token string) func(http.ResponseWriter, *http.Request) bool {
	return func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return false
		}
		return true
	}
}

func TestImportedBearerTokenIsUsed(t *testing.T) {
	const token = "fixture-token-c0ffee-42"
	srv := testkit.StartFixture(t, fixture.Options{Authorize: bearerAuth(token)})
	c := newCLI(t)
	c.env["TOKEN"] = token
	c.ok("servers", "import", writeFile(t, "claude.json", strings.Replace(claudeConfig, "%s", srv.URL(), 1)))
	if c.dbContains(token) {
		t.Fatal("token readable in the database file")
	}

	r := c.ok("--verbose", "call", "team-docs/echo", `{"text": "authorized"}`, "--yes")
	if r.out != "authorized\n" {
		t.Fatalf("call with the imported token: %s", r)
	}
	if strings.Contains(r.err, token) {
		t.Fatalf("--verbose logged the token:\n%s", r.err)
	}

	// A wrong token is attributed to auth, with what to do.
	c.env["WRONG"] = "wrong-token-123456"
	c.ok("servers", "set", "team-docs", "--bearer-env", "WRONG")
	r = c.fail(exitFail, "error (auth", "connect", "team-docs")
	if !strings.Contains(r.err, "--bearer-env") || strings.Contains(r.err, "wrong-token-123456") {
		t.Fatalf("auth failure: %s", r)
	}
}

func TestStatus(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL(), "--lazy")
	c.ok("servers", "add", "down", deadURL(t))
	c.ok("servers", "add", "off", srv.URL(), "--disabled")

	r := c.ok("status", "--json", "--timeout", "5s")
	var rows []localapi.Server
	if err := json.Unmarshal([]byte(r.out), &rows); err != nil {
		t.Fatalf("%v\n%s", err, r.out)
	}
	if len(rows) != 3 {
		t.Fatalf("status rows: %s", r.out)
	}
	byID := map[string]localapi.Server{}
	for _, row := range rows {
		byID[row.ID] = row
	}
	if fx := byID["fx"]; fx.State != "ready" || fx.ToolCount != 7 || fx.Reason != nil {
		t.Errorf("fx = %+v, want ready with 7 tools", fx)
	}
	if down := byID["down"]; down.State != "error" || down.Reason == nil || down.Reason.Class != "network" || down.Reason.Message == "" {
		t.Errorf("down = %+v, want error with a network reason", down)
	}
	if off := byID["off"]; off.State != "disconnected" || off.Enabled {
		t.Errorf("off = %+v, want disconnected and disabled", off)
	}

	r = c.ok("status", "--timeout", "5s")
	for _, want := range []string{"REASON", "ready", "error", "disabled", "network: "} {
		if !strings.Contains(r.out, want) {
			t.Errorf("status table lacks %q:\n%s", want, r.out)
		}
	}
}

func TestUsageMessages(t *testing.T) {
	c := newCLI(t)
	c.fail(exitUsage, "unknown flag: --nope", "servers", "list", "--nope")
	c.fail(exitUsage, "usage: remotemcp connect ID", "connect")
	c.fail(exitUsage, `unknown command "frobnicate"`, "frobnicate")
	c.fail(exitUsage, `unknown command "frobnicate" for "remotemcp servers"`, "servers", "frobnicate")
}

// Without a daemon, "logs" connects and shows that connection's
// exchanges, including where it failed; no secret is printed.
func TestLogsInProcess(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{Authorize: bearerAuth("right-token")})
	c := newCLI(t)
	c.env["TOK"] = "wrong-token-value"
	c.ok("servers", "add", "fx", srv.URL(), "--bearer-env", "TOK")
	r := c.ok("logs", "fx")
	if !strings.Contains(r.out, "initialize") || !strings.Contains(r.out, "401") {
		t.Fatalf("logs of a refused connect: %s", r)
	}
	if strings.Contains(r.out+r.err, "wrong-token-value") {
		t.Fatalf("the token is in the log output: %s", r)
	}
}
