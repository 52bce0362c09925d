package main

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/remotemcp/remotemcp/internal/testkit"
	"github.com/remotemcp/remotemcp/internal/testserver/fixture"
)

// The exact bytes of the fixture's schema tool reach `tools --json`.
func TestToolsJSONSchemaBytes(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	r := c.ok("tools", "--json")
	tools := toolsJSON(t, r.out)
	schema := tools["mcp__fx__schema"]
	if schema == nil {
		t.Fatalf("no mcp__fx__schema in\n%s", r.out)
	}
	if got := string(schema["inputSchema"]); got != fixture.SchemaToolInputSchema {
		t.Fatalf("inputSchema bytes changed:\n got %s\nwant %s", got, fixture.SchemaToolInputSchema)
	}
	if !strings.Contains(r.out, `"inputSchema":`+fixture.SchemaToolInputSchema+`,`) {
		t.Fatalf("the schema is not on stdout verbatim:\n%s", r.out)
	}
	for field, want := range map[string]string{
		"name": `"mcp__fx__schema"`, "serverId": `"fx"`, "toolName": `"schema"`, "effects": `"write"`,
		"retry": `"never"`, "description": `"Has a complex input schema; returns its raw arguments."`,
	} {
		if got := string(schema[field]); got != want {
			t.Errorf("%s = %s, want %s", field, got, want)
		}
	}
}

// Every call is approved; without a terminal only --yes approves, and a
// refused call says nothing was sent.
func TestCallNeedsApproval(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	args := []string{"call", "mcp__fx__echo", `{"text":"x"}`}

	r := c.fail(exitFail, "stdin is not a terminal", args...)
	if !strings.Contains(r.err, "--yes") || !strings.Contains(r.err, "nothing was sent") {
		t.Fatalf("refusal without a terminal: %s", r)
	}
	if r = c.runWith(runOpts{stdin: `{"text":"x"}`, terminal: true}, "call", "mcp__fx__echo", "-"); r.code != exitFail || !strings.Contains(r.err, "stdin carried the arguments") {
		t.Fatalf("arguments from stdin without --yes: %s", r)
	}
	if n := srv.TotalExecutions(); n != 0 {
		t.Fatalf("a refused call ran %d times", n)
	}

	if r = c.ok(append(args, "--yes")...); r.out != "x\n" {
		t.Fatalf("call --yes: %s", r)
	}
	if n := srv.Executions("echo"); n != 1 {
		t.Fatalf("call --yes ran echo %d times, want 1", n)
	}

	// On a terminal: the question shows server, tool, description and
	// arguments; only "y" runs the call.
	for _, answer := range []string{"n\n", "", "maybe\n"} {
		r = c.runWith(runOpts{stdin: answer, terminal: true}, args...)
		if r.code != exitFail || !strings.Contains(r.err, `Allow mcp__fx__echo to run with {"text":"x"}? [y/N]`) ||
			!strings.Contains(r.err, "server:      fx") || !strings.Contains(r.err, "tool:        echo") ||
			!strings.Contains(r.err, "description: Returns its text argument.") || !strings.Contains(r.err, `arguments:   {"text":"x"}`) ||
			!strings.Contains(r.err, "remotemcp: denied (nothing was sent): ") || !strings.Contains(r.err, "nothing was sent") || r.out != "" {
			t.Fatalf("answer %q: %s", answer, r)
		}
	}
	if n := srv.Executions("echo"); n != 1 {
		t.Fatalf("a denied call ran: %d executions", n)
	}
	if r = c.runWith(runOpts{stdin: "y\n", terminal: true}, args...); r.code != 0 || r.out != "x\n" {
		t.Fatalf("approved on the terminal: %s", r)
	}
	if n := srv.Executions("echo"); n != 2 {
		t.Fatalf("echo ran %d times, want 2", n)
	}
}

// readOnlyServer is a real MCP server on loopback whose one tool claims to
// be read-only (the fixture has no annotated tool).
type readOnlyServer struct {
	url   string
	execs atomic.Int64
}

func startReadOnlyServer(t *testing.T) *readOnlyServer {
	t.Helper()
	ro := &readOnlyServer{}
	s := mcp.NewServer(&mcp.Implementation{Name: "readonly", Version: "v0"}, nil)
	notDestructive := false
	s.AddTool(&mcp.Tool{
		Name: "peek", Description: "Only reads, it says.",
		InputSchema: json.RawMessage(`{"type":"object"}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &notDestructive},
	}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ro.execs.Add(1)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "peeked"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(func() {
		hs.CloseClientConnections()
		hs.Close()
	})
	ro.url = hs.URL + "/mcp"
	return ro
}

// readOnlyHint is shown, never trusted: the call still needs approval.
func TestReadOnlyHintStillNeedsApproval(t *testing.T) {
	ro := startReadOnlyServer(t)
	c := newCLI(t)
	c.ok("servers", "add", "ro", ro.url)

	tools := toolsJSON(t, c.ok("tools", "--json").out)
	peek := tools["mcp__ro__peek"]
	if string(peek["effects"]) != `"write"` || string(peek["retry"]) != `"never"` ||
		!strings.Contains(string(peek["annotations"]), `"readOnlyHint":true`) {
		t.Fatalf("tools --json for a read-only tool: %v", peek)
	}

	c.fail(exitFail, "stdin is not a terminal", "call", "mcp__ro__peek")
	r := c.runWith(runOpts{stdin: "n\n", terminal: true}, "call", "mcp__ro__peek")
	if r.code != exitFail || !strings.Contains(r.err, "annotations: readOnlyHint, destructiveHint=false, idempotentHint") ||
		!strings.Contains(r.err, "Allow mcp__ro__peek to run with {}? [y/N]") {
		t.Fatalf("denied read-only call: %s", r)
	}
	if n := ro.execs.Load(); n != 0 {
		t.Fatalf("a read-only tool ran without approval (%d times)", n)
	}
	if r = c.runWith(runOpts{stdin: "y\n", terminal: true}, "call", "mcp__ro__peek"); r.code != 0 || r.out != "peeked\n" {
		t.Fatalf("approved read-only call: %s", r)
	}
	if n := ro.execs.Load(); n != 1 {
		t.Fatalf("peek ran %d times, want 1", n)
	}
}

// --timeout bounds the call; a call without an answer exits 4; progress
// goes to stderr as "progress N/TOTAL: message".
func TestCallTimeout(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())

	// The call would take 60 s; ending within 30 s proves the 300ms
	// timeout, with room for a loaded machine.
	start := time.Now()
	r := c.fail(exitNoAnswer, "remotemcp: timeout: ", "call", "mcp__fx__slow", `{"ms": 60000}`, "--yes", "--timeout", "300ms")
	if d := time.Since(start); d > 30*time.Second {
		t.Fatalf("a 300ms timeout took %s (the call takes 60 s)", d)
	}
	if !strings.Contains(r.err, "timed out after 300ms") || !strings.Contains(r.err, "what to do: if the tool needs longer, give --timeout") || r.out != "" {
		t.Fatalf("timeout: %s", r)
	}
	testkit.WaitFor(t, "the server to be told to stop", func() bool { return srv.Cancelled("slow") == 1 })

	r = c.ok("call", "mcp__fx__slow", `{"ms": 400}`, "--yes", "--timeout", "2m")
	if r.out != "slept 400ms\n" || !strings.Contains(r.err, "\nprogress ") || !strings.Contains(r.err, "/400: slept ") {
		t.Fatalf("slow call within --timeout: %s", r)
	}

	// The server's own limit applies too.
	c.ok("servers", "set", "fx", "--tool-timeout", "200ms")
	c.fail(exitNoAnswer, "timed out", "call", "mcp__fx__slow", `{"ms": 60000, "quiet": true}`, "--yes")
}

// A 5 MB result is cut to the budget, with the marker.
func TestCallBigResultIsCut(t *testing.T) {
	srv := testkit.StartFixture(t, fixture.Options{})
	c := newCLI(t)
	c.ok("servers", "add", "fx", srv.URL())
	r := c.ok("call", "mcp__fx__big", `{"bytes": 5000000}`, "--yes")
	if r.out != strings.Repeat("x", 100000)+"\n" {
		t.Fatalf("big result: %d bytes on stdout", len(r.out))
	}
	if !strings.Contains(r.err, "[remotemcp: output truncated: showing the first 100000 of 5000000 characters]") {
		t.Fatalf("no truncation marker: %s", r.err)
	}
	r = c.ok("call", "mcp__fx__big", `{"bytes": 5000000}`, "--yes", "--json")
	var res struct {
		Truncated     bool `json:"truncated"`
		OriginalChars int  `json:"originalChars"`
		ShownChars    int  `json:"shownChars"`
		Content       []struct {
			Truncated *struct{ ShownChars, OriginalChars int } `json:"truncated"`
		} `json:"content"`
	}
	if err := json.Unmarshal([]byte(r.out), &res); err != nil {
		t.Fatal(err)
	}
	if !res.Truncated || res.OriginalChars != 5000000 || res.ShownChars != 100000 || len(res.Content) != 1 || res.Content[0].Truncated == nil {
		t.Fatalf("big --json: %+v", res)
	}
}
